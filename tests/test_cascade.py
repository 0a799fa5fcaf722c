"""The cascade takes each route when it should, and its trace accounts for every call.

Routing depends on what two models answer, which random weights cannot be made to say; so routing is
tested with a scripted large model (a test double answering fixed texts) while the small model is the
real tiny Qwen3-VL wherever its machinery (KV reuse, attention capture) is what the branch exercises.
"""
import pytest

from mai.attention import SparseOptions
from mai.benchmarks import get_benchmark
from mai.cascade import ROUTES, Cascade, CascadeConfig
from mai.generation import HFGenerator, Request, Result

POST = "\nAnswer the question using a single word or phrase."
# Agreement rules (Matcher classes) of the benchmarks the questions below are written for.
POPE, CHARTQA, REALWORLDQA = (get_benchmark(name).agreement for name in ("pope", "chartqa", "realworldqa"))
TIMES = dict(preprocess=0.01, vision=0.02, prefill=0.03, decode=0.04)


class Scripted:
    """Answers by prompt mode (and, for the simple mode, whether context was given)."""

    def __init__(self, **texts):
        self.texts, self.requests = texts, []

    def generate(self, request: Request) -> Result:
        self.requests.append(request)
        key = "transfer" if request.context else request.mode
        return Result(text=self.texts[key], input_tokens=20 + len(request.context or ""), output_tokens=3,
                      times=dict(TIMES))


def _cascade(small, large, **cfg):
    return Cascade(small, large, CascadeConfig(think_tokens=8, answer_tokens=4, **cfg), "2B", "8B")


def test_agree_at_simple_stops_after_two_calls():
    small, large = Scripted(simple="Yes."), Scripted(simple="yes")
    trace = _cascade(small, large).answer("Is there a cat?", [], POPE, POST, 8)
    assert trace.route == "simple" and trace.answer == "yes"
    assert [c.answer for c in trace.calls] == ["yes", "yes"]  # what verification compared
    assert [(c.role, c.mode) for c in trace.calls] == [("small", "simple"), ("large", "simple")]
    totals = trace.totals()
    assert totals["large_output_tokens"] == 3 and totals["small_calls"] == 1
    assert totals["latency"] == pytest.approx(2 * sum(TIMES.values()))


def test_agree_after_thinking_uses_the_second_stage():
    small = Scripted(simple="no", think="There is a cat on the sofa. The answer is yes.", answer="yes")
    large = Scripted(simple="Yes")
    trace = _cascade(small, large).answer("Is there a cat?", [], POPE, POST, 8)
    assert trace.route == "reasoning" and trace.answer == "Yes"  # extraction keeps a plain answer as is
    assert [c.mode for c in trace.calls] == ["simple", "simple", "think", "answer"]
    assert small.requests[1].keep_cache and small.requests[2].reuse is not None


def test_reasoning_variant_reads_the_answer_off_the_reasoning():
    small = Scripted(simple="no", think="A cat sits there. The answer is yes.", answer="no")
    trace = _cascade(small, Scripted(simple="yes"), verify="reasoning").answer("Cat?", [], POPE, POST, 8)
    assert trace.route == "reasoning"
    assert [c.mode for c in trace.calls] == ["simple", "simple", "think"]  # no second stage
    assert trace.calls[2].answer == "yes"


@pytest.mark.parametrize("benchmark, question, think, large_says", [
    ("pope", "Is there a cat?", "Yes, I can see a cat on the sofa, it is grey", "yes"),
    ("mmbench", "Which animal? There are several options:\nA. cat\nB. cow", "Looking at option B, a cow", "B"),
])
def test_a_reasoning_without_an_answer_cue_never_agrees(benchmark, question, think, large_says):
    """The simplified framework reads the answer off the reasoning: one that names none (no cue) has no
    answer, so the cascade goes on to transfer instead of taking the whole reasoning as the answer."""
    small = Scripted(simple="zebra", think=think)
    large = Scripted(simple=large_says, transfer=large_says)
    trace = _cascade(small, large, verify="reasoning").answer(question, [], get_benchmark(benchmark).agreement, POST, 8)
    assert trace.calls[2].answer == ""
    assert trace.route == "transfer"
    assert [c.mode for c in trace.calls] == ["simple", "simple", "think", "transfer"]
    # With the cue, the same reasoning agrees.
    small = Scripted(simple="zebra", think=think + f". The answer is {large_says}.")
    trace = _cascade(small, Scripted(simple=large_says), verify="reasoning").answer(question, [], get_benchmark(benchmark).agreement, POST, 8)
    assert trace.route == "reasoning"


def test_multiple_choice_agrees_by_option():
    """RealWorldQA: "Left" and "A" are the same answer when option A is "Left" (rule paper), not under
    --agree strict."""
    question = "Which way is the car turning?\nA. Left\nB. Right\nPlease answer directly with the letter."
    for rule, route in (("paper", "simple"), ("strict", "transfer")):
        small, large = Scripted(simple="Left", think="x", answer="Left"), Scripted(simple="A", transfer="A")
        trace = _cascade(small, large, agree=rule).answer(question, [], REALWORLDQA, "", 8)
        assert trace.route == route, rule

def test_full_transfer_prepends_the_whole_reasoning():
    reasoning = "The bars are 3, 5 and 4. The tallest is B. The answer is B."
    small = Scripted(simple="A", think=reasoning, answer="A")
    large = Scripted(simple="C", transfer="B")
    trace = _cascade(small, large).answer("Which bar is tallest?", [], CHARTQA, POST, 8)
    assert trace.route == "transfer" and trace.answer == "B"
    assert large.requests[-1].context == reasoning and large.requests[-1].mode == "simple"
    assert [(c.role, c.mode) for c in trace.calls][-1] == ("large", "transfer")
    assert trace.totals()["large_calls"] == 2


class VisionCounter:
    """Counts forwards of a model's vision tower (a forward hook), to show what ran it."""

    def __init__(self, loaded):
        self.n = 0
        self.handle = loaded.model.model.visual.register_forward_hook(self._count)

    def _count(self, *_):
        self.n += 1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.remove()



class Keep:
    """Wraps a generator and keeps every Result it returns (with its cache and captured attention)."""

    def __init__(self, gen):
        self.gen, self.results = gen, []
        self.loaded = gen.loaded

    def generate(self, request):
        self.results.append(self.gen.generate(request))
        return self.results[-1]

    def reasoning_ids(self, first):
        return self.gen.reasoning_ids(first)


@pytest.mark.parametrize("verify", ["answer", "reasoning"])
def test_sparse_transfer_captures_without_a_second_vision_pass(tiny_small, chart_image, verify, eager_row):
    """Small: tiny Qwen3-VL; large: scripted to disagree, so the cascade must reach sparse transfer. The
    vision tower runs once per first stage (Simple, Think), never for the capture; the kept tokens are
    select_by_mass over the eager attention row of the same sequence."""
    import torch

    from mai.attention import reasoning_weights, select_by_mass
    from mai.transfer import _sequence

    large = Scripted(simple="zebra", transfer="B")
    opts = SparseOptions(layer=2, delta=0.5)
    small = Keep(HFGenerator(tiny_small))
    cascade = _cascade(small, large, transfer="sparse", sparse=opts, verify=verify)
    with VisionCounter(tiny_small) as vision:
        trace = cascade.answer("Which bar is tallest?", [chart_image], CHARTQA, POST, 4)
    assert trace.route == "transfer"
    assert vision.n == 2  # small Simple and Think; not the second stage, not the capture
    modes = [c.mode for c in trace.calls]
    if verify == "answer":  # the capture rode on the second stage's prefill: no call of its own
        assert modes == ["simple", "simple", "think", "answer", "transfer"]
    else:  # one suffix-only forward on the kept cache, a labelled call with its own time
        assert modes == ["simple", "simple", "think", "attention", "transfer"]
        capture = trace.calls[3].result
        assert capture["source"] == "cache" and capture["latency"] > 0
        assert capture["input_tokens"] - capture["cached_tokens"] < 40  # the suffix, not the prompt
    thought = small.results[1]
    assert trace.reasoning_tokens == thought.content_tokens >= 1
    # The reference: eager attention over prompt + reasoning + second-stage suffix, from scratch.
    ids, reasoning = _sequence(small.gen, thought, POST, "answer")
    want_row = eager_row(tiny_small, thought, ids, opts.layer)
    positions = range(thought.input_tokens, thought.input_tokens + len(reasoning))
    want = select_by_mass(reasoning_weights(want_row, positions), opts.delta)
    assert trace.kept_tokens == len(want) and 1 <= len(want) < len(reasoning)
    context = large.requests[-1].context
    assert context == tiny_small.tokenizer.decode([reasoning[k] for k in want], skip_special_tokens=True)
    if verify == "answer":
        row = small.results[2].attention[opts.layer]
        torch.testing.assert_close(row, want_row, atol=1e-4, rtol=0)


def test_real_models_route_and_trace_are_consistent(tiny_small, tiny_large, chart_image):
    """Two real tiny models: whichever route is taken, the trace matches it."""
    cascade = _cascade(HFGenerator(tiny_small), HFGenerator(tiny_large))
    trace = cascade.answer("Which bar is tallest?", [chart_image], CHARTQA, POST, 4)
    # Two random models disagree at every stage (their texts are random tokens): the transfer route.
    assert trace.route == "transfer" and trace.route in ROUTES
    assert [(c.role, c.mode) for c in trace.calls] == [("small", "simple"), ("large", "simple"), ("small", "think"),
                                                       ("small", "answer"), ("large", "transfer")]
    assert trace.calls[2].answer == ""  # a random reasoning names no answer
    assert trace.totals()["latency"] <= trace.wall_seconds + 1e-6


def test_same_model_on_both_sides_agrees_at_simple(tiny_small, chart_image):
    gen = HFGenerator(tiny_small)
    trace = _cascade(gen, gen).answer("Which bar is tallest?", [chart_image], CHARTQA, POST, 4)
    assert trace.route == "simple"


def test_config_errors():
    with pytest.raises(ValueError, match="sparse transfer needs SparseOptions"):
        CascadeConfig(transfer="sparse")
    with pytest.raises(ValueError, match="verify must be one of"):
        CascadeConfig(verify="vote")
    with pytest.raises(ValueError, match="agree must be one of"):
        CascadeConfig(agree="loose")
    assert CascadeConfig(agree="strict").to_dict()["agree"] == "strict"
    assert CascadeConfig().to_dict()["agree"] == "paper"


@pytest.mark.parametrize("end", ["length", "eos"])
def test_full_and_sparse_count_reasoning_tokens_alike(tiny_small, chart_image, monkeypatch, end):
    """Trace.reasoning_tokens is the reasoning's tokens without a closing stop token, for full transfer as
    for sparse (kept_tokens is a share of the same count)."""
    gen = HFGenerator(tiny_small)
    if end == "eos":  # the Think call stops at one of its own tokens
        think = gen.generate(Request("Which bar is tallest?", [chart_image], "think", POST, 8, keep_cache=True))
        token = int(think.sequence[0, think.input_tokens + 4])
        monkeypatch.setattr(tiny_small.model.generation_config, "eos_token_id", [*tiny_small.eos_token_ids, token])
    traces = {}
    for transfer in ("full", "sparse"):
        small = Keep(gen)
        sparse = SparseOptions(layer=2, delta=0.5) if transfer == "sparse" else None
        cascade = _cascade(small, Scripted(simple="zebra", transfer="B"), transfer=transfer, sparse=sparse)
        traces[transfer] = cascade.answer("Which bar is tallest?", [chart_image], CHARTQA, POST, 4)
        thought = small.results[1]
        assert thought.stopped == (end == "eos")
        assert traces[transfer].route == "transfer"
        assert traces[transfer].reasoning_tokens == thought.output_tokens - (end == "eos")
    assert traces["full"].reasoning_tokens == traces["sparse"].reasoning_tokens
    assert 1 <= traces["sparse"].kept_tokens <= traces["sparse"].reasoning_tokens
