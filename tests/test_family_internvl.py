"""InternVL3.5 (-HF layout) beyond the per-family checks of tests/test_families.py: released shapes, the
chat template against transformers' own test prompts, the thinking system turn, image tiling as lmms-eval's
internvl_hf gets it. Random weights, CPU; the released shapes are built on the meta device (no memory)."""
import pytest
import torch
from PIL import Image

from mai import families, prompts
from mai.families import internvl
from mai.generation import HFGenerator, Request


def _count(name: str) -> int:
    from transformers import InternVLForConditionalGeneration

    with torch.device("meta"):
        model = InternVLForConditionalGeneration(families.FAMILIES["internvl"].config(name))
    return sum(p.numel() for p in model.parameters())


# Published total parameters: OpenGVLab's InternVL docs, InternVL3.5 quick start ("Model Preparation" table:
# InternVL3.5-2B 2.3B, -8B 8.5B; read in the copy ErfeiCui/InternVL-doc docs/en/internvl3.5/quick_start.md
# @613579e2), rounded to 0.1B, hence a tolerance of 0.05B. InternVL3.5-1B-HF's exact count, 1,060,897,792, is
# from a third-party record of the checkpoint at revision 9191dbcc (its weights' sha256 listed there).
@pytest.mark.parametrize("name, published, tolerance", [
    ("internvl3.5-1b", 1_060_897_792, 0), ("internvl3.5-2b", 2.3e9, 0.05e9), ("internvl3.5-8b", 8.5e9, 0.05e9)])
def test_released_shapes_have_the_published_parameter_counts(name, published, tolerance):
    n = _count(name)
    print(f"\nfigure: {name} {n:,} parameters (published {published:,.0f} +- {tolerance:,.0f})")
    assert abs(n - published) <= tolerance


@pytest.fixture(scope="module")
def processor():
    return internvl.offline_processor()


def test_the_template_renders_transformers_own_internvl_prompts(processor):
    """The prompts transformers' integration tests write by hand for OpenGVLab/InternVL3-1B-hf
    (tests/models/internvl/test_modeling_internvl.py @00dcc6dd), where they give the same generation as
    the checkpoint's own apply_chat_template: no system turn, `<IMG_CONTEXT>\\n` per image."""
    family = families.FAMILIES["internvl"]
    one = prompts.render(processor, 1, "Please describe the image explicitly.", thinking=False, family=family)
    assert one == ("<|im_start|>user\n<IMG_CONTEXT>\nPlease describe the image explicitly.<|im_end|>\n"
                   "<|im_start|>assistant\n")
    two = prompts.render(processor, 2, "What are the differences between these two images?", thinking=False,
                         family=family)
    assert two == ("<|im_start|>user\n<IMG_CONTEXT>\n<IMG_CONTEXT>\nWhat are the differences between these two "
                   "images?<|im_end|>\n<|im_start|>assistant\n")
    text = prompts.render(processor, 0, "Write a haiku", thinking=False, family=family)
    assert text == "<|im_start|>user\nWrite a haiku<|im_end|>\n<|im_start|>assistant\n"


def test_think_prompts_carry_the_thinking_system_prompt_and_simple_prompts_none(processor):
    family = families.FAMILIES["internvl"]
    think = prompts.render(processor, 1, "Q?", thinking=True, family=family)
    assert think.startswith("<|im_start|>system\nYou are an AI assistant that rigorously follows this response "
                            "protocol:\n\n1. First,")
    assert think.endswith("the thinking section.<|im_end|>\n<|im_start|>user\n<IMG_CONTEXT>\nQ?<|im_end|>\n"
                          "<|im_start|>assistant\n")
    assert "<|im_start|>system" not in prompts.render(processor, 1, "Q?", thinking=False, family=family)
    # The second stage asks for the answer without the thinking turn (only what follows the first stage's
    # tokens is rendered, so it closes the turn and opens a plain user turn).
    suffix = prompts.second_stage_suffix(processor, 1, "Q?", "", thinking=True, family=family)
    assert suffix == (f"<|im_end|>\n<|im_start|>user\n{prompts.ANSWER_INSTRUCTION}<|im_end|>\n"
                      "<|im_start|>assistant\n")


def test_an_image_is_tiled_as_lmms_eval_internvl_hf_gets_it(processor):
    """processor(..., min_patches=1, max_patches=12), crop_to_patches left to InternVLProcessor (on): a
    150 x 110 image (aspect 1.36) takes the 4 x 3 grid of 12 tiles, plus a thumbnail."""
    family = families.FAMILIES["internvl"]
    prompt = prompts.render(processor, 1, "Q?", thinking=False, family=family)
    out = family.encode(processor, [prompt], [Image.new("RGB", (150, 110), "white")])
    assert tuple(out["pixel_values"].shape) == (13, 3, internvl.TINY_IMAGE, internvl.TINY_IMAGE)
    ids = out["input_ids"][0].tolist()
    tokenizer = processor.tokenizer
    assert ids.count(tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>")) == 13 * processor.image_seq_length
    assert ids.count(tokenizer.convert_tokens_to_ids("<img>")) == ids.count(tokenizer.convert_tokens_to_ids("</img>")) == 1
    assert internvl.IMAGE_TOKEN_ID == tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>")
    # With tiling off, as the image processor's own default would have it: one tile.
    single = processor(text=[prompt], images=[Image.new("RGB", (150, 110))], crop_to_patches=False,
                       return_tensors="pt")
    assert single["pixel_values"].shape[0] == 1


def test_a_tiny_model_thinks_with_the_question_alone_and_its_system_turn():
    from mai.models import load_model

    lm = load_model("tiny-internvl3.5", device="cpu")
    assert lm.thinking and lm.eos_token_ids == [151645, 151643] and lm.tokenizer.bos_token_id is None
    gen = HFGenerator(lm)
    prompt, text = gen._prompt(Request("How many bars?", images=[Image.new("RGB", (64, 64))], mode="think"))
    assert text == "How many bars?"  # no THINK_INSTRUCTION: the system prompt asks for <think> ... </think>
    assert prompt.startswith("<|im_start|>system\n" + internvl.THINKING_SYSTEM_PROMPT + "<|im_end|>\n")
    assert lm.family.tower(lm.model) is lm.model.model.vision_tower
