"""The vLLM backend's plain-Python parts, on a machine without vLLM: the prompts it would submit equal the
transformers backend's (before the processor expands the image placeholder), greedy sampling fields,
token counting, stage times, the random-weight checkpoint directory, and the one-line install error.
The engine itself runs in scripts/gpu_check.sh on a GPU."""
import dataclasses
import importlib.util
import itertools
import json
import sys
import time
import types
from types import SimpleNamespace

import pytest
import torch

from mai import MaiError, checkpoints, images
from mai.families.qwen3_vl import IMAGE_TOKEN_ID, VOCAB_SIZE
from mai.generation import STAGES, HFGenerator, Request, Result
from mai.transfer import attention_over_reasoning
from mai.vllm_backend import (INSTALL_HINT, PrefixState, VLLMGenerator, build_prompt, output_length,
                              sampling_fields, stage_times, write_dummy_checkpoint)

POST = "\nAnswer the question using a single word or phrase."
EOS = [151645, 151643]


def _collapse(ids) -> list[int]:
    """Token ids with each run of image placeholders collapsed to one, as before the processor expands it."""
    out = []
    for token, run in itertools.groupby(ids.tolist() if torch.is_tensor(ids) else ids):
        out += [token] if token == IMAGE_TOKEN_ID else list(run)
    return out


@pytest.mark.parametrize("mode,context", [("simple", None), ("think", None), ("simple", "B is tallest.")])
def test_first_stage_prompt_is_the_transformers_prompt(tiny_small, chart_image, mode, context):
    request = Request("Which bar is tallest?", [chart_image], mode, POST, 8, context=context)
    prompt, state = build_prompt(tiny_small.processor, request)
    hf_ids = HFGenerator(tiny_small)._inputs(request)[0]["input_ids"][0]
    assert prompt["prompt_token_ids"] == _collapse(hf_ids) == state.prompt_ids
    assert prompt["prompt_token_ids"].count(IMAGE_TOKEN_ID) == 1
    # the image as lmms-eval sizes it (mai.images), resized by us for both backends
    lo, hi = images.processor_bounds(tiny_small.processor)
    sent = prompt["multi_modal_data"]["image"]
    assert sent.size == images.resize(chart_image, lo, hi).size and sent.tobytes() == images.resize(chart_image, lo, hi).tobytes()
    assert state.first_text.startswith("Reasoning from another model" if context else "Which bar")


def test_second_stage_prompt_extends_the_first(tiny_small, chart_image):
    """The answer stage's ids: first prompt + reasoning (closing eos dropped) + suffix, as on transformers."""
    gen = HFGenerator(tiny_small)
    first_request = Request("Which bar is tallest?", [chart_image], "think", POST, 8, keep_cache=True)
    hf_first = gen.generate(first_request)
    _, state = build_prompt(tiny_small.processor, first_request)
    state.reasoning_ids = gen.reasoning_ids(hf_first).tolist()
    vllm_first = Result(text=hf_first.text, input_tokens=hf_first.input_tokens, output_tokens=hf_first.output_tokens,
                        times=dict.fromkeys(STAGES, 0.0), cache=state, first_text=state.first_text)
    answer = Request("Which bar is tallest?", [chart_image], "answer", POST, 4)
    prompt, _ = build_prompt(tiny_small.processor, dataclasses.replace(answer, reuse=vllm_first))
    hf_ids = gen._inputs(dataclasses.replace(answer, reuse=hf_first))[0]["input_ids"][0]
    assert prompt["prompt_token_ids"] == _collapse(hf_ids)
    assert prompt["prompt_token_ids"][:len(state.prompt_ids)] == state.prompt_ids  # a prefix: cached blocks
    # the image as lmms-eval sizes it (mai.images), resized by us for both backends
    lo, hi = images.processor_bounds(tiny_small.processor)
    sent = prompt["multi_modal_data"]["image"]
    assert sent.size == images.resize(chart_image, lo, hi).size and sent.tobytes() == images.resize(chart_image, lo, hi).tobytes()
    with pytest.raises(ValueError, match="continues a first stage"):
        build_prompt(tiny_small.processor, dataclasses.replace(answer, reuse=hf_first))


def test_prompt_without_and_with_several_images(tiny_small, chart_image):
    prompt, _ = build_prompt(tiny_small.processor, Request("Two plus two?", [], "simple", POST, 4))
    assert "multi_modal_data" not in prompt
    prompt, _ = build_prompt(tiny_small.processor, Request("Same?", [chart_image, chart_image], "simple", POST, 4))
    lo, hi = images.processor_bounds(tiny_small.processor)
    sent = prompt["multi_modal_data"]["image"]
    assert [im.tobytes() for im in sent] == [images.resize(chart_image, lo, hi).tobytes()] * 2
    assert prompt["prompt_token_ids"].count(IMAGE_TOKEN_ID) == 2


def test_sampling_fields_are_greedy_with_the_request_limits():
    fields = sampling_fields(Request("q", [], "simple", POST, max_new_tokens=16, min_new_tokens=4), EOS)
    assert fields == dict(temperature=0.0, max_tokens=16, min_tokens=4, stop_token_ids=EOS, repetition_penalty=1.0,
                          presence_penalty=0.0, frequency_penalty=0.0, skip_special_tokens=True)


def test_output_length_counts_a_closing_eos_once():
    assert output_length([5, 6, 151645], "stop", None, EOS) == 3  # eos kept in token_ids
    assert output_length([5, 6], "stop", None, EOS) == 3  # eos dropped by vLLM: it still cost a step
    assert output_length([5, 6], "stop", 151643, EOS) == 3
    assert output_length([5, 6, 7], "length", None, EOS) == 3
    assert output_length([5, 6], "stop", "</s>", EOS) == 2  # a stop string: no extra token


def test_stage_times_from_request_metrics():
    v1 = SimpleNamespace(scheduled_ts=10.0, first_token_ts=10.5, last_token_ts=12.0)
    times, timed = stage_times(v1, wall=2.5)
    assert timed and times == pytest.approx(dict(preprocess=0.5, vision=0.0, prefill=0.5, decode=1.5))
    v0 = SimpleNamespace(first_scheduled_time=1.0, first_token_time=1.2, last_token_time=2.0)
    times, _ = stage_times(v0, wall=4.0, batch_size=4)  # a batch: the request's split, divided by 4
    assert sum(times.values()) == pytest.approx(1.0) and times["decode"] == pytest.approx(0.2)
    times, timed = stage_times(None, wall=3.0, batch_size=2)
    assert not timed and times == dict(preprocess=0.0, vision=0.0, prefill=0.0, decode=1.5)


def test_dummy_checkpoint_directory_is_the_real_shape_offline(tmp_path, chart_image):
    from transformers import AutoConfig, AutoTokenizer

    from mai.families.qwen3_vl import ARCHITECTURES, checkpoint_processor, offline_processor

    path = write_dummy_checkpoint("qwen3-vl-8b", tmp_path / "8b", 64 * 64, 128 * 128)
    config = AutoConfig.from_pretrained(path)
    shape = ARCHITECTURES["qwen3-vl-8b"]["text_config"]
    assert (config.text_config.hidden_size, config.text_config.num_hidden_layers) == (shape["hidden_size"], 36)
    assert config.architectures == ["Qwen3VLForConditionalGeneration"]
    raw = json.loads((path / "config.json").read_text())["text_config"]
    assert raw["rope_scaling"]["mrope_section"] == [24, 20, 20] and raw["rope_theta"] == 5_000_000.0
    assert len(AutoTokenizer.from_pretrained(path)) == 151669  # Qwen3's tokenizer; the model has 151,936 rows
    assert config.text_config.vocab_size == VOCAB_SIZE
    ours, theirs = offline_processor(64 * 64, 128 * 128), checkpoint_processor(str(path), 64 * 64, 128 * 128)
    text = "<|vision_start|><|image_pad|><|vision_end|>Q?"
    a, b = (p(text=[text], images=[chart_image], return_tensors="pt") for p in (ours, theirs))
    assert torch.equal(a["input_ids"], b["input_ids"])
    # Beside vLLM's torchvision the checkpoint's processor is the torchvision one: its resize may round a pixel
    # to the next 8-bit level (measured: at most 1/127.5 after normalising to [-1, 1]).
    assert torch.allclose(a["pixel_values"], b["pixel_values"], rtol=0, atol=1.01 / 127.5)
    with pytest.raises(MaiError, match="random weights need an architecture name"):
        write_dummy_checkpoint("Qwen/Qwen3-VL-2B-Instruct", tmp_path / "x")


def test_sparse_transfer_attention_for_a_vllm_first_stage(tiny_small, chart_image):
    """vLLM gives no attention: the generator's own capture (one transformers prefill over the prompt, the
    vLLM reasoning ids and the suffix) equals the transformers backend's capture of the same tokens."""
    hf = HFGenerator(tiny_small)
    request = Request("Which bar is tallest?", [chart_image], "think", POST, 8, keep_cache=True)
    hf_first = hf.generate(request)
    _, state = build_prompt(tiny_small.processor, request)
    state = PrefixState(state.prompt, state.prompt_ids, hf.reasoning_ids(hf_first).tolist(), [chart_image],
                        state.first_text)
    first = Result(text=hf_first.text, input_tokens=hf_first.input_tokens, output_tokens=hf_first.output_tokens,
                   times=dict.fromkeys(STAGES, 0.0), cache=state)
    gen = VLLMGenerator.__new__(VLLMGenerator)  # no engine: only the transformers side is exercised
    gen._loaded, gen._warned = tiny_small, False
    got = gen.attention_over_reasoning(first, POST, [1, 2])
    want = attention_over_reasoning(hf, hf_first, POST, [1, 2])
    assert (got.start, got.reasoning_ids, got.input_tokens) == (want.start, want.reasoning_ids, want.input_tokens)
    for layer in (1, 2):
        assert torch.allclose(got.rows[layer], want.rows[layer], atol=1e-6)


def test_without_vllm_the_generator_is_a_one_line_error():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(MaiError) as err:
        VLLMGenerator("tiny-small")
    assert str(err.value) == INSTALL_HINT and "\n" not in INSTALL_HINT


# ---------------------------------------------------------------------------------------------------
# A recording stand-in for the vLLM engine, with a prefix cache, for isolation between systems
# ---------------------------------------------------------------------------------------------------

class FakeLLM:
    """vllm.LLM as far as VLLMGenerator uses it (generate, reset_prefix_cache), with a prefix cache as vLLM
    keeps one: full blocks of BLOCK tokens, each keyed by every token before it and the request's images
    (vLLM's block hashes chain the previous block's hash and the multimodal hashes); a request's cached
    tokens are its leading cached blocks, never its whole prompt (vLLM computes at least the last token).
    Finished sequences leave their full blocks (prompt and output) in the cache until a reset."""

    BLOCK = 4
    engines: list["FakeLLM"] = []

    def __init__(self, **engine_args):
        self.engine_args, self.blocks, self.events = engine_args, set(), []
        self.words = 1000 + 37 * len(FakeLLM.engines)  # the small and the large model say different things
        FakeLLM.engines.append(self)

    def reset_prefix_cache(self):
        self.blocks.clear()
        self.events.append("reset")
        return True

    def generate(self, prompts, params, use_tqdm=True):
        outputs = []
        for prompt, sampling in zip(prompts, params):
            ids = list(prompt["prompt_token_ids"])
            images = prompt.get("multi_modal_data", {}).get("image")
            images = images if isinstance(images, list) else [] if images is None else [images]
            salt = tuple(hash(im.tobytes()) for im in images)
            cached = 0
            while cached + self.BLOCK < len(ids) and (salt, tuple(ids[:cached + self.BLOCK])) in self.blocks:
                cached += self.BLOCK
            # Ordinary word tokens (never eos), as many as asked: the answers mean nothing, the tokens count.
            generated = [self.words + (len(ids) * 7 + k) % 500 for k in range(sampling.max_tokens)]
            seq = ids + generated[:-1]  # the last sampled token has no KV yet
            self.blocks |= {(salt, tuple(seq[:end])) for end in range(self.BLOCK, len(seq) + 1, self.BLOCK)}
            self.events.append(("generate", len(ids), cached))
            now = time.perf_counter()
            outputs.append(SimpleNamespace(
                prompt_token_ids=ids, num_cached_tokens=cached,
                outputs=[SimpleNamespace(token_ids=generated, finish_reason="length", stop_reason=None)],
                metrics=SimpleNamespace(arrival_time=now, queued_ts=now, scheduled_ts=now, first_token_ts=now + 1e-4,
                                        last_token_ts=now + 2e-4)))
        return outputs


@pytest.fixture
def fake_vllm(monkeypatch):
    """`import vllm` gives a module whose LLM is FakeLLM (the engines built are in FakeLLM.engines)."""
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams, module.__version__ = FakeLLM, lambda **kw: SimpleNamespace(**kw), "fake"
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.engines = []
    return FakeLLM


def _calls(row: dict) -> list[tuple[str, str, dict]]:
    """(role, mode, result) of every model call of a Table 10 row, in call order."""
    if row.get("trace") or row.get("calls"):
        return [(c["role"], c["mode"], c["result"]) for c in row.get("trace") or row["calls"]]
    role = "small" if row["small_output_tokens"] else "large"
    return [(role, "row", row)]


@pytest.mark.parametrize("order", ["example", "stage"])
def test_no_system_is_served_from_another_systems_cache(tmp_path, fake_vllm, experiment, order):
    """10_mai on the stand-in engine: each system's first call on each engine for an example finds nothing
    cached (MAI's large Simple call is token for token the L-S baseline's, its small Simple call shares
    the S-R prompt's opening), while MAI's second stage finds its first stage's blocks."""
    args = ["--preset", "cpu", "--limit", "2", "--think-tokens", "9", "--simple-tokens", "3", "--answer-tokens", "3",
            "--wandb", "disabled", "--backend", "vllm", "--order", order, "--batch-size", "4",
            "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)]
    mod = experiment("10_mai")
    mod.main(args)
    rows = [json.loads(x) for x in (tmp_path / "runs/10_mai/cpu/results.jsonl").read_text().splitlines()]
    systems = {r["system"] for r in rows}
    assert len(systems) == 6 and not any(r["error"] for r in rows) and len(rows) == 4 * 6
    for r in rows:
        first_on = {}
        for role, mode, result in _calls(r):
            first_on.setdefault(role, result)
            if mode == "answer":  # the second stage extends the first: the whole blocks of its prompt and
                think = next(res for _, m, res in _calls(r) if m == "think")  # reasoning (the last token has no KV)
                reused = (think["input_tokens"] + think["output_tokens"] - 1) // FakeLLM.BLOCK * FakeLLM.BLOCK
                assert result["cached_tokens"] == reused > 0
        assert [res["cached_tokens"] for res in first_on.values()] == [0] * len(first_on), r["system"]
    mai = [r for r in rows if r["kind"] == "MAI"]
    assert {r["verify"] for r in mai} == {"answer", "reasoning"}
    assert sum(c["mode"] == "answer" for r in mai for c in r["trace"]) == 4  # only the two-stage variant's
    small, large = FakeLLM.engines
    resets = len(rows) if order == "example" else 6  # a reset per system call: an example, or one batch of 4
    assert small.events.count("reset") == large.events.count("reset") == resets
    assert "cached_tokens" in (tmp_path / "paper_tables/table10_mai.cpu.md").read_text()


def test_without_resets_the_stand_in_shows_a_hit(chart_image, fake_vllm):
    """The stand-in would catch a missing reset: the same Simple prompt twice hits the cache, and not after
    reset_caches()."""
    gen = VLLMGenerator("tiny-small", max_pixels=128 * 128, min_pixels=64 * 64)
    request = Request("Which bar is tallest?", [chart_image], "simple", POST, 3)
    first, again = gen.generate(request), gen.generate(request)
    assert first.cached_tokens == 0 and again.cached_tokens > 0
    assert gen.reset_caches() == ["prefix"]
    assert gen.generate(request).cached_tokens == 0


def test_zero_timestamps_are_missing_not_the_clock_origin():
    """vLLM V1 leaves an unset timestamp at 0.0: the call is not all prefill, it is untimed."""
    unset = SimpleNamespace(scheduled_ts=0.0, first_token_ts=105.0, last_token_ts=106.0)
    times, timed = stage_times(unset, wall=2.0)
    assert not timed and times == dict(preprocess=0.0, vision=0.0, prefill=0.0, decode=2.0)
    times, timed = stage_times(SimpleNamespace(scheduled_ts=0.0, first_token_ts=0.0, last_token_ts=0.0), wall=1.0)
    assert not timed and times["prefill"] == 0.0


def test_gpu_check_prints_prefix_hits_per_system(fake_vllm, capsys):
    """scripts/gpu_check_vllm.py's isolation section, on the stand-in engine: no system's first call on an
    engine is a hit; MAI's two-stage variant reuses its first stage; the cascade's two orders each start
    from emptied caches."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "gpu_check_vllm.py"
    spec = importlib.util.spec_from_file_location("gpu_check_vllm", path)
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    small, large = (VLLMGenerator(name, max_pixels=128 * 128, min_pixels=64 * 64)
                    for name in ("tiny-small", "tiny-large"))
    hits = check.prefix_hits_per_system(small, large, limit=1, think=5, seed=0)
    assert len(hits) == 6 and all(h["queries"] == 2 for h in hits.values())
    assert [h["first_call_hits"] for h in hits.values()] == [0] * 6
    assert hits["MAI verify=answer"]["all_hits"] > 0
    assert "LEAK" not in capsys.readouterr().out
    engine = FakeLLM.engines[0]
    before = engine.events.count("reset")
    orders = check.cascade_orders(small, large, limit=1, think=5, seed=0)
    assert engine.events.count("reset") == before + 2 and orders["identical"] == 2


@pytest.mark.parametrize("keep_eos", [True, False])
def test_a_closing_stop_token_is_output_but_not_reasoning(chart_image, fake_vllm, monkeypatch, keep_eos):
    """As on the transformers backend: the stop token cost a decode step (output_tokens) but is not part of
    the reasoning handed over (Result.stopped), whether vLLM keeps it in token_ids or drops it."""
    generate = FakeLLM.generate

    def stop_early(self, prompts, params, use_tqdm=True):
        outs = generate(self, prompts, params, use_tqdm)
        for out in outs:
            done = out.outputs[0]
            done.token_ids = done.token_ids[:2] + ([EOS[0]] if keep_eos else [])
            done.finish_reason = "stop"
        return outs

    monkeypatch.setattr(FakeLLM, "generate", stop_early)
    gen = VLLMGenerator("tiny-small", max_pixels=128 * 128, min_pixels=64 * 64)
    result = gen.generate(Request("Which bar is tallest?", [chart_image], "think", POST, 8))
    assert result.stopped and result.output_tokens == 3 and result.content_tokens == 2


def test_a_family_vllm_does_not_serve_stops_in_one_line_before_an_engine(fake_vllm):
    """LLaVA-OneVision: vLLM 0.30 cannot import its model beside transformers 5.24 (mai/families/llava_onevision.py)."""
    with pytest.raises(MaiError) as err:
        VLLMGenerator("tiny-llava-onevision", max_pixels=128 * 128, min_pixels=64 * 64)
    assert "does not serve the llava_onevision family" in str(err.value) and "\n" not in str(err.value)
    assert fake_vllm.engines == []


def test_a_generator_without_an_engine_refuses_to_generate(fake_vllm, chart_image):
    gen = VLLMGenerator("tiny-small", max_pixels=128 * 128, min_pixels=64 * 64, start_engine=False)
    assert fake_vllm.engines == [] and "mm_processor_kwargs" not in gen.engine_args  # random weights: bounds in files
    with pytest.raises(MaiError, match="start_engine=False"):
        gen.generate(Request("Q?", [chart_image]))


def test_only_qwen_sized_checkpoints_get_the_runs_pixel_bounds(fake_vllm, tmp_path):
    """A checkpoint directory's processor gets the run's bounds as vLLM processor kwargs only where images are sized
    by qwen_vl_utils: Gemma 3's processor keeps its fixed SigLIP size (a Qwen `size` would replace it)."""
    from mai import families

    bounds = {"shortest_edge": 64 * 64, "longest_edge": 128 * 128}
    for name, expected in (("tiny-qwen2.5-vl", {"size": bounds}), ("tiny-gemma3", None)):
        path = checkpoints.write(families.by_architecture(name), name, tmp_path / name, weights=False)
        gen = VLLMGenerator(str(path), max_pixels=128 * 128, min_pixels=64 * 64, start_engine=False)
        assert gen.engine_args.get("mm_processor_kwargs") == expected, name
