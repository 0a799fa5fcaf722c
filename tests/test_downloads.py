"""What a paper-preset run says before it downloads (mai.downloads, mai.cli's plan) and the GPU time it quotes
(analysis.gpu_estimate): the sizes are the released shapes', the plan names every CPU preset, and --plan stops
before anything loads."""
from __future__ import annotations

import pytest

from analysis import gpu_estimate
from mai import cli
from mai.downloads import HUB_DATASETS, HUB_MODELS, hub_benchmarks, notice
from test_released_shapes import PUBLISHED  # noqa: E402 (tests/ is on sys.path)

SMALL, LARGE = "Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-8B-Instruct"


def test_model_sizes_are_the_released_shapes_counts():
    for model, known in HUB_MODELS.items():
        count, exact = PUBLISHED[known.shape]
        assert exact and known.parameters == count, model
        assert known.bytes == 2 * known.parameters  # bf16


def test_notice_lists_models_and_datasets_with_sizes_and_a_total():
    lines = notice([SMALL, LARGE], ["pope"], {}, None)
    text = "\n".join(lines)
    assert SMALL in text and LARGE in text and "lmms-lab/POPE test" in text and "9,000 questions" in text
    total = (HUB_MODELS[SMALL].bytes + HUB_MODELS[LARGE].bytes + HUB_DATASETS["pope"].bytes) / 1e9
    assert lines[-1].strip() == f"in all {total:.1f} GB (a second run reads the cache)"


def test_nothing_from_the_hub_means_no_notice(tmp_path):
    assert notice(["tiny-small", "tiny-large"], ["synth-pope"], {}, 6) == []
    local = tmp_path / "Qwen3-VL-2B-Instruct"
    local.mkdir()
    assert notice([str(local)], ["pope"], {"pope": "/data/pope.parquet"}, None) == []
    assert hub_benchmarks(["pope", "chartqa"], {"pope": "x.parquet"}) == ["chartqa"]


def test_an_unrecorded_size_makes_the_total_a_lower_bound():
    text = "\n".join(notice([SMALL], ["mmbench"], {}, None))
    assert "size not recorded" in text and "in all at least" in text


def test_the_estimate_grows_with_questions_layers_and_reasoning():
    base = gpu_estimate.layer_ablation(SMALL, LARGE, 100, 1024, 28)
    assert gpu_estimate.layer_ablation(SMALL, LARGE, 200, 1024, 28).seconds == pytest.approx(2 * base.seconds)
    assert gpu_estimate.layer_ablation(SMALL, LARGE, 100, 1024, 5).seconds < base.seconds
    assert gpu_estimate.layer_ablation(SMALL, LARGE, 100, 256, 28).seconds < base.seconds
    # Never below the small model's reasoning alone at the bandwidth floor (every weight read per token).
    floor = 100 * 1023 * HUB_MODELS[SMALL].bytes / gpu_estimate.MEMORY_BANDWIDTH[gpu_estimate.GPU]
    assert base.seconds > floor
    assert base.memory_gb > (HUB_MODELS[SMALL].bytes + HUB_MODELS[LARGE].bytes) / 1e9


def test_plan_prints_and_stops_before_anything_loads(experiment, capsys, tmp_path):
    with pytest.raises(SystemExit) as done:
        experiment("09_layer_ablation").main(["--plan", "--out", str(tmp_path)])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "It will download" in out and "lmms-lab/POPE" in out and "by the latency model" in out
    for preset in ("cpu", "cpu-real", "cpu-smollm2"):
        assert f"--preset {preset}:" in out
    assert not any(tmp_path.iterdir())  # no run directory, no data, no model


def test_plan_of_a_cpu_preset_downloads_nothing(experiment, capsys, tmp_path):
    with pytest.raises(SystemExit):
        experiment("10_mai").main(["--plan", "--preset", "cpu", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "downloads nothing" in out and "To run on a CPU" not in out


def test_preset_summary_reads_the_presets():
    preset = cli.Preset(("a", "b"), ("synth-pope",), limit=3, extra=dict(small="a", large="b"))
    assert cli.preset_summary("cpu", preset).endswith("models a, b; benchmarks synth-pope; 3 examples each")
    assert "every example" in cli.preset_summary("paper", cli.Preset(("x",), ("pope",), limit=None))
