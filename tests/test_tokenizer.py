"""Tests for the shipped offline Qwen3-VL-compatible tokenizer (mai/assets/tokenizer)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TOKENIZER_DIR = REPO_ROOT / "mai" / "assets" / "tokenizer"
BUILD_SCRIPT = REPO_ROOT / "scripts" / "build_tokenizer.py"

VOCAB_SIZE = 151936
SPECIAL_IDS = {
    "<|endoftext|>": 151643,
    "<|im_start|>": 151644,
    "<|im_end|>": 151645,
    "<|object_ref_start|>": 151646,
    "<|object_ref_end|>": 151647,
    "<|box_start|>": 151648,
    "<|box_end|>": 151649,
    "<|quad_start|>": 151650,
    "<|quad_end|>": 151651,
    "<|vision_start|>": 151652,
    "<|vision_end|>": 151653,
    "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655,
    "<|video_pad|>": 151656,
    "<tool_call>": 151657,
    "</tool_call>": 151658,
    "<|fim_prefix|>": 151659,
    "<|fim_middle|>": 151660,
    "<|fim_suffix|>": 151661,
    "<|fim_pad|>": 151662,
    "<|repo_name|>": 151663,
    "<|file_sep|>": 151664,
    "<tool_response>": 151665,
    "</tool_response>": 151666,
    "<think>": 151667,
    "</think>": 151668,
}
CONTROL_TOKENS = [t for t, i in SPECIAL_IDS.items() if i <= 151656]  # special=True in Qwen
TEXT_TOKENS = [t for t, i in SPECIAL_IDS.items() if i >= 151657]  # special=False in Qwen


def _load_build_module():
    spec = importlib.util.spec_from_file_location("build_tokenizer", BUILD_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(TOKENIZER_DIR))


def test_assets_present_and_small():
    names = {p.name for p in TOKENIZER_DIR.iterdir()}
    assert {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"} <= names
    total = sum(p.stat().st_size for p in TOKENIZER_DIR.iterdir())
    assert total < 6 * 1024 * 1024


def test_loads_fast_with_auto_and_fast_classes():
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    AutoTokenizer  # imported before timing: only the load itself is measured
    start = time.perf_counter()
    auto = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR))
    assert time.perf_counter() - start < 3.0
    fast = PreTrainedTokenizerFast.from_pretrained(str(TOKENIZER_DIR))
    assert len(auto) == len(fast) == VOCAB_SIZE


def test_config_values(tok):
    assert len(tok) == VOCAB_SIZE
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == 151645
    assert tok.pad_token == "<|endoftext|>" and tok.pad_token_id == 151643
    assert tok.model_max_length == 262144
    assert tok.bos_token is None


def test_special_token_ids_round_trip(tok):
    tokens = list(SPECIAL_IDS)
    assert tok.convert_tokens_to_ids(tokens) == list(SPECIAL_IDS.values())
    assert tok.convert_ids_to_tokens(list(SPECIAL_IDS.values())) == tokens
    # Each special token is matched as one token inside text.
    text = "".join(f"x{t}" for t in tokens)
    ids = tok.encode(text, add_special_tokens=False)
    assert [i for i in ids if i >= 151643] == list(SPECIAL_IDS.values())


def test_special_flags(tok):
    text = "<|im_start|>assistant\n<think>\nhmm</think>\n\n<tool_call>x</tool_call>The answer is B<|im_end|>"
    ids = tok.encode(text, add_special_tokens=False)
    skipped = tok.decode(ids, skip_special_tokens=True)
    # Control tokens disappear, <think>/<tool_call> stay in the text (as with Qwen).
    assert skipped == "assistant\n<think>\nhmm</think>\n\n<tool_call>x</tool_call>The answer is B"
    assert tok.decode(ids) == text
    assert set(CONTROL_TOKENS) <= set(tok.all_special_tokens)
    assert not set(TEXT_TOKENS) & set(tok.all_special_tokens)


def test_every_id_decodes(tok):
    start = time.perf_counter()
    decoded = tok.batch_decode([[i] for i in range(VOCAB_SIZE)])
    assert time.perf_counter() - start < 10.0
    assert len(decoded) == VOCAB_SIZE
    for token, i in SPECIAL_IDS.items():
        assert decoded[i] == token
    assert decoded[VOCAB_SIZE - 1] == "<|p151935|>"
    assert decoded[151642] == "<|p151642|>"
    # Placeholder added tokens beyond </think> are special (skipped like unused ids).
    assert tok.decode([151669, 151935], skip_special_tokens=True) == ""


@pytest.mark.parametrize(
    "text",
    [
        "Answer the question using a single word or phrase.",
        "Answer with the option's letter from the given choices directly.",
        "Let's think step by step. The answer is 42.",
        "The revenue rose from 1,254,300 in 2010 to 3.75 million in 2023 (+199.2%)!",
        "0123456789 9876543210 3.14159 -17 1e-5 2^10 = 1024",
        "A. yes\nB. no\nC. maybe\nD. none of the above\n\n  Indented\ttab; quotes \"x\" 'y' [z] {w} <v>",
        "Zebra-crossing, Übermäßig café naïve — unicode ✓ 漢字",
    ],
)
def test_encode_decode_round_trip(tok, text):
    ids = tok.encode(text, add_special_tokens=False)
    assert all(0 <= i < 151643 for i in ids)
    assert tok.decode(ids) == text


def test_common_words_are_learned_tokens(tok):
    ids = tok.encode("Answer the question", add_special_tokens=False)
    assert len(ids) == 3
    assert max(ids) < 8500  # learned BPE tokens, not placeholders


MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {
        "role": "user",
        "content": [
            {"type": "image"},
            {"type": "text", "text": "What is the highest value?\nAnswer the question using a single word or phrase."},
        ],
    },
]
EXPECTED = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
    "What is the highest value?\nAnswer the question using a single word or phrase.<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def test_chat_template_system_user_image(tok):
    assert tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True) == EXPECTED
    assert (
        tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True, enable_thinking=False)
        == EXPECTED
    )
    assert tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=False) == EXPECTED[
        : -len("<|im_start|>assistant\n")
    ]


def test_chat_template_thinking(tok):
    rendered = tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True, enable_thinking=True)
    assert rendered == EXPECTED + "<think>\n"


def test_chat_template_no_default_system_and_string_content(tok):
    messages = [
        {"role": "user", "content": "Question one?"},
        {"role": "assistant", "content": "Answer one."},
        {"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Compare."}]},
    ]
    rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == (
        "<|im_start|>user\nQuestion one?<|im_end|>\n"
        "<|im_start|>assistant\nAnswer one.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
        "<|vision_start|><|image_pad|><|vision_end|>Compare.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_chat_template_tokenizes_special_tokens_as_single_ids(tok):
    ids = tok.encode(EXPECTED, add_special_tokens=False)
    assert ids[0] == SPECIAL_IDS["<|im_start|>"]
    assert ids.count(SPECIAL_IDS["<|image_pad|>"]) == 1
    assert ids.count(SPECIAL_IDS["<|im_end|>"]) == 2
    tail = [SPECIAL_IDS["<|im_start|>"]] + tok.encode("assistant\n", add_special_tokens=False)
    assert ids[-len(tail) :] == tail


def test_build_is_deterministic_and_matches_shipped(tmp_path):
    build = _load_build_module()
    start = time.perf_counter()
    out = build.build(tmp_path / "tok")
    assert time.perf_counter() - start < 10.0
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (out / name).read_bytes() == (TOKENIZER_DIR / name).read_bytes(), name


def test_build_script_help():
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--help"], capture_output=True, text=True, check=True, timeout=60
    )
    assert "--out" in result.stdout
