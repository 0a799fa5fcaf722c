"""scripts/regenerate.py: phases one after another, a phase's lanes at once, each script timed; a failing
script stops the regeneration with its exit status."""
import importlib.util
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _regenerate(tmp_path, monkeypatch, seconds: dict, fail: str = ""):
    spec = importlib.util.spec_from_file_location("regenerate", REPO / "scripts" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "rebuild_tables", lambda: 0)  # tests/test_committed_tables.py covers it
    # each script stands in as a sleep of its own length (the real ones take hours)
    monkeypatch.setattr(module, "command", lambda script, preset, wandb, name=None: [
        sys.executable, "-c", f"import time, sys; time.sleep({seconds[script]}); sys.exit({int(script == fail)})"])
    return module


def test_lanes_run_at_once_and_phases_in_turn(tmp_path, monkeypatch):
    seconds = {"03_stage_profiling": 0.2, "08_reasoning_transfer": 1.5, "10_mai": 1.5, "07_prompt_modes": 0.2}
    module = _regenerate(tmp_path, monkeypatch, seconds)
    assert module.main(["--preset", "cpu-real", "--only", ",".join(seconds)]) == 0
    record = json.loads((tmp_path / "runs" / "regenerate.cpu-real.json").read_text())
    assert set(record["seconds"]) == set(seconds)
    lanes = record["phase_seconds"]["2"]
    assert lanes["lanes"] == [["08_reasoning_transfer"], ["10_mai", "07_prompt_modes"]]
    # the two lanes overlapped: the phase took about its longest lane, not the sum of its scripts
    assert lanes["seconds"] < record["seconds"]["08_reasoning_transfer"] + record["seconds"]["10_mai"] - 0.5
    assert (tmp_path / "runs" / "regenerate.cpu-real.10_mai.log").exists()  # a lane's output goes to its log


def test_a_failing_script_stops_the_regeneration(tmp_path, monkeypatch):
    seconds = {"03_stage_profiling": 0.1, "10_mai": 0.1}
    module = _regenerate(tmp_path, monkeypatch, seconds, fail="03_stage_profiling")
    assert module.main(["--preset", "cpu-real", "--only", ",".join(seconds)]) == 1
    record = json.loads((tmp_path / "runs" / "regenerate.cpu-real.json").read_text())
    assert "10_mai" not in record["seconds"] and "2" not in record["phase_seconds"]


def test_a_resumed_run_adds_its_time_and_a_fresh_one_starts_over(tmp_path, monkeypatch):
    seconds = {"10_mai": 0.3}
    module = _regenerate(tmp_path, monkeypatch, seconds)
    record_path = tmp_path / "runs" / "regenerate.cpu-real.json"
    module.main(["--preset", "cpu-real", "--only", "10_mai"])
    first = json.loads(record_path.read_text())["seconds"]["10_mai"]
    (tmp_path / "runs" / "10_mai" / "cpu-real").mkdir(parents=True)
    (tmp_path / "runs" / "10_mai" / "cpu-real" / "results.jsonl").write_text("{}\n")  # rows: a resumption
    module.main(["--preset", "cpu-real", "--only", "10_mai"])
    record = json.loads(record_path.read_text())
    assert record["seconds"]["10_mai"] > first + 0.25 and record["invocations"]["10_mai"] == 2
    (tmp_path / "runs" / "10_mai" / "cpu-real" / "results.jsonl").unlink()  # deleted: measured from scratch
    module.main(["--preset", "cpu-real", "--only", "10_mai"])
    record = json.loads(record_path.read_text())
    assert record["invocations"]["10_mai"] == 1 and record["seconds"]["10_mai"] < 2 * first


def test_a_named_set_grows_beside_the_committed_one(tmp_path, monkeypatch):
    """--run-name: its own record and logs, its rows' runs under that name, and no rebuild of the committed tables;
    the printed time by the rows' own timestamps."""
    module = _regenerate(tmp_path, monkeypatch, {"10_mai": 0.1})
    monkeypatch.setattr(module, "rebuild_tables", lambda: (_ for _ in ()).throw(AssertionError("rebuilt")))
    run = tmp_path / "runs" / "10_mai" / "cpu-real-v2"
    run.mkdir(parents=True)
    (run / "results.jsonl").write_text(json.dumps(dict(key="a", started="2026-12-06T16:00:00.000+00:00",
                                                       ended="2026-12-06T16:01:30.000+00:00")) + "\n"
                                       + json.dumps(dict(key="b")) + "\n"
                                       + json.dumps(dict(key="c", trace=[  # a cascade row: its calls' span
                                           dict(result=dict(started="2026-12-06T16:00:30.000+00:00",
                                                            ended="2026-12-06T16:02:00.000+00:00"))])) + "\n")
    assert module.main(["--preset", "cpu-real", "--only", "10_mai", "--run-name", "cpu-real-v2"]) == 0
    record = json.loads((tmp_path / "runs" / "regenerate.cpu-real-v2.json").read_text())
    assert record["rows_span_seconds"] == {"10_mai": 120.0}
    assert record["rows_busy_seconds"] == {"10_mai": 120.0} and record["rows_busy_seconds_all"] == 120.0
    spec = importlib.util.spec_from_file_location("regenerate_plain", REPO / "scripts" / "regenerate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its own command(), not the stand-in
    assert module.command("10_mai", "cpu-real", "disabled", "cpu-real-v2")[-2:] == ["--run-name", "cpu-real-v2"]
    assert module.command("10_mai-latency", "cpu-real", "disabled", "cpu-real-v2")[-1] == "cpu-real-v2-latency"
    # Stage-major parts decode eagerly; the batch-1 latency sample takes the preset's compiled decode.
    assert "--decode" in module.command("10_mai", "cpu-real", "disabled", "cpu-real-v2")
    assert "--decode" not in module.command("10_mai-latency", "cpu-real", "disabled", "cpu-real-v2")


def test_busy_seconds_is_the_union_of_intervals_without_the_gaps(tmp_path, monkeypatch):
    """Two sessions' rows, an hour apart, with overlapping rows in each: busy counts each instant once, no gap."""
    module = _regenerate(tmp_path, monkeypatch, {"10_mai": 0.1})
    t = "2026-12-06T{}:00.000+00:00".format
    starts, ends = [t("16:00"), t("16:01"), t("18:00")], [t("16:02"), t("16:03"), t("18:10")]
    assert module.busy_seconds(starts, ends) == (3 + 10) * 60

