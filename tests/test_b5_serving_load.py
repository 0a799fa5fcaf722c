"""experiments/b5_serving_load.py's own pieces, without a server: the flags, the /metrics arithmetic, the /proc
sampler on a real process tree, and analysis/tableb5's speedup (the served runs are in the README's commands)."""
import math
import os
import subprocess
import sys
import time

import pytest

from mai import MaiError

METRICS_BEFORE = """# HELP mai_routes_total Answered queries by route
# TYPE mai_routes_total counter
mai_routes_total{route="simple"} 1.0
mai_tokens_total{kind="output",model="tiny-large",role="large"} 10.0
mai_answer_seconds_count 1.0
mai_answer_seconds_sum 2.0
"""
METRICS_AFTER = """mai_routes_total{route="simple"} 4.0
mai_routes_total{route="transfer"} 2.0
mai_tokens_total{kind="output",model="tiny-large",role="large"} 70.0
mai_answer_seconds_count 6.0
mai_answer_seconds_sum 12.0
mai_queue_wait_seconds_count 0.0
"""


@pytest.fixture(scope="module")
def b5(experiment):
    return experiment("b5_serving_load")


def _parse(text):
    import re

    out = {}
    for line in text.splitlines():
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$', line.strip())
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def test_metrics_delta_counts_only_this_rates_queries(b5):
    delta = b5.metrics_delta(_parse(METRICS_BEFORE), _parse(METRICS_AFTER))
    assert delta["routes"] == {"simple": 3, "transfer": 2}
    assert delta["route_fractions"] == {"simple": 0.6, "transfer": 0.4}
    assert delta["tokens"] == {"output,tiny-large,large": 60}
    assert delta["answer_mean_s"] == (12.0 - 2.0) / 5
    assert delta["queue_wait_mean_s"] is None  # no queries observed: no mean, not 0


def test_rates_and_bad_flags_are_one_line(b5, tmp_path):
    assert b5.rate_list("0.5,inf") == [0.5, math.inf]
    assert b5.rate_name(math.inf) == "inf" and b5.rate_name(0.25) == "0.25"
    with pytest.raises(Exception, match="positive"):
        b5.rate_list("0,1")
    with pytest.raises(MaiError, match="unknown system"):
        b5.parse_args(["--systems", "mai,large-X", "--vllm-python", sys.executable])
    with pytest.raises(MaiError, match="no vLLM Python"):
        b5.parse_args(["--vllm-python", str(tmp_path / "none")])


def test_sampler_mean_load_never_exceeds_its_max(b5):
    """CI once failed here: three loads of 0.72 averaged by sum()/n to 0.7200000000000001 > max."""
    sampler = b5.Sampler(os.getpid())
    for loads in ([0.72] * 3, [0.1] * 10, [3.33, 3.33, 3.33, 3.33, 3.33, 3.33, 3.33]):
        sampler.loads = loads
        s = sampler.summary()
        assert min(loads) <= s["load_avg_mean"] <= s["load_avg_max"] == max(loads)


def test_sampler_reads_the_whole_process_tree(b5):
    """A parent with a child that holds ~200 MiB: the tree's peak RSS and VmHWM sum include the child."""
    code = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
            "'b = bytearray(200 << 20); import time; time.sleep(30)']); time.sleep(30)")
    parent = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.time() + 20
        while len(b5.tree(parent.pid)) < 2 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        with b5.Sampler(parent.pid) as sampler:
            time.sleep(0.6)
        s = sampler.summary()
        assert s["processes"] == 2
        assert s["tree_rss_peak_gib"] > 0.19 and s["sum_vmhwm_gib"] >= s["tree_rss_peak_gib"] * 0.99
        assert 0 < s["tree_pss_peak_gib"] <= s["tree_rss_peak_gib"]
        assert s["load_avg_max"] >= s["load_avg_mean"] >= 0
    finally:
        for pid in b5.tree(parent.pid)[1:]:
            subprocess.run(["kill", str(pid)], check=False)
        parent.kill()
        parent.wait()


def test_table_speedup_is_large_R_over_the_system_at_the_same_rate():
    from analysis import tableb5

    def row(system, rate, mean, p50):
        return dict(system=system, rate=rate, completed=4, num_prompts=4, request_throughput=1.0,
                    output_throughput=10.0, latency_mean_s=mean, latency_p50_s=p50, latency_p99_s=p50 * 2,
                    answer_p50_s=p50, route_fractions={"simple": 0.5, "transfer": 0.5} if system == "mai" else {},
                    tree_pss_peak_gib=1.0, tree_rss_peak_gib=1.5, sum_vmhwm_gib=2.0, load_avg_mean=2.0)

    df = tableb5.summarize([row("large-R", "inf", 8.0, 6.0), row("mai", "inf", 2.0, 3.0), row("mai", "1", 1.0, 1.0)])
    mai_inf = df[(df.system == "mai") & (df.rate == "inf")].iloc[0]
    assert mai_inf.speedup_vs_large_R_mean == 4.0 and mai_inf.speedup_vs_large_R_p50 == 2.0
    assert mai_inf.routes_pct == "simple 50 / transfer 50"
    assert df[df.rate == "1"].speedup_vs_large_R_mean.isna().all()  # no large-R row at that rate


def test_questions_come_from_a_given_task_file_and_tables_default_to_the_run(b5, tmp_path):
    """--data-files (here the shipped BIG-bench examples) feeds the load generator's dataset; without
    --report-dir the table goes to the run's report/, not the committed paper_tables/ (parse leaves it None)."""
    import json
    from argparse import Namespace
    from pathlib import Path

    task = Path(__file__).resolve().parent.parent / "mai" / "assets" / "bigbench" / "object_counting.json"
    args = Namespace(benchmark="object_counting", num_prompts=2, data_files=str(task))
    questions = b5.write_dataset(args, tmp_path / "questions.jsonl")
    shipped = [e["input"] for e in json.loads(task.read_text())["examples"]]
    assert len(questions) == 2 and set(questions) <= set(shipped)
    assert [json.loads(line)["prompt"] for line in (tmp_path / "questions.jsonl").read_text().splitlines()] == questions
    args.num_prompts = 4
    with pytest.raises(MaiError, match="has 3 examples, fewer than --num-prompts 4"):
        b5.write_dataset(args, tmp_path / "questions.jsonl")
    assert b5.parse_args(["--vllm-python", sys.executable]).report_dir is None
