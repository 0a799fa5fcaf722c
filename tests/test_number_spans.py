"""Number-aware sparse transfer beside the paper's (issue 37): Table 8's "(numbers)" row and Table 9's "L<k> numbers"
rows read the same reasoning and the same attention capture as the token rows, in both orders, and keep at least
what the paper's selection keeps."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(script, args, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, str(REPO / "experiments" / script), "--preset", "cpu", "--limit", "1",
                          "--benchmarks", "synth-chartqa", "--out", str(tmp_path / "runs"), "--report-dir",
                          str(tmp_path), "--wandb", "disabled", "--think-tokens", "8", "--simple-tokens", "2", *args],
                         capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


def _rows(tmp_path, experiment, run):
    return [json.loads(line) for line in (tmp_path / "runs" / experiment / run / "results.jsonl").open()]


@pytest.mark.parametrize("order", ["example", "stage"])
def test_table8_number_row_reads_the_token_rows_reasoning(tmp_path, order):
    _run("08_reasoning_transfer.py", ["--sparse-layer", "1", "--spans", "token,number", "--order", order,
                                      "--run-name", order], tmp_path)
    rows = {r["kind"]: r for r in _rows(tmp_path, "08_reasoning_transfer", order)}
    token, number = rows["sparse transfer"], rows["sparse transfer (number)"]
    assert token["calls"][0]["result"]["output_ids"] == number["calls"][0]["result"]["output_ids"]
    assert token["calls"][0]["result"]["started"] == number["calls"][0]["result"]["started"]  # one reasoning call
    assert number["kept_tokens"] >= token["kept_tokens"]
    assert number["calls"][-1]["result"]["started"] >= token["calls"][-1]["result"]["ended"]  # its own answer


def test_table9_number_rows_beside_each_layer(tmp_path):
    out = _run("09_layer_ablation.py", ["--layers", "1,2", "--spans", "token,number"], tmp_path)
    rows = _rows(tmp_path, "09_layer_ablation", "cpu")
    systems = {r["system"]: r for r in rows}
    assert {"L1", "L2", "L1 numbers", "L2 numbers"} <= set(systems)
    assert systems["L1 numbers"]["span"] == "number"
    assert systems["L1 numbers"]["kept_tokens"] >= systems["L1"]["kept_tokens"]
    table = (tmp_path / "paper_tables" / "table9_layer_ablation.cpu.md").read_text()
    assert "| span" in table and table.index("| L1 ") < table.index("| L1 numbers")
    assert "--spans takes token" in subprocess.run(
        [sys.executable, str(REPO / "experiments" / "09_layer_ablation.py"), "--preset", "cpu", "--spans", "number"],
        capture_output=True, text=True).stderr
