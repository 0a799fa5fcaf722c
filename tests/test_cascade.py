"""The cascade takes each route when it should, and its trace accounts for every call.

Routing depends on what two models answer, which random weights cannot be made to say; so routing is
tested with a scripted large model (a test double answering fixed texts) while the small model is the
real tiny Qwen3-VL wherever its machinery (KV reuse, attention capture) is what the branch exercises.
"""
import pytest

from mai.attention import SparseOptions
from mai.cascade import ROUTES, Cascade, CascadeConfig
from mai.generation import HFGenerator, Request, Result

POST = "\nAnswer the question using a single word or phrase."
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
    trace = _cascade(small, large).answer("Is there a cat?", [], "pope", POST, 8)
    assert trace.route == "simple" and trace.answer == "yes"
    assert [(c.role, c.mode) for c in trace.calls] == [("small", "simple"), ("large", "simple")]
    totals = trace.totals()
    assert totals["large_output_tokens"] == 3 and totals["small_calls"] == 1
    assert totals["latency"] == pytest.approx(2 * sum(TIMES.values()))


def test_agree_after_thinking_uses_the_second_stage():
    small = Scripted(simple="no", think="There is a cat on the sofa. The answer is yes.", answer="yes")
    large = Scripted(simple="Yes")
    trace = _cascade(small, large).answer("Is there a cat?", [], "pope", POST, 8)
    assert trace.route == "reasoning" and trace.answer == "Yes"  # extraction keeps a plain answer as is
    assert [c.mode for c in trace.calls] == ["simple", "simple", "think", "answer"]
    assert small.requests[1].keep_cache and small.requests[2].reuse is not None


def test_reasoning_variant_reads_the_answer_off_the_reasoning():
    small = Scripted(simple="no", think="A cat sits there. The answer is yes.", answer="no")
    trace = _cascade(small, Scripted(simple="yes"), verify="reasoning").answer("Cat?", [], "pope", POST, 8)
    assert trace.route == "reasoning"
    assert [c.mode for c in trace.calls] == ["simple", "simple", "think"]  # no second stage


def test_full_transfer_prepends_the_whole_reasoning():
    reasoning = "The bars are 3, 5 and 4. The tallest is B. The answer is B."
    small = Scripted(simple="A", think=reasoning, answer="A")
    large = Scripted(simple="C", transfer="B")
    trace = _cascade(small, large).answer("Which bar is tallest?", [], "relaxed", POST, 8)
    assert trace.route == "transfer" and trace.answer == "B"
    assert large.requests[-1].context == reasoning and large.requests[-1].mode == "simple"
    assert [(c.role, c.mode) for c in trace.calls][-1] == ("large", "transfer")
    assert trace.totals()["large_calls"] == 2


def test_sparse_transfer_with_the_real_small_model(tiny_small, chart_image):
    """Small: tiny Qwen3-VL (think, second stage from its cache, attention capture); large: scripted to
    disagree, so the cascade must reach sparse transfer."""
    large = Scripted(simple="zebra", transfer="B")
    opts = SparseOptions(layer=2, delta=0.5)
    cascade = _cascade(HFGenerator(tiny_small), large, transfer="sparse", sparse=opts)
    trace = cascade.answer("Which bar is tallest?", [chart_image], "relaxed", POST, 4)
    assert trace.route == "transfer"
    assert [c.mode for c in trace.calls] == ["simple", "simple", "think", "answer", "attention", "transfer"]
    assert trace.reasoning_tokens >= 1 and 1 <= trace.kept_tokens <= trace.reasoning_tokens
    context = large.requests[-1].context
    assert context is not None and len(context) <= len(trace.calls[2].result["text"])
    assert trace.calls[4].result["input_tokens"] > trace.calls[2].result["input_tokens"]


def test_real_models_route_and_trace_are_consistent(tiny_small, tiny_large, chart_image):
    """Two real tiny models: whichever route is taken, the trace matches it."""
    cascade = _cascade(HFGenerator(tiny_small), HFGenerator(tiny_large))
    trace = cascade.answer("Which bar is tallest?", [chart_image], "relaxed", POST, 4)
    assert trace.route in ROUTES
    expected_calls = {"simple": 2, "reasoning": 4, "transfer": 5}[trace.route]
    assert len(trace.calls) == expected_calls
    assert trace.totals()["latency"] <= trace.wall_seconds + 1e-6


def test_same_model_on_both_sides_agrees_at_simple(tiny_small, chart_image):
    gen = HFGenerator(tiny_small)
    trace = _cascade(gen, gen).answer("Which bar is tallest?", [chart_image], "relaxed", POST, 4)
    assert trace.route == "simple"


def test_config_errors():
    with pytest.raises(ValueError, match="sparse transfer needs SparseOptions"):
        CascadeConfig(transfer="sparse")
    with pytest.raises(ValueError, match="verify must be one of"):
        CascadeConfig(verify="vote")
