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
