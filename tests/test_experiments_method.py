"""Tables 8 and 10 end to end on the CPU preset (in-process, tiny settings): rows, tables, routes."""
import json
from pathlib import Path

import pytest

from mai import MaiError

REPO = Path(__file__).resolve().parent.parent


def _rows(run):
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


TINY = ["--preset", "cpu", "--limit", "1", "--think-tokens", "6", "--simple-tokens", "3", "--wandb", "disabled"]


def test_table10_cpu_sparse_routes_sum_to_one(tmp_path, experiment):
    mod = experiment("10_mai")
    mod.main(TINY + ["--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path),
                     "--transfer", "sparse", "--sparse-layer", "2", "--delta", "0.8"])
    run = tmp_path / "runs" / "10_mai" / "cpu"
    rows = _rows(run)
    assert {r["kind"] for r in rows} == set(mod.SYSTEMS) and not any(r["error"] for r in rows)
    mai_rows = [r for r in rows if r["kind"] == "MAI"]
    for r in mai_rows:
        assert r["route"] in ("simple", "reasoning", "transfer")
        assert r["latency"] == pytest.approx(sum(c["result"]["latency"] for c in r["trace"]))
        if r["route"] == "transfer":
            assert 1 <= r["kept_tokens"] <= r["reasoning_tokens"]
    table = (tmp_path / "paper_tables" / "table10_mai.cpu.md").read_text()
    assert "RANDOM weights" in table and "Peak memory" in table
    from analysis.table10 import summarize

    df = summarize(rows)
    mai = df[df.system == "MAI"]
    assert ((mai.route_simple + mai.route_reasoning + mai.route_transfer).astype(float) == 1.0).all()
    ref = df[df.system.str.endswith("large-R")]
    assert (ref.speedup_vs_R.astype(float) == 1.0).all()
    config = json.loads((run / "config.json").read_text())
    assert config["cascade"]["sparse"] == {"layer": 2, "delta": 0.8, "heads": "mean", "sink": "keep"}


def test_table10_rejects_a_layer_the_small_model_lacks(tmp_path, experiment):
    with pytest.raises(MaiError, match="--sparse-layer 9 is outside the small model's layers 0..3"):
        experiment("10_mai").main(TINY + ["--out", str(tmp_path), "--transfer", "sparse", "--sparse-layer", "9"])


def test_table8_cpu(tmp_path, experiment):
    experiment("08_reasoning_transfer").main(TINY + ["--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)])
    rows = _rows(tmp_path / "runs" / "08_reasoning_transfer" / "cpu")
    assert sorted({r["kind"] for r in rows}) == ["large-S", "small-R", "transfer"]
    transfer = [r for r in rows if r["kind"] == "transfer"]
    assert all(r["small_output_tokens"] > 0 and r["reasoning"] for r in transfer)
    assert "gain_vs_large_S" in (tmp_path / "paper_tables" / "table8_reasoning_transfer.cpu.md").read_text()


def test_table9_one_small_forward_per_example_serves_every_layer(tmp_path, monkeypatch, experiment):
    mod = experiment("09_layer_ablation")
    calls = []
    real = mod.attention_over_reasoning
    monkeypatch.setattr(mod, "attention_over_reasoning", lambda *a, **k: calls.append(a[3]) or real(*a, **k))
    mod.main(TINY + ["--limit", "2", "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)])
    assert calls == [[0, 1, 2, 3], [0, 1, 2, 3]]  # two examples, one capture each over all four layers
    rows = _rows(tmp_path / "runs" / "09_layer_ablation" / "cpu")
    assert sorted({r["system"] for r in rows}) == ["Full", "L0", "L1", "L2", "L3", "tiny-large-S"]
    for r in rows:
        if r["layer"] is not None:
            assert 1 <= r["kept_tokens"] <= r["reasoning_tokens"]
            assert r["kept_fraction"] == pytest.approx(r["kept_tokens"] / r["reasoning_tokens"])
    assert (tmp_path / "figures" / "table9_layer_ablation.cpu.png").exists()


def test_mai_answer_cli_prints_route_and_trace(tmp_path, capsys, chart_image):
    from mai.__main__ import answer

    chart_image.save(tmp_path / "chart.png")
    answer(["--preset", "cpu", "--image", str(tmp_path / "chart.png"), "--question", "Which bar is tallest?",
            "--think-tokens", "4", "--simple-tokens", "3", "--json"])
    trace = json.loads(capsys.readouterr().out)
    assert trace["route"] in ("simple", "reasoning", "transfer")
    assert trace["calls"][0]["model"] == "tiny-small" and trace["calls"][1]["model"] == "tiny-large"


def test_mai_answer_bad_image_is_one_line(tmp_path):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "mai", "answer", "--preset", "cpu", "--image", str(tmp_path / "no.png"),
                          "--question", "q"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 2 and out.stderr.strip().startswith("error: cannot read image")
    assert len(out.stderr.strip().splitlines()) == 1
