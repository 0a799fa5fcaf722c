"""Issue 37, part 5: accuracy against batch-1 latency per system and task, with the frontier
(analysis/pareto.py): the frontier is the right subset, latencies come only from batch-1 rows, and a system
measured only in stage-major batches is said to have none rather than drawn with a batch share."""
import json

import pytest

from analysis import pareto, style

BENCH = "bbh_sports_understanding"


@pytest.mark.parametrize("points, front", [
    ([(1, 50), (2, 40), (3, 60), (3, 55), (5, 60), (0.5, 10)], [5, 0, 2]),  # faster-or-better only
    ([(1, 50), (1, 50), (2, 40)], [0, 1]),  # the same point twice: neither beats the other
    ([(4, 90)], [0]),
    ([(1, 10), (2, 20), (3, 30)], [0, 1, 2]),  # each slower one is more accurate: all on the frontier
])
def test_the_frontier_is_the_undominated_subset_in_latency_order(points, front):
    assert pareto.frontier(points) == front


def _write(path, rows, **config):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(dict(preset="cpu-real", benchmarks=[BENCH], limit=20,
                                                      provenance=dict(cpu_count=2, git_commit="abc"), **config)))
    (path / "models.json").write_text(json.dumps({"0.5B": {"random_weights": False, "parameters": 5e8},
                                                  "1.5B": {"random_weights": False, "parameters": 1.5e9}}))
    (path / "results.jsonl").write_text("".join(json.dumps(dict(r, key=f"k{i}", error=None)) + "\n"
                                                for i, r in enumerate(rows)))


def _row(i, right, latency, **extra):
    ref = "yes" if i % 2 else "no"
    return dict(example_id=f"{BENCH}-{i}", benchmark=BENCH, references=[ref], question="?",
                prediction=ref if right else "maybe", latency=latency, **extra)


SYSTEMS = (("1.5B-S", "large-S", None, 10, 1.0), ("1.5B-R", "large-R", None, 16, 10.0),
           ("0.5B-R", "small-R", None, 6, 3.0), ("Full RT", "Full RT", None, 12, 4.0),
           ("MAI two-stage answer (Sec. 5.1)", "MAI", "answer", 9, 2.0),
           ("MAI simplified (verify on reasoning)", "MAI", "reasoning", 14, 2.5))


def _runs(tmp_path, batched_latency=100.0):
    """A stage-major Table 10 run whose times are batch shares (batched_latency), its batch-1 sample, a Table 7
    run and a Table 12 run: 20 questions of one task."""
    runs = tmp_path / "runs"
    t10 = [_row(i, i < right, batched_latency, system=s, kind=k, verify=v)
           for s, k, v, right, _ in SYSTEMS for i in range(20)]
    _write(runs / "10_mai" / "cpu-real", t10, order="stage", transfer="sparse",
           cascade=dict(transfer="sparse", sparse=dict(layer=10, delta=0.8)))
    sample = [_row(i, i < right, latency * (1 + 0.1 * (i % 3)), system=s, kind=k, verify=v)
              for s, k, v, right, latency in SYSTEMS for i in range(12)]
    _write(runs / "10_mai" / "cpu-real-latency", sample, order="example")
    t7 = [_row(i, i < right, 0.1, model=m, mode=mode) for m, mode, right in
          (("0.5B", "simple", 4), ("0.5B", "think", 6), ("1.5B", "simple", 10), ("1.5B", "think", 16))
          for i in range(20)]
    _write(runs / "07_prompt_modes" / "cpu-real", t7, order="stage", models=["qwen2.5-coder-0.5b",
                                                                                "qwen2.5-coder-1.5b"])
    t12 = [_row(i, i < right, latency, system=s, kind=k) for s, k, right, latency in
           (("1.5B-R", "target", 15, 9.0), ("1.5B-R + 0.5B draft", "speculative", 15, 6.0), ("MAI", "MAI", 8, 3.0))
           for i in range(20)]
    _write(runs / "12_speculative_decoding" / "cpu-real", t12, cascade=dict(transfer="full", verify="answer"))
    return runs


def test_points_take_batch_1_latency_and_untimed_systems_get_none(tmp_path, monkeypatch):
    checked = {}
    monkeypatch.setattr(style, "ON_SAVE", [lambda fig, path: checked.update(problems=style.layout_problems(fig))])
    out = pareto.build(_runs(tmp_path), "cpu-real", tmp_path)
    points = {p.label: p for p in out["points"]}
    # accuracy over the run's 20 questions; latency over the batch-1 sample's 12, never the 100 s batch shares
    mai = points["MAI two-stage, sparse transfer"]
    assert (mai.acc, mai.acc_n, mai.lat_n) == (45.0, 20, 12) and mai.lat == pytest.approx(2.2)
    assert mai.acc_lo < 45 < mai.acc_hi and mai.lat_lo <= mai.lat <= mai.lat_hi
    assert all(p.lat is None or p.lat < 100 for p in points.values())
    # the small model's Simple answer ran only in stage-major batches: accuracy, no latency
    assert points["0.5B-S"].lat is None and points["0.5B-S"].acc == 20.0 and "0.5B-R" in points
    assert points["speculative decoding (1.5B-R + 0.5B draft)"].source == "12"
    assert points["MAI two-stage, full transfer (Table 12)"].lat == 3.0
    timed = [p for p in points.values() if p.lat is not None]
    expected = {timed[i].label for i in pareto.frontier([(p.lat, p.acc) for p in timed])}
    assert {p.label for p in timed if p.frontier} == expected
    assert "1.5B-S" in expected and "0.5B-R" not in expected  # 0.5B-R: slower and less accurate than 1.5B-S
    sidecar = json.loads(out["figures"][0].with_suffix(".json").read_text())
    assert sidecar["data"]["no_batch1_latency"] == {BENCH: ["0.5B-S"]}
    assert sidecar["data"]["frontier"][BENCH][0] == "1.5B-S"
    assert out["figures"][0].name == "pareto.cpu-real.png" and checked["problems"] == []


def test_a_stage_major_run_without_a_batch_1_sample_has_no_latency_points(tmp_path):
    runs = _runs(tmp_path)
    for f in (runs / "10_mai" / "cpu-real-latency").iterdir():
        f.unlink()
    (runs / "10_mai" / "cpu-real-latency").rmdir()
    points = pareto.build(runs, "cpu-real", tmp_path)["points"]
    assert all(p.lat is None for p in points if p.source == "10")
    assert all(p.lat is not None for p in points if p.source == "12")
