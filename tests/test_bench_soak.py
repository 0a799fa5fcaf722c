"""scripts/bench_soak.py, short: a served tiny pair (transformers backend) under valid requests interleaved with
every kind of bad traffic, then beside a long but legal question. The script itself checks what the issue asks and exits 1 otherwise; the test reads
its summary too, so that a check the script forgot still fails here."""
import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("openai")
SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_soak.py"


def test_a_short_soak_keeps_valid_answers_10_mai_s_and_the_server_clean(capsys):
    spec = importlib.util.spec_from_file_location("bench_soak", SCRIPT)
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    code = soak.main(["--preset", "cpu", "--valid", "3", "--bad-per-valid", "3", "--client-timeout", "120",
                      "--ready-timeout", "120", "--long-words", "3000", "--server-arg=--threads", "--server-arg=1"])
    summary = json.loads(capsys.readouterr().out)
    assert code == 0 and summary["failures"] == [], summary
    assert summary["answers_equal_10_mai"] == {"clean": 3, "mixed": 3, "long": 3, "of": 3}
    # Issue 40: the short queries beside a long but legal one, against alone, in the same run.
    assert summary["long_sent"]["statuses"] and set(summary["long_sent"]["statuses"]) == {200}
    assert summary["latency_ratio_long"]["p99"] <= 3, summary["latency_s"]
    assert set(summary["bad_sent"]) == set(soak.bad_kinds("mai")) and sum(summary["bad_sent"].values()) >= 9
    assert summary["bad_statuses"]["over_context"] == [400] and summary["bad_statuses"]["deep_json"] == [400]
    assert summary["bad_statuses"]["oversized"] == [413] and summary["bad_statuses"]["timeout"] == [499]
    assert (summary["queue_depth_end"], summary["running_end"]) == (0, 0)
    assert summary["requests_counted"] == summary["requests_expected"]
    assert summary["requests_counted"]["499"] == summary["bad_sent"]["disconnect"] + summary["bad_sent"]["timeout"]


def test_the_references_ask_each_question_in_the_served_styles():
    """What the soak compares a served answer with is 10_mai's computation of the same question in the same
    styles: with the few-shot Think prompt (cpu-real's), the reference's calls carry the prompts the server's
    carry. Built bare, its examples were asked with the instruction Think prompt, and on cpu-real one of four
    answers, the one that reached the small model's reasoning, differed from the served one in every phase."""
    from mai.serving import server

    soak = importlib.util.module_from_spec(importlib.util.spec_from_file_location("bench_soak", SCRIPT))
    soak.__spec__.loader.exec_module(soak)
    flags = ["--benchmark", "bbh_object_counting", "--think-prompt", "fewshot-cot", "--think-tokens", "8",
             "--threads", "1"]
    args = soak.parse_args(["--preset", "cpu", "--valid", "3", *(f"--server-arg={f}" for f in flags)])
    questions = soak.QUESTIONS[:3]
    references = soak.references(args, questions)
    system, close, _ = server.build(server.parse(["--preset", "cpu", *flags]))
    try:
        traces = [system.answer(q, []) for q in questions]
    finally:
        if close is not None:
            close()
    calls = lambda trace: [(c["role"], c["mode"], c["result"]["input_tokens"]) for c in trace]  # noqa: E731
    assert any(c.mode == "think" for t in traces for c in t.calls)  # a question reached the few-shot Think prompt
    for trace, ref in zip(traces, references):
        assert calls(trace.to_dict()["calls"]) == calls(ref["trace"])
        assert (trace.route, trace.prediction) == (ref["route"], ref["text"])
