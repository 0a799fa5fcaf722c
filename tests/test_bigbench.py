"""BIG-bench task files (mai.benchmarks._bigbench) and the three text-only benchmarks read from them.

Built on a small fake bigbench sdist (a tar.gz with the real member paths, written here) whose task files
hold real examples, copied from bigbench 1.0.0's bigbench/benchmark_tasks/<task>/task.json (PyPI sdist
bigbench-1.0.0.tar.gz): strategyqa's examples 0-3, object_counting's 0-2, date_understanding's 0-2 and 5.
The expected scores are worked out by hand from lm-evaluation-harness's BBH zero-shot rules
(mai/benchmarks/_bbh.py names the files and commit).
"""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from mai import MaiEnvironmentError, MaiError
from mai.benchmarks import _bbh, _bigbench, dataset_sources, get_benchmark, load_benchmark
from mai.data import Example, subsample_indices
from mai.evaluate import check_example

STRATEGYQA = {"name": "strategyqa", "preferred_score": "multiple_choice_grade", "examples": [
    {"input": "Is it common to see frost during some college commencements?",
     "target_scores": {"Yes": 1, "No": 0},
     "target": "Yes. College commencement ceremonies often happen during the months of December, May, and sometimes "
               "June.  Frost isn't uncommon to see during the month of December, as it is the winter."},
    {"input": "Hydrogen's atomic number squared exceeds number of Spice Girls?",
     "target_scores": {"Yes": 0, "No": 1},
     "target": "No. Hydrogen is the first element and has an atomic number of one. To square a number, you multiply "
               "it by itself. The Spice Girls has five members."},
    {"input": "Would a pear sink in water?", "target_scores": {"Yes": 0, "No": 1},
     "target": "No. The density of a raw pear is about 0.59 g/cm^3. The density of water is about 1 g/cm^3. Objects "
               "only sink if they are denser than the surrounding fluid."},
    {"input": "Do hamsters provide food for any animals?", "target_scores": {"Yes": 1, "No": 0},
     "target": "Yes. Hamsters are prey animals. Prey animals provide food for predators. "},
]}
# the repository ships these three (mai/assets/README.md); the archive's task files are history-only now
OBJECT_COUNTING = json.loads((Path(__file__).resolve().parent.parent / "mai" / "assets" / "bigbench" /
                              "object_counting.json").read_text())
DATE_UNDERSTANDING = {"name": "date_understanding", "preferred_score": "multiple_choice_grade", "examples": [
    {"input": "Yesterday was April 30, 2021. What is the date today in MM/DD/YYYY?",
     "target_scores": {"05/01/2021": 1, "02/23/2021": 0, "03/11/2021": 0, "05/09/2021": 0, "06/12/2021": 0,
                       "04/29/2021": 0}},
    {"input": "Yesterday was April 30, 2021. What is the date tomorrow in MM/DD/YYYY?",
     "target_scores": {"05/02/2021": 1, "04/29/2021": 0, "04/11/2021": 0, "05/01/2021": 0, "03/14/2021": 0,
                       "05/02/1960": 0}},
    {"input": "Yesterday was April 30, 2021. What is the date yesterday in MM/DD/YYYY?",
     "target_scores": {"04/30/2021": 1, "04/30/2022": 0, "05/09/2021": 0, "04/27/2021": 0, "04/30/1996": 0,
                       "04/29/2021": 0}},
    {"input": "Yesterday was April 30, 2021. What is the date one year ago from today in MM/DD/YYYY?",
     "target_scores": {"05/01/2020": 1, "04/01/2020": 0, "05/08/2020": 0, "05/15/2020": 0, "05/01/1971": 0}},
]}
REAL_DOWNLOAD = _bigbench.download  # the fixture below replaces it
TASKS = {"strategyqa": STRATEGYQA, "object_counting": OBJECT_COUNTING, "date_understanding": DATE_UNDERSTANDING}


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def task_bytes(task: str) -> bytes:
    return json.dumps(TASKS[task], indent=2).encode()


@pytest.fixture
def sdist(tmp_path) -> Path:
    """A fake bigbench-1.0.0.tar.gz: the three tasks, one task MAI does not read, and package files."""
    path = tmp_path / "pypi" / _bigbench.SDIST
    path.parent.mkdir()
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, "bigbench-1.0.0/PKG-INFO", b"Name: bigbench\nVersion: 1.0.0\n")
        _add(tar, "bigbench-1.0.0/bigbench/api/json_task.py", b"# not read\n")
        _add(tar, _bigbench.member_path("kanji_ascii"), b'{"examples": []}')
        for task in TASKS:
            _add(tar, _bigbench.member_path(task), task_bytes(task))
        _add(tar, "bigbench-1.0.0/bigbench/benchmark_tasks/object_counting/generate_task.py", b"# not read\n")
    return path


@pytest.fixture
def downloads() -> list:
    return []


@pytest.fixture
def cache(tmp_path, monkeypatch, sdist, downloads) -> Path:
    """An empty MAI cache, and pip's download replaced by a copy of the fake sdist (each call in downloads)."""
    monkeypatch.setenv("MAI_CACHE", str(tmp_path / "cache"))
    calls = downloads

    def fake_download(directory: Path) -> Path:
        calls.append(directory)
        target = directory / _bigbench.SDIST
        target.write_bytes(sdist.read_bytes())
        return target

    monkeypatch.setattr(_bigbench, "download", fake_download)
    return tmp_path / "cache" / "bigbench"


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def _one_line(err) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    return msg


# ---------------------------------------------------------------------------
# Fetching task files
# ---------------------------------------------------------------------------


def test_fetch_writes_only_the_wanted_task_files_with_their_source(cache, sdist, downloads):
    import hashlib

    paths = _bigbench.fetch(["strategyqa", "object_counting"])
    assert paths == {t: cache / t / "task.json" for t in ("strategyqa", "object_counting")}
    assert _listing(cache) == ["object_counting", "object_counting/mai_source.json", "object_counting/task.json",
                               "strategyqa", "strategyqa/mai_source.json", "strategyqa/task.json"]
    for task in ("strategyqa", "object_counting"):
        assert (cache / task / "task.json").read_bytes() == task_bytes(task)
        source = json.loads((cache / task / "mai_source.json").read_text())
        assert source == {"package": "bigbench==1.0.0", "archive": "bigbench-1.0.0.tar.gz",
                          "archive_sha256": hashlib.sha256(sdist.read_bytes()).hexdigest(),
                          "member": f"bigbench-1.0.0/bigbench/benchmark_tasks/{task}/task.json",
                          "sha256": hashlib.sha256(task_bytes(task)).hexdigest()}
        assert _bigbench.task_file(task) == cache / task / "task.json"
    assert len(downloads) == 1
    # cached tasks are not fetched again; a new one is
    _bigbench.fetch(["strategyqa"])
    assert len(downloads) == 1
    _bigbench.fetch(["strategyqa", "date_understanding"])
    assert len(downloads) == 2 and (cache / "date_understanding" / "task.json").read_bytes() == task_bytes(
        "date_understanding")


def test_fetch_from_a_local_sdist_downloads_nothing(cache, sdist, downloads):
    _bigbench.fetch(["date_understanding"], sdist=sdist)
    assert downloads == [] and _listing(cache) == [
        "date_understanding", "date_understanding/mai_source.json", "date_understanding/task.json"]


def test_unknown_task_is_one_line_and_nothing_is_written(cache):
    with pytest.raises(MaiError) as err:
        _bigbench.fetch(["strategyqa", "no_such_task"])
    assert _one_line(err) == ("bigbench==1.0.0 has no BIG-bench task 'no_such_task' (no bigbench-1.0.0/bigbench/"
                              "benchmark_tasks/no_such_task/task.json in bigbench-1.0.0.tar.gz)")
    assert _listing(cache) == []  # not even the task that exists


def test_unreadable_archive_and_failed_download_leave_nothing(cache, tmp_path, monkeypatch):
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(MaiEnvironmentError) as err:
        _bigbench.fetch(["strategyqa"], sdist=broken)
    assert _one_line(err).startswith(f"cannot read {broken} (")
    assert _listing(cache) == []

    monkeypatch.setattr(_bigbench, "download", REAL_DOWNLOAD)
    monkeypatch.setattr(_bigbench, "PIP_FOR_SDIST", "pip==0.0.0-no-such-version")  # pip itself fails, offline too
    with pytest.raises(MaiEnvironmentError) as err:
        _bigbench.fetch(["strategyqa"])
    assert _one_line(err).startswith("cannot download bigbench-1.0.0.tar.gz with pip (")
    assert _one_line(err).endswith("pass a copy of it: python -m mai.benchmarks._bigbench --sdist PATH")
    assert _listing(cache) == []


def test_download_checks_the_archive_sha256(cache, sdist, monkeypatch):
    """download's check, with pip's part standing in (it would fetch 358 MB): another sha256 is refused."""
    import hashlib

    monkeypatch.setattr(_bigbench, "download", REAL_DOWNLOAD)
    monkeypatch.setattr(_bigbench, "_pip_download", lambda directory: sdist)
    with pytest.raises(MaiEnvironmentError) as err:
        _bigbench.fetch(["strategyqa"])
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert _one_line(err) == (f"bigbench-1.0.0.tar.gz from PyPI has sha256 {digest}, not "
                              f"bigbench==1.0.0's {_bigbench.SDIST_SHA256}: download it again")
    assert _listing(cache) == []
    monkeypatch.setattr(_bigbench, "SDIST_SHA256", digest)
    _bigbench.fetch(["strategyqa"])
    assert (cache / "strategyqa" / "task.json").read_bytes() == task_bytes("strategyqa")


def test_a_task_file_that_is_not_a_task_is_refused(cache, tmp_path):
    path = tmp_path / _bigbench.SDIST
    with tarfile.open(path, "w:gz") as tar:
        _add(tar, _bigbench.member_path("strategyqa"), b"<html>")
    with pytest.raises(MaiError) as err:
        _bigbench.fetch(["strategyqa"], sdist=path)
    assert _one_line(err) == ("bigbench-1.0.0/bigbench/benchmark_tasks/strategyqa/task.json in bigbench-1.0.0.tar.gz "
                              "is not a BIG-bench task file (JSON with examples)")
    assert _listing(cache) == []


def test_missing_task_file_says_to_run_setup(cache):
    with pytest.raises(MaiEnvironmentError) as err:
        _bigbench.task_file("strategyqa")
    assert _one_line(err) == (f"BIG-bench task 'strategyqa' is not in {cache}: run bash scripts/setup.sh --real "
                              "(or .venv/bin/python -m mai.benchmarks._bigbench [--sdist PATH]), or give a task.json "
                              "as --data-files BENCHMARK=PATH")
    with pytest.raises(MaiEnvironmentError, match="run bash scripts/setup.sh --real"):
        load_benchmark("strategyqa", 2)
    # a folder without its source record (a copy from elsewhere) is not trusted either
    (cache / "strategyqa").mkdir(parents=True)
    (cache / "strategyqa" / "task.json").write_bytes(task_bytes("strategyqa"))
    with pytest.raises(MaiEnvironmentError, match="is not in"):
        _bigbench.task_file("strategyqa")


def test_main_fetches_every_task_the_benchmarks_read(cache, sdist, capsys):
    assert _bigbench.used_tasks() == ["date_understanding", "object_counting", "strategyqa"]
    _bigbench.main(["--sdist", str(sdist)])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["date_understanding", "object_counting", "strategyqa"]
    assert lines[2].startswith(f"strategyqa: {cache / 'strategyqa' / 'task.json'} (4 examples, sha256 ")
    assert _listing(cache) == sorted(f"{t}{s}" for t in TASKS for s in ("", "/mai_source.json", "/task.json"))


def test_main_reports_an_unknown_task_in_one_line(cache, sdist, capsys):
    with pytest.raises(SystemExit) as exit_:
        _bigbench.main(["--sdist", str(sdist), "nope"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("error: bigbench==1.0.0 has no BIG-bench task 'nope' (no bigbench-1.0.0/"
                                       "bigbench/benchmark_tasks/nope/task.json in bigbench-1.0.0.tar.gz)\n")


def test_set_up_goes_on_when_the_registry_refuses_the_archive(cache, monkeypatch, capsys):
    """What setup.sh --real runs (--if-available): a download pip cannot make is one warning, exit 0, nothing
    written; without the flag it is the one-line error and exit 1."""
    monkeypatch.setattr(_bigbench, "download", REAL_DOWNLOAD)
    monkeypatch.setattr(_bigbench, "PIP_FOR_SDIST", "pip==0.0.0-no-such-version")  # pip itself fails, offline too
    _bigbench.main(["--if-available"])
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("warning: no BIG-bench task files (cannot download bigbench-1.0.0")
    assert err[0].endswith("or read a task.json given as --data-files BENCHMARK=PATH")
    assert _listing(cache) == []
    with pytest.raises(SystemExit) as exit_:
        _bigbench.main([])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.startswith("error: cannot download bigbench-1.0.0.tar.gz with pip (")


def test_if_available_still_fails_on_a_broken_archive(cache, tmp_path, capsys):
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(SystemExit) as exit_:
        _bigbench.main(["--if-available", "--sdist", str(broken)])
    assert exit_.value.code == 1 and capsys.readouterr().err.startswith(f"error: cannot read {broken} (")
    assert _listing(cache) == []


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


@pytest.fixture
def fetched(cache):
    _bigbench.fetch(list(TASKS))
    return cache


def test_strategyqa_examples(fetched):
    ex = load_benchmark("strategyqa")
    assert [(e.id, e.question, e.references) for e in ex] == [
        ("strategyqa-0", "Is it common to see frost during some college commencements?", ["Yes"]),
        ("strategyqa-1", "Hydrogen's atomic number squared exceeds number of Spice Girls?", ["No"]),
        ("strategyqa-2", "Would a pear sink in water?", ["No"]),
        ("strategyqa-3", "Do hamsters provide food for any animals?", ["Yes"])]
    assert all(e.images == [] and e.benchmark == "strategyqa" for e in ex)
    assert ex[2].meta["explanation"].startswith("No. The density of a raw pear")
    assert dataset_sources()["strategyqa"] == ("bigbench==1.0.0 "
                                               "bigbench-1.0.0/bigbench/benchmark_tasks/strategyqa/task.json")


def test_object_counting_examples(fetched):
    ex = load_benchmark("object_counting")
    assert [(e.id, e.references, e.meta["target_words"]) for e in ex] == [
        ("object_counting-0", ["3"], ["three"]), ("object_counting-1", ["9"], ["nine"]),
        ("object_counting-2", ["18"], ["eighteen"])]
    assert ex[0].question == "I have a clarinet, a violin, and a flute. How many musical instruments do I have?"
    assert get_benchmark("object_counting").post_prompt == "\nAnswer with only the number."


def test_date_understanding_in_bbh_format(fetched):
    ex = load_benchmark("date_understanding")
    assert [e.id for e in ex] == [f"date_understanding-{k}" for k in (0, 1, 2, 3)]
    for e, item in zip(ex, DATE_UNDERSTANDING["examples"]):
        options = e.meta["options"]
        assert list(options) == list("ABCDEF"[:len(item["target_scores"])])
        assert sorted(options.values()) == sorted(item["target_scores"])  # the same dates, reordered
        lines = "".join(f"\n({x}) {d}" for x, d in options.items())
        assert e.question == item["input"] + "\nOptions:" + lines  # BBH's input format
        (ref,) = e.references
        assert ref[0] + ref[2] == "()" and item["target_scores"][options[ref[1]]] == 1
    assert len(ex[3].meta["options"]) == 5
    # a fixed shuffle per example, not the task file's order (which lists the right date first)
    assert [e.meta["options"] for e in ex] == [e.meta["options"] for e in load_benchmark("date_understanding")]
    assert any(list(e.meta["options"].values()) != list(item["target_scores"])
               for e, item in zip(ex, DATE_UNDERSTANDING["examples"]))


def test_subsample_is_deterministic_with_stable_ids(fetched):
    a = load_benchmark("strategyqa", limit=2, seed=3)
    assert [e.id for e in a] == [f"strategyqa-{k}" for k in subsample_indices(4, 2, 3)]
    assert [e.id for e in load_benchmark("strategyqa", limit=2, seed=3)] == [e.id for e in a]
    assert [e.question for e in a] == [STRATEGYQA["examples"][k]["input"] for k in subsample_indices(4, 2, 3)]


def test_a_local_task_file_loads_and_a_bad_one_is_one_line(cache, tmp_path):
    path = tmp_path / "task.json"
    path.write_bytes(task_bytes("object_counting"))
    ex = load_benchmark("object_counting", data_files=str(path))
    assert [e.references for e in ex] == [["3"], ["9"], ["18"]]
    assert dataset_sources()["object_counting"] == f"task file {path} in the BIG-bench schema"
    for text in ("[1, 2]", '{"examples": 3}', '{"examples": [1]}'):
        path.write_text(text)
        with pytest.raises(MaiError) as err:
            load_benchmark("object_counting", data_files=str(path))
        assert _one_line(err) == f"{path} is not a BIG-bench task file (JSON with examples)"


def test_a_task_file_given_on_the_command_line_is_checked_before_anything_loads(tmp_path):
    """--data-files for a BIG-bench benchmark: one task.json in BIG-bench's schema (a glob resolved to it)."""
    import argparse

    from mai.cli import check_data_files

    path = tmp_path / "counting.task.json"
    path.write_bytes(task_bytes("object_counting"))
    args = argparse.Namespace(benchmarks=["object_counting"], data_files={"object_counting": str(tmp_path / "*.json")})
    check_data_files(args)
    assert args.data_files == {"object_counting": str(path)}
    (tmp_path / "other.json").write_text("{}")
    args.data_files = {"object_counting": str(tmp_path / "*.json")}
    with pytest.raises(MaiError, match=r"reads one task.json, this names 2 files$"):
        check_data_files(args)
    path.write_text('{"examples": []}')
    args.data_files = {"object_counting": str(path)}
    with pytest.raises(MaiError, match="has no examples$"):
        check_data_files(args)


def test_text_only_examples_have_no_images_and_others_still_need_one(fetched):
    ex = load_benchmark("date_understanding", limit=1)[0]
    assert ex.text_only and ex.load_images() == [] and check_example(ex) == []
    with pytest.raises(ValueError, match="unreadable image in x-1: the example has no image"):
        Example("x-1", "chartqa", "q", ["a"], []).load_images()


# ---------------------------------------------------------------------------
# Scoring (lm-eval's BBH zero-shot: flexible-extract, then exact match) and agreement
# ---------------------------------------------------------------------------

DATE_Q = ("Yesterday was April 30, 2021. What is the date today in MM/DD/YYYY?\nOptions:\n(A) 02/23/2021\n"
          "(B) 05/01/2021\n(C) 03/11/2021\n(D) 05/09/2021\n(E) 06/12/2021\n(F) 04/29/2021")


@pytest.mark.parametrize("prediction, score", [
    ("(B)", 1.0), ("The answer is (B).", 1.0), ("(B) 05/01/2021", 1.0), ("  (B)\n", 1.0),
    ("Answer: B", 1.0),  # a letter after a colon
    ("05/01/2021", 1.0), ("It is 05/01/2021.", 1.0),  # the option's text
    ("B", 0.0), ("B.", 0.0), ("(b)", 0.0),  # a bare letter is not read; "(X)" is case-sensitive there
    ("(D)", 0.0), ("(A) or (B)", 0.0),  # the first "(X)" counts
    ("<think>(A)?</think>(B)", 1.0),  # the reasoning block is stripped first
])
def test_date_understanding_score(prediction, score):
    bench = get_benchmark("date_understanding")
    assert bench.score(prediction, ["(B)"], DATE_Q) == score


def test_date_understanding_extracted_and_strict():
    bench = get_benchmark("date_understanding")
    assert [bench.extract(p) for p in ("B", "B. 05/01/2021", "The answer is (B).", "05/01/2021")] == [
        "(B)", "(B)", "(B)", "05/01/2021"]
    assert bench.score_extracted("B", ["(B)"], DATE_Q) == 1.0  # our reading turns a bare letter into (B)
    rows = [{"prediction": p, "references": ["(B)"], "question": DATE_Q} for p in ("(B)", "(B) 05/01/2021", "B", "(C)")]
    assert bench.aggregate(rows) == {"exact_match": 0.5, "strict_match": 0.25}
    assert bench.aggregate(rows, extracted_answers=True) == {"exact_match": 0.75, "strict_match": 0.75}
    # rows kept without their question are read against the recorded options
    meta = {"options": dict(zip("ABCDEF", ["02/23/2021", "05/01/2021", "03/11/2021", "05/09/2021", "06/12/2021",
                                              "04/29/2021"]))}
    assert bench.score("05/01/2021", ["(B)"], None, meta) == 1.0


def test_date_understanding_agreement():
    m = get_benchmark("date_understanding").matcher(DATE_Q)
    read = [m.read(p) for p in ("(B)", "B", "B. 05/01/2021", "05/01/2021", "The answer is (B).", "(F)", "no idea")]
    assert read == ["B", "B", "B", "B", "B", "F", ""]
    assert m.agree(m.read("05/01/2021"), m.read("(B)"))
    assert not m.agree(m.read("(B)"), m.read("(C)"))
    assert not m.agree(m.read("no idea"), m.read("no idea"))
    strict = get_benchmark("date_understanding").matcher(DATE_Q, "strict")
    assert strict.read("(B)") == "B" and strict.read("05/01/2021") == ""


@pytest.mark.parametrize("prediction, target, score", [
    ("7", "7", 1.0), ("7.", "7", 1.0), ("There are 7 objects.", "7", 1.0),
    ("seven", "7", 0.0),  # the reference's English pattern misses a lone "seven"
    ("three", "3", 1.0), ("seventeen", "17", 1.0), ("twenty one", "21", 1.0),
    ("I count 3 cats and 4 dogs, 7 in all", "7", 0.0),  # the first number counts
    ("none", "0", 0.0), ("-", "0", 0.0),
])
def test_object_counting_score(prediction, target, score):
    assert get_benchmark("object_counting").score(prediction, [target]) == score


def test_object_counting_agreement_and_strict_match():
    bench = get_benchmark("object_counting")
    m = bench.matcher()
    assert [m.read(p) for p in ("7", "seven", "Seven.", "7 objects", "twenty-one", "no idea")] == [
        "7", "7", "7", "7", "21", ""]
    assert m.agree(m.read("seven"), m.read("7")) and not m.agree(m.read("7"), m.read("8"))
    rows = [{"prediction": p, "references": ["7"]} for p in ("7", "7 objects", "seven", "8")]
    assert bench.aggregate(rows) == {"exact_match": 0.5, "strict_match": 0.25}


def test_word_to_num_follows_word2number():
    assert [_bbh.word_to_num(p) for p in ("three", "twenty one", "one hundred and five", "two thousand three hundred",
                                          "five million ten")] == [3, 21, 105, 2300, 5000010]
    with pytest.raises(ValueError):
        _bbh.word_to_num("thousand thousand")


@pytest.mark.parametrize("prediction, yes, no", [
    ("Yes", 1.0, 0.0), ("yes.", 1.0, 0.0), ("No, because pears float.", 0.0, 1.0), ("no", 0.0, 1.0),
    ("YES", 0.0, 0.0),  # the reference's pattern is Yes|No|yes|no
    ("I think not", 0.0, 0.0), ("Nope", 0.0, 0.0),
    ("Pears float, so no.", 0.0, 1.0),  # the first whole-word yes/no
])
def test_strategyqa_score(prediction, yes, no):
    bench = get_benchmark("strategyqa")
    assert (bench.score(prediction, ["Yes"]), bench.score(prediction, ["No"])) == (yes, no)


def test_strategyqa_agreement_is_popes():
    bench = get_benchmark("strategyqa")
    assert bench.agreement is get_benchmark("pope").agreement
    m = bench.matcher()
    assert m.agree(m.read("Yes."), m.read("yes")) and m.agree(m.read("No, because"), m.read("no"))
    assert not m.agree(m.read("Yes"), m.read("No")) and not m.agree(m.read("maybe"), m.read("maybe"))


def test_text_only_examples_run_through_evaluation(fetched, tmp_path):
    """A model system over BIG-bench examples: no image is asked for, each row is scored by its benchmark's
    rules (the generator is a stand-in that answers by the post-prompt: no model is needed for the rows)."""
    from mai.evaluate import evaluate_model
    from mai.generation import Result
    from mai.results import RunStore, read_rows

    answers = {get_benchmark("strategyqa").post_prompt: "Yes.", get_benchmark("object_counting").post_prompt: "3",
               get_benchmark("date_understanding").post_prompt: "(A)"}
    seen = []

    def generate(request):
        seen.append((request.images, request.max_new_tokens))
        return Result(text=answers[request.post_prompt], input_tokens=5, output_tokens=2,
                      times=dict(preprocess=0.0, vision=0.0, prefill=0.1, decode=0.1))

    examples = [e for name in TASKS for e in load_benchmark(name)]
    store = RunStore(tmp_path, "exp", "run", {"models": ["m"]})
    assert evaluate_model(store, generate, "m", examples, ["simple"], think_tokens=8) == 11
    rows = {r["example_id"]: r for r in read_rows(store.dir)}
    assert all(r["error"] is None for r in rows.values()) and all(images == [] for images, _ in seen)
    assert sorted({n for _, n in seen}) == [128, 256]
    assert [rows[f"strategyqa-{k}"]["score"] for k in range(4)] == [1.0, 0.0, 0.0, 1.0]  # Yes, No, No, Yes
    assert [rows[f"object_counting-{k}"]["score"] for k in range(3)] == [1.0, 0.0, 0.0]  # 3, 9, 18
    for e in examples[7:]:
        assert rows[e.id]["score"] == (1.0 if e.references == ["(A)"] else 0.0)
