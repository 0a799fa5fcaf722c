"""Figure 1 and the harness-overhead check on the CPU preset (tiny settings)."""
import json
from pathlib import Path

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


def test_overhead_ratio_is_measured(capsys, experiment):
    ratio = experiment("00_overhead").main(["--limit", "1", "--benchmarks", "synth-pope", "--think-tokens", "4",
                                         "--simple-tokens", "3"])
    assert ratio >= 1.0  # the cascade's wall time contains its calls' own times
    assert "harness overhead ratio" in capsys.readouterr().out
