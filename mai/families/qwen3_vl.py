"""Qwen3-VL (Qwen/Qwen3-VL-*-Instruct and -Thinking): the paper's family.

Its shapes, offline processor and checkpoint writer live in mai.models (the repository's first family);
this file says what is particular to it: M-RoPE offsets on model.model.rope_deltas, mm_token_type_ids
(0 text, 1 image, 2 video) on every forward with images, the vision tower at model.model.visual, images
sized by qwen_vl_utils with factor 32 (16-pixel patches merged 2 x 2) as lmms-eval's wrapper does
(mai.images), and Thinking checkpoints told apart by their template opening <think>.
"""
from mai import models
from mai.families import Family, register

QWEN3_VL = register(Family(
    name="qwen3_vl", model_types=("qwen3_vl",), model_class="Qwen3VLForConditionalGeneration",
    config_class="Qwen3VLConfig", architectures=models.ARCHITECTURES,
    offline_processor=lambda min_pixels, max_pixels, thinking=False: models.offline_processor(
        min_pixels, max_pixels, thinking=thinking),
    stop_strings=("<|im_end|>", "<|endoftext|>"), vision_tower="visual", token_inputs=("mm_token_type_ids",),
    vision_inputs=("pixel_values", "image_grid_thw"), position_state=("rope_deltas",), resize_factor=32,
    # In the template's source the newlines are Jinja string escapes: a backslash and an n.
    thinking_marker="assistant\\n<think>\\n",
    own_writer=models.write_checkpoint,
))
