"""The latency model: its arithmetic, and predictions made from a real profile and a real cascade run."""
from pathlib import Path

import pytest

from analysis.latency_model import Cost, predict_call, predict_run, predict_speedup, profile

REPO = Path(__file__).resolve().parent.parent


def test_call_cost_arithmetic():
    c = Cost(preprocess=0.01, vision=0.1, forward=0.05, prefill_per_token=0.001, decode_per_token=0.05)
    assert c.call(100, 11) == pytest.approx(0.01 + 0.1 + (0.05 + 0.1) + 0.5)
    assert c.call(100, 1, image=False) == pytest.approx(0.01 + 0.05 + 0.1)  # the first token comes from the prefill
    # A second stage prefills only what its cache lacks and re-encodes no image.
    answer = dict(input_tokens=300, cached_tokens=280, output_tokens=3)
    assert predict_call(c, answer, "answer") == pytest.approx(0.01 + (0.05 + 0.02) + 0.1)


def test_speedup_follows_routes():
    small = Cost(0.0, 0.0, 0.01, 0.0001, 0.01)
    large = Cost(0.0, 0.0, 0.04, 0.0004, 0.04)
    all_simple = predict_speedup(small, large, 300, 400, 600, route_simple=1.0, route_reasoning=0.0, simple_tokens=4)
    # Everything agrees at the Simple prompt: two short answers against the large model's 600-token reasoning.
    assert all_simple["mai_s"] == pytest.approx(small.call(300, 4) + large.call(300, 4))
    assert all_simple["large_r_s"] == pytest.approx(large.call(300, 600))
    worse = predict_speedup(small, large, 300, 400, 600, route_simple=0.2, route_reasoning=0.1)
    assert worse["speedup"] < all_simple["speedup"] and worse["route_transfer"] == pytest.approx(0.7)


def test_predicts_every_system_of_a_cascade_run(tmp_path, experiment):
    common = ["--wandb", "disabled", "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)]
    experiment("03_stage_profiling").main(["--preset", "cpu", "--models", "tiny-small,tiny-large", "--dtype", "fp32",
                                        "--image-size", "64x64", "--output-tokens", "3", "--warmup", "0",
                                        "--runs", "1", *common])
    experiment("10_mai").main(["--preset", "cpu", "--limit", "1", "--benchmarks", "synth-pope", "--think-tokens", "4",
                            "--simple-tokens", "3", *common])
    costs = profile(tmp_path / "runs" / "03_stage_profiling" / "cpu")
    assert set(costs) == {"tiny-small", "tiny-large"}
    rows = predict_run(tmp_path / "runs" / "10_mai" / "cpu", costs)
    systems = {r["system"] for r in rows}
    assert {"tiny-large-S", "tiny-large-R", "tiny-small-R"} <= systems
    assert sum(s.startswith("MAI ") for s in systems) == 2  # one row per verification variant
    assert all(r["predicted_s"] > 0 and r["measured_s"] > 0 and r["n"] == 1 for r in rows)
