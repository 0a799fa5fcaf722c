"""Tables 3-4's script (experiments/03_stage_profiling.py) on a tiny random model: rows, forced output
lengths, per-token costs recomputed from results.jsonl, resume without rebuilding the model, --help."""
import json
from pathlib import Path

import pytest

from mai import MaiError

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "experiments" / "03_stage_profiling.py"
TINY = ["--preset", "cpu", "--models", "tiny-small", "--warmup", "1", "--runs", "2", "--image-size", "64x64",
        "--question-tokens", "8", "--output-tokens", "3,5", "--wandb", "disabled"]


@pytest.fixture(scope="module")
def script(experiment):
    return experiment("03_stage_profiling")


def _args(tmp_path):
    return TINY + ["--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)]


def test_tiny_run_rows_tables_and_resume(script, tmp_path, capsys, monkeypatch):
    outputs = script.main(_args(tmp_path))
    run = tmp_path / "runs" / "03_stage_profiling" / "cpu"
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]

    # One warm-up (flagged) and two timed runs per output length; every length forced exactly.
    assert not any(r["error"] for r in rows)
    for n in (3, 5):
        mine = [r for r in rows if r["requested_output_tokens"] == n]
        assert sorted((r["warmup"], r["run_index"]) for r in mine) == [(False, 0), (False, 1), (True, 0)]
        assert all(r["output_tokens"] == n for r in mine)
    assert all(r["image_tokens"] == 4 and r["question_tokens"] == 8 for r in rows)  # 64x64: 2x2 merged patches
    assert all(r["peak_memory_bytes"] >= r["memory_before_bytes"] > 0 for r in rows)
    assert all(set(r["times"]) == {"preprocess", "vision", "prefill", "decode"} for r in rows)
    described = json.loads((run / "models.json").read_text())
    assert described["tiny-small"]["random_weights"] is True and described["tiny-small"]["image_tokens"] == 4

    # Per-token costs, recomputed here from the rows: prefill / prompt tokens, decode / (output tokens - 1).
    table4 = (tmp_path / "paper_tables" / "table4_per_token_cost.cpu.md").read_text()
    for n in (3, 5):
        timed = [r for r in rows if r["requested_output_tokens"] == n and not r["warmup"]]
        prefill = sum(r["times"]["prefill"] / r["input_tokens"] for r in timed) / len(timed)
        decode = sum(r["times"]["decode"] / (n - 1) for r in timed) / len(timed)
        tag = f"tiny-small/out{n}"
        assert outputs["summary"][f"{tag}/prefill_ms_per_token"] == pytest.approx(prefill * 1e3)
        assert outputs["summary"][f"{tag}/decode_ms_per_token"] == pytest.approx(decode * 1e3)
        assert outputs["summary"][f"{tag}/decode_over_prefill"] == pytest.approx(decode / prefill)
        assert f"{prefill * 1e3:.3f} ± " in table4 and f"{decode * 1e3:.2f} ± " in table4
        latency = sum(r["latency"] for r in timed) / len(timed)
        assert outputs["summary"][f"{tag}/latency_ms"] == pytest.approx(latency * 1e3)
    assert outputs["summary"]["timed_runs"] == 4 and outputs["summary"]["warmup_runs"] == 2
    assert "tiny-small/latency_linear_r2" in outputs["summary"]  # two output lengths: a latency fit

    table3 = (tmp_path / "paper_tables" / "table3_stage_times.cpu.md").read_text()
    first_line = table3.splitlines()[2]
    assert "RANDOM weights" in first_line and "SIMULATED" in first_line and "not the paper's" in first_line
    assert "vision encoder (ms)" in table3 and "Peak memory: peak RSS" in table4
    assert (tmp_path / "paper_tables" / "table3_stage_times.cpu.tex").exists()
    assert (tmp_path / "figures" / "table3_stage_times.cpu.png").stat().st_size > 1000
    assert not (tmp_path / "paper_tables" / "table3_stage_times.md").exists()  # cpu never writes paper's
    printed = capsys.readouterr().out
    assert "decode costs" in printed and "rows written: 6" in printed

    # The analysis alone rebuilds the same tables from the run directory.
    from analysis import table03

    assert table03.build(run, tmp_path)["markdown"] == outputs["markdown"]

    # Resume: everything is done, so no model is built and nothing is written.
    before = (run / "results.jsonl").read_bytes()

    def no_build(*a, **k):
        raise AssertionError("a finished run must not build its model again")

    monkeypatch.setattr(script.models, "load_model", no_build)
    script.main(_args(tmp_path))
    assert (run / "results.jsonl").read_bytes() == before
    assert "rows written: 0" in capsys.readouterr().out


def test_simulated_inputs_and_flags(script, tiny_small):
    text, n = script.simulated_question(tiny_small.tokenizer, 37)
    assert n == 37 and text.split()[0] == "what"
    assert script.image_size("448x320") == (448, 320)
    with pytest.raises(MaiError):
        script.image_size("448")
    image = script.simulated_image(448, 448, seed=0)
    assert image.size == (448, 448)
    assert script.random_weight_spec("Qwen/Qwen3-VL-8B-Instruct") == "qwen3-vl-8b"
    assert script.random_weight_spec("/data/Qwen3-VL-2B-Thinking") == "qwen3-vl-2b"
    assert script.random_weight_spec("tiny-small") == "tiny-small"
    with pytest.raises(MaiError):
        script.random_weight_spec("/data/Qwen3-VL-32B-Instruct")


def test_per_token_costs():
    from analysis.table03 import per_token

    row = dict(input_tokens=250, cached_tokens=50, output_tokens=17,
               times=dict(preprocess=0.01, vision=0.5, prefill=1.0, decode=4.0))
    assert per_token(row) == (pytest.approx(1.0 / 200), pytest.approx(4.0 / 16))
    assert per_token({**row, "output_tokens": 1})[1] is None


def test_help(script, capsys):
    with pytest.raises(SystemExit) as exit_:
        script.main(["--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0 and "Table 3" in out and "Table 4" in out
    assert "--output-tokens" in out and "--random-weights" in out and "--preset" in out


def test_decode_floor_on_a_known_gpu():
    from analysis.table03 import decode_floor, memory_bandwidth

    assert memory_bandwidth("NVIDIA H200") == 4.8e12 and memory_bandwidth(None) is None
    assert memory_bandwidth("NVIDIA GeForce RTX 4090") is None  # unknown: no floor rather than a wrong one
    # 2.4e9 bf16 parameters read once per token at 4.8 TB/s: 1 ms.
    assert decode_floor(dict(parameters=2.4e9, dtype="bfloat16"), 4.8e12) == pytest.approx(2.4e9 * 2 / 4.8e12)
    assert decode_floor(dict(parameters=2.4e9, dtype="bfloat16"), None) is None


def test_decode_floor_on_a_cpu_is_the_runs_own_measure():
    """On a CPU the floor is the step's bytes over the bandwidth the run measured beside the model's runs."""
    from analysis.table03 import decode_floor
    from mai.models import load_model
    from mai.stage_timing import weight_bytes

    assert decode_floor(dict(step_bytes=3e9, memory_bandwidth_bytes_per_s=30e9), None) == pytest.approx(0.1)
    model = load_model("tiny-qwen2", device="cpu", dtype="float32").model
    embedding = model.get_input_embeddings().weight
    untied = model.get_output_embeddings().weight is not embedding
    everything = sum(p.numel() * p.element_size() for p in model.parameters())
    # A step reads one row of an untied input embedding table, not the table.
    assert weight_bytes(model) == everything - untied * embedding.numel() * embedding.element_size()
