"""Figure 1 and the harness-overhead check on the CPU preset (tiny settings)."""
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_figure1_reuses_table7_rows(tmp_path, monkeypatch, experiment):
    args = ["--preset", "cpu", "--limit", "1", "--think-tokens", "4", "--simple-tokens", "3", "--wandb", "disabled",
            "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)]
    experiment("07_prompt_modes").main(args)
    results = tmp_path / "runs" / "07_prompt_modes" / "cpu" / "results.jsonl"
    before = results.read_text()
    from mai import models

    def no_loading(*a, **k):
        raise AssertionError("Figure 1 must reuse Table 7's finished rows without loading a model")

    monkeypatch.setattr(models, "load_model", no_loading)
    experiment("01_tokens_vs_accuracy").main(args)
    assert results.read_text() == before
    assert (tmp_path / "figures" / "figure1_tokens_vs_accuracy.cpu.png").stat().st_size > 1000
    assert json.loads((tmp_path / "runs" / "07_prompt_modes" / "cpu" / "models.json").read_text())


def test_overhead_check_fails_when_the_harness_is_slow(tmp_path, monkeypatch, capsys, experiment):
    """00_overhead's own check exits non-zero when the harness (here: reading each call's answer, slowed by
    0.2 s a call) adds 5% or more to the models' time; what it writes accounts for every query."""
    import time

    from mai import answers

    read = answers.Matcher.read

    def slow_read(*a, **k):
        time.sleep(0.2)
        return read(*a, **k)

    monkeypatch.setattr(answers.Matcher, "read", slow_read)
    out = tmp_path / "overhead.json"
    with pytest.raises(SystemExit) as code:
        experiment("00_overhead").main(["--limit", "1", "--benchmarks", "synth-pope", "--think-tokens", "4",
                                        "--simple-tokens", "3", "--json", str(out)])
    assert code.value.code == 1
    assert "OVER the 1.05 bound" in capsys.readouterr().out
    result = json.loads(out.read_text())
    (query,) = result["queries"]
    assert query["wall_s"] - query["calls_s"] >= 0.2 * 2  # the Simple answers' sleeps are harness time
    assert result["ratio"] == pytest.approx(query["wall_s"] / query["calls_s"]) and not result["ok"]
