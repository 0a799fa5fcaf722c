"""Rows carry their wall-clock span (UTC) and their calls' output token ids (issue 37): the order of commits and rows,
and batch ties, can be read off the rows alone."""
from mai.benchmarks import get_benchmark
from mai.data import Example
from mai.evaluate import scored_row


def _example():
    return Example(id="gsm8k-test-0", benchmark="gsm8k", question="2 + 3?", references=["5"], images=[],
                   text_only=True)


def test_a_cascade_row_spans_its_calls():
    calls = [dict(role="small", mode="simple", result=dict(text="5", started="2026-12-06T16:00:01.000+00:00",
                                                           ended="2026-12-06T16:00:02.000+00:00", output_ids=[20])),
             dict(role="large", mode="simple", result=dict(text="5", started="2026-12-06T16:00:00.500+00:00",
                                                           ended="2026-12-06T16:00:03.000+00:00", output_ids=[20]))]
    row = scored_row("k", _example(), get_benchmark("gsm8k"), {"system": "MAI"}, dict(text="5", trace=calls))
    assert (row["started"], row["ended"]) == ("2026-12-06T16:00:00.500+00:00", "2026-12-06T16:00:03.000+00:00")
    assert row["score"] == 1.0


def test_a_single_call_row_keeps_its_own_span_and_ids(tiny_small):
    from mai.generation import HFGenerator, Request

    result = HFGenerator(tiny_small).generate(Request(question="Is 4 even?", max_new_tokens=3))
    summary = result.summary()
    assert summary["started"] <= summary["ended"] and len(summary["output_ids"]) == result.output_tokens == 3
    assert summary["stopped"] is False
    row = scored_row("k", _example(), get_benchmark("gsm8k"), {"model": "tiny"}, summary)
    assert row["started"] == summary["started"] and row["output_ids"] == summary["output_ids"]
