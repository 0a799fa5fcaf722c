"""Qwen2.5-VL (Qwen/Qwen2.5-VL-3B/7B-Instruct).

Like Qwen3-VL: M-RoPE offsets on model.model.rope_deltas that a continued stage must get back (without
them the second stage's positions restart and its logits differ, by 24.5 on a tiny model), the vision
tower at model.model.visual, mm_token_type_ids beside the tokens. Unlike it: 14-pixel patches merged
2 x 2, so qwen_vl_utils sizes its images with factor 28 (lmms-eval's qwen2_5_vl wrapper at 75571cfe
calls process_vision_info without image_patch_size; the default patch 14 gives 28), CLIP's mean and std,
and no Thinking checkpoints.
"""
from __future__ import annotations

import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register, without_video_processor
from mai.families.qwen3_vl import (IMAGE_TOKEN_ID, MAX_PIXELS, MIN_PIXELS, VIDEO_TOKEN_ID, VISION_END_ID,
                                   VISION_START_ID, VOCAB_SIZE)

TEMPLATE = ASSETS / "qwen2.5-vl" / "chat_template.json"  # verbatim; sources in mai/assets/README.md
CLIP_MEAN, CLIP_STD = [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]


def _shape(hidden, layers, heads, kv_heads, inter, tie, v_depth, v_hidden, v_inter, v_heads, mrope, fullatt,
           init=0.02, window=112, vocab=VOCAB_SIZE):
    return dict(
        text_config=dict(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, intermediate_size=inter,
                         max_position_embeddings=128000, rms_norm_eps=1e-6, tie_word_embeddings=tie,
                         initializer_range=init,
                         rope_parameters=dict(rope_type="default", rope_theta=1_000_000.0, mrope_section=list(mrope))),
        vision_config=dict(depth=v_depth, hidden_size=v_hidden, intermediate_size=v_inter, num_heads=v_heads,
                           out_hidden_size=hidden, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
                           window_size=window, fullatt_block_indexes=list(fullatt), initializer_range=init,
                           tokens_per_second=2),
        image_token_id=IMAGE_TOKEN_ID, video_token_id=VIDEO_TOKEN_ID,
        vision_start_token_id=VISION_START_ID, vision_end_token_id=VISION_END_ID,
        tie_word_embeddings=tie)


def _processor_class():
    from transformers.models.qwen2_5_vl.processing_qwen2_5_vl import Qwen2_5_VLProcessor

    return without_video_processor(Qwen2_5_VLProcessor)


def _tokenizer():
    return tokenizer_sources.family_tokenizer("qwen2_5_vl")


def offline_processor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, thinking=False):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    template = json.loads(TEMPLATE.read_text())["chat_template"]
    tokenizer = _tokenizer()
    tokenizer.chat_template = template
    image_processor = Qwen2VLImageProcessorPil(min_pixels=min_pixels, max_pixels=max_pixels, patch_size=14,
                                               temporal_patch_size=2, merge_size=2, image_mean=CLIP_MEAN,
                                               image_std=CLIP_STD)
    return _processor_class()(image_processor=image_processor, tokenizer=tokenizer, chat_template=template)



QWEN2_5_VL = register(Family(
    name="qwen2_5_vl", model_types=("qwen2_5_vl",), model_class="Qwen2_5_VLForConditionalGeneration",
    config_class="Qwen2_5_VLConfig",
    architectures={
        # Text head_dim 32 (128 / 4 heads), mrope 4/6/6 (sum = head_dim / 2); std 0.5 as tiny-small.
        "tiny-qwen2.5-vl": _shape(128, 4, 4, 2, 256, True, 2, 64, 128, 4, (4, 6, 6), (1,), init=0.5),
        # Qwen/Qwen2.5-VL-3B-Instruct and -7B-Instruct config.json, from public copies (a model-config
        # markdown of the 3B's; a printed 7B module tree; a 7B config in an engine's tests): text 2048 x 36,
        # 16/2 heads, 11008, vocabulary 151936, tied / 3584 x 28, 28/4 heads, 18944, vocabulary 152064,
        # untied; rope theta 1e6, mrope 16/24/24, 128000 positions; vision 1280 x 32 blocks, 16 heads, 3420,
        # 14-pixel patches merged 2 x 2, window 112 with full attention in blocks 7/15/23/31, 2 temporal
        # positions a second (transformers' default is 4); the 7B's also in public copies of its whole
        # config.json (a diffusion text-encoder loader, an engine's tests). Counts built
        # here: 3,754,622,976 and 8,292,166,656 = the counts public loaders of the checkpoints report
        # (tests/test_released_shapes.py). Unverified: the files themselves (no hub here).
        "qwen2.5-vl-3b": _shape(2048, 36, 16, 2, 11008, True, 32, 1280, 3420, 16, (16, 24, 24), (7, 15, 23, 31)),
        "qwen2.5-vl-7b": _shape(3584, 28, 28, 4, 18944, False, 32, 1280, 3420, 16, (16, 24, 24), (7, 15, 23, 31),
                                vocab=152064),
    },
    offline_processor=offline_processor, stop_strings=("<|im_end|>", "<|endoftext|>"), vision_tower="visual",
    token_inputs=("mm_token_type_ids",), vision_inputs=("pixel_values", "image_grid_thw"),
    position_state=("rope_deltas",), resize_factor=28, image_text_processor=_processor_class,
    tokenizer_source="Qwen2.5's (Qwen3's files less Qwen3's four added tokens; mai.tokenizer_sources)",
))
