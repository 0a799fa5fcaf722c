"""The run store resumes exactly, and a failing example becomes an error row while the run goes on."""
import json

import pytest
from PIL import Image

from mai import MaiError
from mai.data import Example
from mai.evaluate import evaluate_model
from mai.generation import Result
from mai.results import RunStore, read_rows, row_key


def _store(tmp_path, **config):
    return RunStore(tmp_path, "exp", "run", {"models": ["a"], **config})


def test_append_and_resume_skip_finished_rows(tmp_path):
    store = _store(tmp_path)
    store.append({"key": "x|a|simple", "v": 1})
    store.append({"key": "x|a|simple", "v": 2})  # already there: ignored
    again = _store(tmp_path)
    assert again.done("x|a|simple") and not again.done("y|a|simple")
    assert [r["v"] for r in again.rows()] == [1]


def test_torn_last_line_is_cut_and_rows_appear_once(tmp_path):
    store = _store(tmp_path)
    for i in range(3):
        store.append({"key": f"k{i}", "v": i})
    with open(store.results_path, "a") as f:
        f.write('{"key": "k3", "v"')  # killed mid-write
    resumed = _store(tmp_path)
    assert [r["key"] for r in resumed.rows()] == ["k0", "k1", "k2"]
    resumed.append({"key": "k3", "v": 3})
    lines = store.results_path.read_text().splitlines()
    assert [json.loads(x)["key"] for x in lines] == ["k0", "k1", "k2", "k3"]


def test_a_different_config_is_refused(tmp_path):
    # A run that stopped before its first row (e.g. its data did not load) takes the corrected flags.
    _store(tmp_path, limit=5)
    _store(tmp_path).append({"key": "k0"})
    with pytest.raises(MaiError, match=r"holds a run with another configuration \(differs in: models\)"):
        RunStore(tmp_path, "exp", "run", {"models": ["b"]})
    # Provenance (commit, argv) may change between a run and its resumption.
    RunStore(tmp_path, "exp", "run", {"models": ["a"], "provenance": {"git_commit": "other"}})


def test_a_flag_added_later_reads_as_what_earlier_runs_did(tmp_path):
    """A run begun before --decode existed decoded eagerly: it resumes with --decode eager, not compiled."""
    _store(tmp_path).append({"key": "k0"})
    RunStore(tmp_path, "exp", "run", {"models": ["a"], "decode": "eager"})
    with pytest.raises(MaiError, match=r"differs in: decode"):
        RunStore(tmp_path, "exp", "run", {"models": ["a"], "decode": "compiled"})


def _fake_generate(request):
    if "boom" in request.question:
        raise RuntimeError("generation exploded")
    return Result(text="The answer is 12.", input_tokens=10, output_tokens=5,
                  times=dict(preprocess=0.1, vision=0.2, prefill=0.3, decode=0.4))


def test_error_rows_for_bad_inputs_and_the_run_goes_on(tmp_path):
    img = Image.new("RGB", (32, 32))
    examples = [
        Example("ok", "synth-chartqa", "What is the value?", ["12"], [img], {}),
        Example("bad-image", "synth-chartqa", "What is the value?", ["12"], [{"bytes": b"not a png", "path": None}], {}),
        Example("empty", "synth-chartqa", "   ", ["12"], [img], {}),
        Example("fails", "synth-chartqa", "boom", ["12"], [img], {}),
        Example("ok2", "synth-chartqa", "What is the value?", ["13"], [img], {}),
    ]
    store = _store(tmp_path)
    assert evaluate_model(store, _fake_generate, "m", examples, ["simple"], think_tokens=8) == 5
    rows = {r["example_id"]: r for r in read_rows(store.dir)}
    assert rows["ok"]["error"] is None and rows["ok"]["answer"] == "12"
    # lmms-eval reads no answer cue ("the answer is 12." != "12"); our extraction does.
    assert (rows["ok"]["score"], rows["ok"]["score_extracted"]) == (0.0, 1.0)
    assert rows["ok2"]["score_extracted"] == 0.0  # 12 is not within 5% of 13
    assert rows["bad-image"]["error"].startswith("ValueError: unreadable image in bad-image")
    assert rows["empty"]["error"] == "ValueError: empty question in empty"
    assert rows["fails"]["error"] == "RuntimeError: generation exploded"
    assert rows["ok"]["latency"] == pytest.approx(1.0)
    # Resume: nothing is recomputed or written twice.
    assert evaluate_model(_store(tmp_path), _fake_generate, "m", examples, ["simple"], think_tokens=8) == 0
    assert len(read_rows(store.dir)) == 5
    assert row_key("ok", "m", "simple") in {r["key"] for r in read_rows(store.dir)}


# -- one writer per run directory -----------------------------------------------------------------------

REPO = __import__("pathlib").Path(__file__).resolve().parent.parent
# A run that appends `n` rows, one every `pause` seconds, after waiting for the test's go file: both
# processes then open the run directory within milliseconds of each other.
WRITER = """
import os, sys, time
sys.path.insert(0, {repo!r})
from mai import cli
from mai.results import RunStore

out, run, n, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
open(os.path.join(out, f"ready-{{os.getpid()}}"), "w").close()
while not os.path.exists(os.path.join(out, "go")):
    time.sleep(0.01)

def main():
    store = RunStore(out, "exp", run, {{"models": ["a"]}})
    for i in range(n):
        if not store.done(f"k{{i}}"):
            store.append({{"key": f"k{{i}}", "pid": os.getpid()}})
        time.sleep(pause)

cli.run(main)
"""


def _writer(tmp_path, run="run", n=20, pause=0.1):
    import subprocess
    import sys

    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(repo=str(REPO)))
    return subprocess.Popen([sys.executable, str(script), str(tmp_path), run, str(n), str(pause)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _go(tmp_path, procs):
    import time

    deadline = time.time() + 120
    while len(list(tmp_path.glob("ready-*"))) < len(procs) and time.time() < deadline:
        time.sleep(0.02)
    (tmp_path / "go").touch()


def test_two_processes_on_one_run_write_every_row_once(tmp_path):
    procs = [_writer(tmp_path), _writer(tmp_path), _writer(tmp_path, run="run-shard1of2")]
    _go(tmp_path, procs)
    results = [(p.pid, *p.communicate(timeout=120), p.returncode) for p in procs]
    same = results[:2]
    winner = [r for r in same if r[3] == 0]
    loser = [r for r in same if r[3] != 0]
    assert len(winner) == 1 and len(loser) == 1, results
    assert loser[0][3] == 1  # the machine's state, not a usage mistake
    run = tmp_path / "exp" / "run"
    assert loser[0][2].strip().splitlines() == [
        f"error: {run} is being written by process {winner[0][0]}: one run writes a run directory at a time; "
        "wait for it to end, or pass another --run-name"]
    keys = [json.loads(x)["key"] for x in (run / "results.jsonl").read_text().splitlines()]
    assert keys == [f"k{i}" for i in range(20)]
    assert {json.loads(x)["pid"] for x in (run / "results.jsonl").read_text().splitlines()} == {winner[0][0]}
    # A shard is another directory: it ran at the same time, untouched by the lock.
    assert results[2][3] == 0, results[2]
    assert len(read_rows(tmp_path / "exp" / "run-shard1of2")) == 20
    assert (run / "run.lock").read_text() == ""  # a finished run names no process


def test_a_run_killed_with_sigkill_leaves_no_stale_lock(tmp_path):
    import signal
    import time

    proc = _writer(tmp_path, n=1000, pause=0.05)
    _go(tmp_path, [proc])
    results = tmp_path / "exp" / "run" / "results.jsonl"
    deadline = time.time() + 120
    while (not results.exists() or len(results.read_text().splitlines()) < 3) and time.time() < deadline:
        time.sleep(0.02)
    assert (tmp_path / "exp" / "run" / "run.lock").read_text().split()[0] == str(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with _store(tmp_path) as store:  # the kernel dropped the lock with the process
        n = len(store.rows())
        assert n >= 3 and store.done("k0") and not store.done(f"k{n}")
        store.append({"key": f"k{n}", "pid": 0})
    assert len(read_rows(store.dir)) == n + 1


def test_a_held_run_refuses_another_process_at_once(tmp_path):
    import subprocess
    import sys
    import time

    with _store(tmp_path):
        (tmp_path / "go").touch()
        t0 = time.time()
        proc = _writer(tmp_path, n=1, pause=0)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1 and err.count("\n") == 1
        assert f"is being written by process {__import__('os').getpid()}" in err
    assert time.time() - t0 < 60
    assert subprocess.run([sys.executable, str(tmp_path / "writer.py"), str(tmp_path), "run", "1", "0"],
                          capture_output=True, timeout=120).returncode == 0  # released: the next run proceeds


# -- tables never double count; damage is reported -----------------------------------------------------

def test_readers_take_the_last_complete_row_of_each_key_and_count_the_rest(tmp_path):
    from analysis import report
    from mai.results import read_results

    run = tmp_path / "exp" / "run"
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"preset": "cpu", "benchmarks": []}))
    rows = [{"key": "a", "v": 1}, {"key": "b", "v": 1}, {"key": "a", "v": 2}, {"key": "b", "v": 2},
            {"key": "c", "v": 1}]  # what two writers at once left behind before the lock
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    read = read_results(run)
    assert [(r["key"], r["v"]) for r in read.rows] == [("a", 2), ("b", 2), ("c", 1)]
    assert read.duplicates == 2 and read.damaged == []
    config, got, _ = report.load_run(run)
    assert got == read.rows
    import pandas as pd

    md, _ = report.write_table(pd.DataFrame({"x": [1]}), tmp_path, "t", config, "note", "Table X")
    assert md.read_text().splitlines()[0] == (
        "# Table X [2 duplicate row(s) dropped: the last complete row of each key counts]")
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    config, _, _ = report.load_run(run)
    md, _ = report.write_table(pd.DataFrame({"x": [1]}), tmp_path, "t", config, "note", "Table X")
    assert md.read_text().splitlines()[0] == "# Table X"


def test_a_damaged_line_is_kept_aside_reported_and_its_row_redone(tmp_path, capsys):
    from mai.results import read_results

    store = _store(tmp_path)
    for i in range(5):
        store.append({"key": f"k{i}", "v": i})
    store.close()
    lines = store.results_path.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"key": "k2", "v\x00\x00garbage\n'  # a bad block in the middle of the file
    store.results_path.write_bytes(b"".join(lines) + b'{"key": "k5"')  # and a torn last line
    assert read_results(store.dir).damaged == [3]  # analysis skips it and says so, changing nothing
    capsys.readouterr()

    resumed = _store(tmp_path)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: {store.results_path} had 1 damaged line(s) (line 3)")
    aside = [json.loads(x) for x in (store.dir / "results.jsonl.damaged").read_text().splitlines()]
    assert [(d["line"], d["text"]) for d in aside] == [(3, '{"key": "k2", "v\x00\x00garbage\n')]
    assert [r["key"] for r in resumed.rows()] == ["k0", "k1", "k3", "k4"]
    assert resumed.pending([f"k{i}" for i in range(6)]) == ["k2", "k5"]
    resumed.append({"key": "k2", "v": 2})
    resumed.close()
    assert sorted(r["key"] for r in read_rows(store.dir)) == ["k0", "k1", "k2", "k3", "k4"]
    assert read_results(store.dir).damaged == []
    _store(tmp_path).close()
    assert capsys.readouterr().err == ""  # reported once: the damaged line is no longer in the file
