"""LLaVA-OneVision (llava-hf/llava-onevision-qwen2-0.5b-ov-hf, -7b-ov-hf): SigLIP tiles of a Qwen2 LM.

Images go to the processor as they are: its anyres tiling (image_grid_pinpoints, "anyres_max_9") is how
lmms-eval's llava_onevision wrapper sizes them too. The image features' count depends on the image's
size, so pixel_values come with image_sizes. No position state, no per-token inputs beside the ids.
Tokenizer: Qwen2-Instruct's + <image>, <video> (mai.tokenizer_sources); template with images first as
`<image>\\n` and no default system turn (mai/assets/llava-onevision).
"""
from __future__ import annotations

import functools
import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register

TEMPLATE = ASSETS / "llava-onevision" / "chat_template.json"  # verbatim; sources in mai/assets/README.md


def _shape(hidden, layers, heads, kv_heads, inter, vocab, v_hidden, v_layers, v_heads, v_inter, image_size, patch,
           pinpoints, init=0.02, tie=False):
    return dict(
        text_config=dict(model_type="qwen2", vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, intermediate_size=inter,
                         max_position_embeddings=32768, rope_theta=1_000_000.0, initializer_range=init,
                         tie_word_embeddings=tie, rms_norm_eps=1e-6, bos_token_id=151643, eos_token_id=151645),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=v_hidden, num_hidden_layers=v_layers,
                           num_attention_heads=v_heads, intermediate_size=v_inter, image_size=image_size,
                           patch_size=patch, vision_use_head=False),
        image_token_index=151646, video_token_index=151647, vision_feature_select_strategy="full",
        vision_feature_layer=-1, image_grid_pinpoints=pinpoints, vision_aspect_ratio="anyres_max_9",
        initializer_range=init)


TINY_PINPOINTS = [[32, 32], [32, 64], [64, 32], [64, 64]]
# The released grid: 384 x 384 tiles up to 6 x 6 (transformers 5.24 LlavaOnevisionConfig's and
# LlavaOnevisionImageProcessor's default image_grid_pinpoints, which the converter keeps).
RELEASED_PINPOINTS = [[384 * i, 384 * j] for i in range(1, 7) for j in range(1, 7)]
# SigLIP-So400m at 384 less its last layer (26 layers), 14-pixel patches: 729 tokens a tile.
SIGLIP_384 = (1152, 26, 16, 4304, 384, 14, RELEASED_PINPOINTS)


@functools.cache
def _processor_class():
    from transformers.models.llava_onevision.processing_llava_onevision import LlavaOnevisionProcessor

    class ImageTextLlavaOnevisionProcessor(LlavaOnevisionProcessor):
        # No video processor (it needs torchvision); images and text are unchanged. The other arguments
        # are named here: save_pretrained writes the ones this signature names.
        def __init__(self, image_processor=None, tokenizer=None, num_image_tokens=None,
                     vision_feature_select_strategy=None, chat_template=None, vision_aspect_ratio="anyres_max_9",
                     **kwargs):
            super().__init__(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                             num_image_tokens=num_image_tokens,
                             vision_feature_select_strategy=vision_feature_select_strategy,
                             chat_template=chat_template, vision_aspect_ratio=vision_aspect_ratio, **kwargs)

    return ImageTextLlavaOnevisionProcessor


def offline_processor(min_pixels=None, max_pixels=None, thinking=False, image_size=32, patch=8,
                      pinpoints=TINY_PINPOINTS):
    from transformers.models.llava_onevision.image_processing_pil_llava_onevision import (
        LlavaOnevisionImageProcessorPil)

    tokenizer = tokenizer_sources.family_tokenizer("llava_onevision")
    template = json.loads(TEMPLATE.read_text())["chat_template"]
    image_processor = LlavaOnevisionImageProcessorPil(size={"height": image_size, "width": image_size},
                                                      image_grid_pinpoints=pinpoints, image_mean=[0.5] * 3,
                                                      image_std=[0.5] * 3)
    return _processor_class()(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                              num_image_tokens=(image_size // patch) ** 2, vision_feature_select_strategy="full",
                              vision_aspect_ratio="anyres_max_9")



LLAVA_ONEVISION = register(Family(
    name="llava_onevision", model_types=("llava_onevision",), model_class="LlavaOnevisionForConditionalGeneration",
    config_class="LlavaOnevisionConfig",
    architectures={
        # SigLIP on 32 x 32 tiles in 8-pixel patches (16 tokens a tile), anyres up to 2 x 2 tiles.
        "tiny-llava-onevision": _shape(64, 4, 4, 2, 128, 151936, 64, 2, 4, 128, 32, 8, TINY_PINPOINTS, init=0.5),
        # llava-hf/llava-onevision-qwen2-0.5b-ov-hf and -7b-ov-hf as transformers' converter builds them
        # (src/transformers/models/llava_onevision/convert_llava_onevision_weights_to_hf.py @01080c62): the
        # text config is Qwen2-0.5B-Instruct's / Qwen2-7B-Instruct's unchanged, its vocabulary grown by 2
        # (<image>, <video>) and padded to a multiple of 64 (151936 -> 152000, 152064 -> 152128); SigLIP
        # 1152, 26 layers ("drop the last layer"), 16 heads, 4304, 384 in 14-pixel patches, no head; 729
        # tokens a tile; "full" features; image newline. Qwen2 shapes from public copies of those configs
        # (0.5B: 896 x 24, 14/2 heads, 4864, tied; 7B: 3584 x 28, 28/4 heads, 18944, untied); tying follows
        # the text config (LlavaOnevisionConfig, transformers 5.24). Counts built here: 893,675,552 and
        # 8,030,807,584, against the cards' 0.9B and 8.0B (no exact public tally found). Unverified: the
        # released config.json itself.
        "llava-onevision-0.5b": _shape(896, 24, 14, 2, 4864, 152000, *SIGLIP_384, tie=True),
        "llava-onevision-7b": _shape(3584, 28, 28, 4, 18944, 152128, *SIGLIP_384),
    },
    # The released processor: 384-pixel tiles in 14-pixel patches on the released grid.
    processor_kwargs={name: dict(image_size=384, patch=14, pinpoints=RELEASED_PINPOINTS)
                      for name in ("llava-onevision-0.5b", "llava-onevision-7b")},
    offline_processor=offline_processor, stop_strings=("<|im_end|>", "<|endoftext|>"), vision_tower="vision_tower",
    vision_inputs=("pixel_values", "image_sizes"), system_prompt=None,
    tokenizer_source="Qwen2-Instruct's + <image>, <video> (Qwen3's files; mai.tokenizer_sources)",
    image_text_processor=_processor_class,
    # vLLM 0.30's llava_onevision imports its llava and pixtral modules, and pixtral imports PixtralRotaryEmbedding,
    # which transformers 5.24 renamed (PixtralVisionRotaryEmbedding; vllm-project/vllm#56496): the architecture
    # fails vLLM's inspection, so vLLM cannot serve this family beside transformers 5.24.
    vllm=False,
))
