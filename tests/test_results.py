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
    _store(tmp_path)
    with pytest.raises(MaiError, match=r"holds a run with another configuration \(differs in: models\)"):
        RunStore(tmp_path, "exp", "run", {"models": ["b"]})
    # Provenance (commit, argv) may change between a run and its resumption.
    RunStore(tmp_path, "exp", "run", {"models": ["a"], "provenance": {"git_commit": "other"}})


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
