"""Qwen2 / Qwen2.5 text models (Qwen2ForCausalLM): the cpu-real preset's pair, Qwen2.5-Coder-0.5B/1.5B-Instruct.

Text-only like mai/families/text.py's families: content is one string, no vision tower, nothing but the
tokens follows the sequence, and no thinking switch (the Think prompt is MAI's own). The real checkpoints
come from mai.real_checkpoints (GGUF part packages, converted once) with their own tokenizer and template.
Random-weight shapes use Qwen2.5's tokenizer rebuilt offline (mai.tokenizer_sources "qwen2.5": Qwen3's BPE
with Qwen2.5's added tokens 151643-151664) and the released template shipped in mai/assets/qwen2.5-coder.

System prompt: none, so the released template writes its own default system turn ("You are Qwen, created
by Alibaba Cloud. You are a helpful assistant."), the turn the model was tuned to see and what
transformers' and lm-evaluation-harness's chat paths send when not told otherwise. lmms-eval's Qwen
wrappers send "You are a helpful assistant." because that is the Qwen-VL templates' own default; the
principle (the family's own default turn) is the same.
"""
from __future__ import annotations

import functools
import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register

# Qwen2.5-Coder-0.5B-Instruct's tokenizer.chat_template, verbatim (source in mai/assets/README.md).
TEMPLATE = "qwen2.5-coder"


@functools.cache
def _tokenizer():
    tokenizer = tokenizer_sources.load_tokenizer("qwen2.5")
    tokenizer.chat_template = json.loads((ASSETS / TEMPLATE / "chat_template.json").read_text())["chat_template"]
    return tokenizer


def offline_processor(min_pixels=None, max_pixels=None, thinking=False):
    del min_pixels, max_pixels, thinking  # no images, no thinking switch
    return _tokenizer()


def _shape(hidden, layers, heads, kv_heads, inter, tie, init=0.02, **extra):
    return dict(vocab_size=151936, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=kv_heads, intermediate_size=inter, tie_word_embeddings=tie,
                initializer_range=init, bos_token_id=151643, eos_token_id=151645, **extra)


def _released(hidden, layers, heads, kv_heads, inter, tie):
    """A released shape: values from the real GGUF's metadata (qwen2.*), Qwen2's config names."""
    return _shape(hidden, layers, heads, kv_heads, inter, tie, max_position_embeddings=32768, rms_norm_eps=1e-6,
                  rope_parameters=dict(rope_type="default", rope_theta=1_000_000.0))


QWEN2 = register(Family(
    name="qwen2", model_types=("qwen2",), model_class="Qwen2ForCausalLM", config_class="Qwen2Config",
    architectures={
        # Tiny shapes: head_dim 32 (hidden / heads) like the other families' (vLLM's CPU attention takes 32
        # to 512), the real vocabulary so that the real tokenizer fits, std 0.5 (mai/families/text.py says why).
        "tiny-qwen2": _shape(64, 4, 2, 1, 128, True, init=0.5, max_position_embeddings=32768),
        "tiny-qwen2-large": _shape(128, 6, 4, 2, 256, False, init=0.5, max_position_embeddings=32768),
        # Read from the real GGUFs' metadata (mai.real_checkpoints.REAL_PAIR, gguf 0.19.0): block_count,
        # embedding_length, head_count / head_count_kv, feed_forward_length, rope.freq_base 1e6,
        # layer_norm_rms_epsilon 1e-6, context_length 32768. Named "-shape": the spec without it is the
        # real checkpoint. Tied: see QWEN2_TIED below.
        "qwen2.5-coder-0.5b-shape": _released(896, 24, 14, 2, 4864, True),
        "qwen2.5-coder-1.5b-shape": _released(1536, 28, 12, 2, 8960, True),
    },
    offline_processor=offline_processor, stop_strings=("<|im_end|>", "<|endoftext|>"),
    vision_tower=None, vision_inputs=(), content_parts=False, system_prompt=None,
    tokenizer_source="Qwen2.5's (Qwen3's files with Qwen2.5's added tokens, mai.tokenizer_sources 'qwen2.5')",
))
