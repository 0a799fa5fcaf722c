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
