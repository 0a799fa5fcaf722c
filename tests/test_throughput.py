"""analysis/throughput: scripts/bench_batch.py's JSONs to the throughput table and figure."""
import json

from analysis import throughput


def _bench(path, backend, tokens_per_s, differing=0):
    by_batch = {str(b): dict(seconds=b * 32 / t, tokens_per_s=t, ratio_to_smallest=round(t / tokens_per_s[1], 2))
                for b, t in tokens_per_s.items()}
    path.write_text(json.dumps(dict(what="w", backend=backend, dtype="bf16", output_tokens=32, threads=1,
                                    machine="x86_64, 2 cores", load_average_before=1.0, load_average_after=1.5,
                                    note="nothing else", provenance={"git_commit": "abc"},
                                    models={"m": dict(by_batch=by_batch, equality=dict(questions=4, differing=differing))})))


def test_table_has_each_backend_and_its_ratio_to_transformers(tmp_path):
    _bench(tmp_path / "batch.hf.json", "hf", {1: 5.0, 16: 40.0})
    _bench(tmp_path / "batch.vllm.json", "vllm", {1: 10.0, 16: 100.0}, differing=1)
    out = throughput.build(tmp_path, tmp_path)
    df, _ = throughput.load(tmp_path)
    vllm = df[df.backend == "vLLM (CPU engine)"].set_index("batch")
    assert list(vllm.ratio_to_transformers) == [2.0, 2.5] and list(vllm.batched_equals_batch_1) == ["3/4", "3/4"]
    assert "nothing else" in out["markdown"] and "1 torch thread(s)" in out["markdown"]
    assert (tmp_path / "figures" / "throughput.cpu-real.png").exists()


def test_no_measurements_is_one_line(tmp_path):
    import pytest

    with pytest.raises(SystemExit, match="run scripts/bench_batch.py first"):
        throughput.build(tmp_path, tmp_path)


def test_bound_fraction_is_the_step_bytes_over_the_runs_bandwidth_over_the_step(tmp_path):
    """Each run's own bandwidth; vLLM's run, which cannot count its engine's weights, takes the checkpoint's step
    bytes from the transformers run."""
    for name, backend, step_s, bandwidth, step_bytes in (("hf", "hf", 0.3, 30e9, 3e9),
                                                         ("hf-compiled", "hf", 0.12, 25e9, 3e9),
                                                         ("vllm", "vllm", 0.2, 20e9, None)):
        _bench(tmp_path / f"batch.{name}.json", backend, {1: 5.0})
        record = json.loads((tmp_path / f"batch.{name}.json").read_text())
        record["models"]["m"].update(bandwidth_bytes_per_s=bandwidth, step_bytes=step_bytes)
        record["models"]["m"]["by_batch"]["1"]["decode_step_s"] = step_s
        (tmp_path / f"batch.{name}.json").write_text(json.dumps(record))
    df = throughput.load(tmp_path)[0].set_index("backend")
    assert df.bound_fraction.to_dict() == {"transformers": round(0.1 / 0.3, 3),
                                           "transformers, compiled decode": 1.0, "vLLM (CPU engine)": 0.75}
    assert df.loc["transformers, compiled decode", "decode_step_ms"] == 120.0
