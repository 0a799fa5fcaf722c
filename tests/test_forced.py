"""Forced routes (10_mai --force-routes): fractions parsed strictly, routes drawn deterministically in
proportion, and the cascade making every real call of the forced route at forced output lengths."""
import pytest

from mai import MaiError
from mai.attention import SparseOptions
from mai.benchmarks import get_benchmark
from mai.cascade import Cascade, CascadeConfig
from mai.forced import ForcedLengths, draw_route, parse_fractions
from mai.generation import HFGenerator, Request

PAPER = dict(simple=0.55, reasoning=0.15, transfer=0.30)
POST = "\nAnswer the question using a single word or phrase."
CHARTQA = get_benchmark("chartqa").agreement  # the questions below are about charts


def test_fractions_are_parsed_strictly():
    assert parse_fractions("simple=0.55,reasoning=0.15,transfer=0.30") == pytest.approx(PAPER)
    for bad in ("simple=0.5,reasoning=0.2", "simple=0.5,reasoning=0.2,transfer=0.2", "simple=1.2,reasoning=-0.2,"
                "transfer=0", "simple=0.5,thinking=0.2,transfer=0.3", "simple=half,reasoning=0.2,transfer=0.3"):
        with pytest.raises(MaiError):
            parse_fractions(bad)


def test_routes_are_drawn_deterministically_in_proportion():
    ids = [f"synth-chartqa/{i}" for i in range(4000)]
    routes = [draw_route(i, PAPER, seed=0) for i in ids]
    assert routes == [draw_route(i, PAPER, seed=0) for i in ids]  # the same id takes the same route
    for route, fraction in PAPER.items():
        assert routes.count(route) / len(ids) == pytest.approx(fraction, abs=0.03)
    assert [draw_route(i, PAPER, seed=1) for i in ids] != routes  # the seed draws anew
    assert {draw_route(i, dict(simple=0.0, reasoning=0.0, transfer=1.0)) for i in ids[:50]} == {"transfer"}


@pytest.fixture(scope="module")
def forced(tiny_small, tiny_large):
    return ForcedLengths(HFGenerator(tiny_small)), ForcedLengths(HFGenerator(tiny_large))


def test_forced_lengths_decode_to_the_limit(forced, chart_image):
    small, _ = forced
    result = small.generate(Request(question="What is shown?", images=[chart_image], max_new_tokens=7))
    assert result.output_tokens == 7
    # What forces it: every request goes on with min_new_tokens = max_new_tokens (the generator then stops on
    # length alone, mai.generation); the caller's request is left as it was.
    request = Request(question="q", max_new_tokens=5)
    assert small._forced(request).min_new_tokens == 5 and request.min_new_tokens == 0
    assert small.loaded.label == "tiny-small"  # the wrapped generator's model, for sparse transfer


@pytest.mark.parametrize("route,modes", [
    ("simple", ["simple", "simple"]),
    ("reasoning", ["simple", "simple", "think", "answer"]),
    ("transfer", ["simple", "simple", "think", "answer", "transfer"]),
])
def test_each_forced_route_makes_its_real_calls(forced, chart_image, route, modes):
    small, large = forced
    cascade = Cascade(small, large, CascadeConfig(think_tokens=6, answer_tokens=3), "tiny-small", "tiny-large")
    trace = cascade.answer("What is the tallest bar?", [chart_image], CHARTQA, POST, 4, route=route)
    assert trace.route == route and [c.mode for c in trace.calls] == modes
    limits = dict(simple=4, think=6, answer=3, transfer=4)
    assert [c.result["output_tokens"] for c in trace.calls] == [limits[m] for m in modes]
    for c in trace.calls:
        if c.mode == "answer":  # the second stage continues the Think call's kept cache
            assert c.result["cached_tokens"] > 0
        if c.mode == "transfer":  # the large model's Simple prompt with the small model's reasoning prepended
            simple = trace.calls[1].result["input_tokens"]
            assert c.result["input_tokens"] >= simple + 6 - 1


def test_forced_sparse_transfer_with_reasoning_verification(forced, chart_image):
    small, large = forced
    config = CascadeConfig(think_tokens=6, verify="reasoning", transfer="sparse",
                           sparse=SparseOptions(layer=1, delta=0.8))
    trace = Cascade(small, large, config).answer("What is the tallest bar?", [chart_image], CHARTQA,
                                                 POST, 4, route="transfer")
    assert trace.route == "transfer" and trace.calls[-1].mode == "transfer" and trace.kept_tokens is not None
    assert "answer" not in [c.mode for c in trace.calls]  # verify=reasoning has no second stage


def test_an_unknown_forced_route_is_refused(forced):
    with pytest.raises(ValueError):
        Cascade(*forced, CascadeConfig(think_tokens=4)).answer("q", [], "pope", POST, 2, route="thinking")
