"""Generation: the second stage from a reused KV cache equals recomputing it, and the accounting adds up."""
import pytest
import torch

from mai import prompts
from mai.families import qwen3_vl
from mai.generation import STAGES, HFGenerator, Request

POST = "\nAnswer the question using a single word or phrase."


def _recompute(loaded, first_request, stage2_ids, max_new_tokens):
    """Greedy second stage from scratch: the whole sequence, image included, with no cache."""
    text = prompts.user_text(first_request.question, first_request.mode, first_request.post_prompt)
    prompt = prompts.render(loaded.processor, 1, text, thinking=False)
    first = loaded.processor(text=[prompt], images=first_request.images, return_tensors="pt")
    mm = torch.zeros_like(stage2_ids)
    mm[:, : first["mm_token_type_ids"].shape[1]] = first["mm_token_type_ids"]
    out = loaded.model.generate(input_ids=stage2_ids, attention_mask=torch.ones_like(stage2_ids),
                                mm_token_type_ids=mm, pixel_values=first["pixel_values"],
                                image_grid_thw=first["image_grid_thw"], max_new_tokens=max_new_tokens,
                                do_sample=False, eos_token_id=loaded.eos_token_ids,
                                pad_token_id=loaded.eos_token_ids[0], output_logits=True,
                                return_dict_in_generate=True)
    return out.sequences[0, stage2_ids.shape[1]:], out.logits[0][0]


@pytest.mark.parametrize("end", ["length", "eos"])
def test_second_stage_from_cache_equals_recompute(tiny_small, chart_image, monkeypatch, end):
    """The first stage ends at the length limit (its last token never fed: the second stage feeds it) or
    at a stop token (dropped: the template's suffix closes the turn itself)."""
    gen = HFGenerator(tiny_small)
    first_req = Request("Which bar is the tallest?", [chart_image], "think", POST, max_new_tokens=12,
                        keep_cache=True)
    if end == "eos":  # make one of its own tokens a stop token, so that it stops there
        probe = gen.generate(first_req)
        token = int(probe.sequence[0, probe.input_tokens + 6])
        monkeypatch.setattr(tiny_small.model.generation_config, "eos_token_id", [*tiny_small.eos_token_ids, token])
    first = gen.generate(first_req)
    assert first.stopped == (end == "eos") and first.content_tokens == first.output_tokens - (end == "eos")
    assert (first.output_tokens < 12) == (end == "eos")
    assert gen.reasoning_ids(first).numel() == first.content_tokens
    # Another prompt in between replaces the model's M-RoPE state; the second stage must not depend on it.
    gen.generate(Request("Is there a dog?", [chart_image.resize((200, 100))], "simple", POST, 4))

    # The second stage's ids, and the logits of its first step, with the cache.
    stage2 = gen._inputs(Request("Which bar is the tallest?", [chart_image], "answer", POST, 8,
                                 reuse=first))[0]["input_ids"]
    reused = gen.generate(Request("Which bar is the tallest?", [chart_image], "answer", POST, 8, reuse=first))
    want_ids, want_logits = _recompute(tiny_small, first_req, stage2, 8)

    got_ids = tiny_small.tokenizer(reused.text, add_special_tokens=False).input_ids
    assert reused.cached_tokens == first.input_tokens + first.output_tokens - 1
    assert reused.input_tokens == stage2.shape[1]
    assert tiny_small.tokenizer.decode(want_ids, skip_special_tokens=True) == reused.text
    assert len(set(want_ids.tolist())) > 1, "a degenerate model would make this test vacuous"
    assert got_ids  # the reused stage produced text


def test_second_stage_logits_match(tiny_small, chart_image):
    """Stronger than equal tokens: the first-step logits from the cache match recomputation."""
    gen = HFGenerator(tiny_small)
    first_req = Request("What is the value of the green bar?", [chart_image], "think", POST, 10,
                        keep_cache=True)
    first = gen.generate(first_req)
    inputs = gen._inputs(Request(first_req.question, [chart_image], "answer", POST, 1, reuse=first))[0]
    ids = inputs["input_ids"]
    tiny_small.model.model.rope_deltas = first.rope_deltas
    with torch.inference_mode():
        cached = first.cache.get_seq_length()
        out = tiny_small.model(input_ids=ids[:, cached:], mm_token_type_ids=inputs["mm_token_type_ids"][:, cached:],
                               cache=first.cache)
    _, want = _recompute(tiny_small, first_req, ids, 1)
    assert torch.allclose(out.logits[0, -1], want, atol=1e-4), (out.logits[0, -1] - want).abs().max()


def test_result_accounting(tiny_small, chart_image):
    res = HFGenerator(tiny_small).generate(Request("What is shown?", [chart_image], "simple", POST, 5,
                                                   min_new_tokens=5))
    assert res.output_tokens == 5
    assert set(res.times) == set(STAGES) and all(v >= 0 for v in res.times.values())
    assert res.times["vision"] > 0  # the vision tower ran and was timed apart from prefill
    n_image = int((tiny_small.processor(text=[prompts.render(tiny_small.processor, 1, "x", False)],
                                        images=[chart_image], return_tensors="pt")
                   ["input_ids"] == 151655).sum())
    assert res.input_tokens > n_image > 0
    assert abs(res.latency - sum(res.times.values())) < 1e-9


def test_greedy_is_deterministic(tiny_large, chart_image):
    gen = HFGenerator(tiny_large)
    req = Request("Which bar is the tallest?", [chart_image], "simple", POST, 6)
    assert gen.generate(req).text == gen.generate(req).text


def test_context_is_prepended_to_simple_prompt():
    text = prompts.user_text("Q?", "simple", POST, context="  because 3 > 2  ")
    assert text.startswith("Reasoning from another model:\nbecause 3 > 2\n\nQ?")
    assert text.endswith(POST)


def test_think_prompt_has_no_short_answer_post_prompt():
    """Think = question + think instruction (with the final-answer format), never the Simple post-prompt
    that asks for a single word; a Thinking checkpoint gets the question alone."""
    assert prompts.user_text("Q?", "think", POST) == "Q?" + prompts.THINK_INSTRUCTION
    assert "The answer is" in prompts.THINK_INSTRUCTION and "single word" not in prompts.THINK_INSTRUCTION
    assert prompts.user_text("Q?", "think", POST, thinking_checkpoint=True) == "Q?"
    assert prompts.user_text("Q?", "simple", POST) == "Q?" + POST


def test_r_baselines_and_mai_think_send_the_same_prompt(tiny_small, chart_image):
    """The R baselines (mai.evaluate.request_for, mode think) and MAI's Think call render one prompt."""
    from mai.benchmarks import get_benchmark
    from mai.cascade import Cascade, CascadeConfig
    from mai.data import Example
    from mai.evaluate import request_for

    bench = get_benchmark("synth-chartqa")
    example = Example("x", bench.name, "Which bar is the tallest?", ["B"], [])
    baseline = request_for(example, bench, [chart_image], "think", 64)
    gen = HFGenerator(tiny_small)
    mai_think = Cascade(gen, gen, CascadeConfig(think_tokens=64)).think_request(
        dict(question=example.question, images=[chart_image], post_prompt=bench.post_prompt))
    assert gen._prompt(baseline) == gen._prompt(mai_think)
    assert bench.post_prompt not in gen._prompt(mai_think)[0]


def test_rendered_prompt_uses_chat_template(tiny_small):
    text = prompts.render(tiny_small.processor, 1, "Q?", thinking=False)
    assert text == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
                    "<|vision_start|><|image_pad|><|vision_end|>Q?<|im_end|>\n<|im_start|>assistant\n")
    # <think> is opened by a Thinking checkpoint's own template (Qwen3-VL's take no switch), not by a flag.
    assert prompts.render(tiny_small.processor, 0, "Q?", thinking=True).endswith("assistant\n")
    thinking = qwen3_vl.offline_processor(64 * 64, 128 * 128, thinking=True)
    assert prompts.render(thinking, 0, "Q?", thinking=True).endswith("assistant\n<think>\n")
    suffix = prompts.second_stage_suffix(tiny_small.processor, 1, "Q?", POST, False)
    assert suffix == ("<|im_end|>\n<|im_start|>user\n" + prompts.ANSWER_INSTRUCTION + POST
                      + "<|im_end|>\n<|im_start|>assistant\n")


def test_forced_length_ignores_stop_tokens(tiny_small, chart_image):
    """Profiling forces output lengths (min = max new tokens): the length holds even where the model would
    stop at once."""
    gen = HFGenerator(tiny_small)
    first = gen.generate(Request("What is shown?", [chart_image], "simple", POST, 6, keep_cache=True))
    token = int(first.sequence[0, first.input_tokens])
    saved = tiny_small.model.generation_config.eos_token_id
    tiny_small.model.generation_config.eos_token_id = [token]  # now the first token it emits is a stop token
    try:
        assert gen.generate(Request("What is shown?", [chart_image], "simple", POST, 6)).output_tokens == 1
        assert gen.generate(Request("What is shown?", [chart_image], "simple", POST, 6,
                                    min_new_tokens=6)).output_tokens == 6
    finally:
        tiny_small.model.generation_config.eos_token_id = saved
