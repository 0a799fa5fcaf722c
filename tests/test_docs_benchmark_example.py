"""docs/benchmarks.md's local text task: its two files, taken from the page as written, register a benchmark
whose few-shot Think and Simple prompts carry its own exemplars, and the page's command runs it through
experiments/10_mai.py on the tiny random pair (what a user's task on the cpu-real preset needs, whose Think
prompt is fewshot-cot)."""
import argparse
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

import mai.benchmarks as benchmarks
from mai.benchmarks import BENCHMARKS, get_benchmark

REPO = Path(__file__).resolve().parents[1]
SECTION = "## Adding a local text task with its own exemplars"


def section() -> str:
    text = (REPO / "docs" / "benchmarks.md").read_text()
    part = text[text.index(SECTION):]
    end = part.find("\n## ", 1)
    return part if end < 0 else part[:end]


def fenced(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", section(), re.S)


@pytest.fixture
def capitals(tmp_path, monkeypatch):
    """The page's capitals.py and capitals.jsonl in a folder on mai.benchmarks' path, as putting them in
    mai/benchmarks/ does; forgotten afterwards."""
    (code,), (questions,) = fenced("python"), fenced("json")
    folder = tmp_path / "more_benchmarks"
    folder.mkdir()
    (folder / "capitals.py").write_text(code)
    (folder / "capitals.jsonl").write_text(questions)
    monkeypatch.setattr(benchmarks, "__path__", [*benchmarks.__path__, str(folder)])
    assert "capitals" not in BENCHMARKS
    benchmarks.discover()
    yield folder
    BENCHMARKS.pop("capitals", None)
    sys.modules.pop("mai.benchmarks.capitals", None)


def test_the_page_names_the_files_it_shows():
    text = section()
    assert "`mai/benchmarks/capitals.py`" in text and "`mai/benchmarks/capitals.jsonl`" in text
    assert [json.loads(line)["answer"] for line in fenced("json")[0].splitlines()] == ["Paris", "Ottawa", "Canberra"]


def test_the_local_task_registers_and_its_prompts_carry_its_exemplars(capitals):
    from mai import cli
    from mai.experiment import load_examples

    bench = get_benchmark("capitals")
    assert type(bench).__module__ == "mai.benchmarks.capitals"  # found by its file name, registered by itself
    args = argparse.Namespace(benchmarks=["capitals"], think_prompt="fewshot-cot", simple_prompt="fewshot-direct",
                              limit=2, seed=0, data_files={}, split=None)
    cli.check_split_and_think_prompt(args)  # what stops a task without exemplars, before any model loads
    examples = load_examples(args)
    assert len(examples) == 2 and {e.references[0] for e in examples} <= {"Paris", "Ottawa", "Canberra"}
    for ex in examples:
        assert ex.text_only and ex.images == []
        assert ex.think_prompt.startswith(bench.exemplars()) and ex.think_prompt.endswith("Let's think step by step.")
        assert ex.simple_prompt.startswith(bench.direct_exemplars()) and ex.question in ex.simple_prompt
    # Scored by its own correct(): the last "the answer is X", else the whole answer.
    assert bench.score("Let's think step by step. It is Ottawa. So the answer is Ottawa.", ["Ottawa"]) == 1.0
    assert bench.score("ottawa", ["Ottawa"]) == 1.0 and bench.score("Toronto", ["Ottawa"]) == 0.0


def test_a_text_task_without_exemplars_stops_in_one_line(capitals, monkeypatch):
    from mai import MaiError, cli

    monkeypatch.delattr(type(get_benchmark("capitals")), "exemplars")
    args = argparse.Namespace(benchmarks=["capitals"], think_prompt="fewshot-cot", split=None)
    with pytest.raises(MaiError, match="--think-prompt fewshot-cot: capitals ship\\(s\\) no few-shot exemplars"):
        cli.check_split_and_think_prompt(args)


def test_the_pages_command_runs(capitals, tmp_path, experiment, monkeypatch):
    """The page's first command, as written, plus where its files go and no W&B."""
    (block,) = [b for b in fenced("bash")]
    line = next(x for x in block.splitlines() if x.startswith(".venv/bin/python"))
    argv = shlex.split(line)
    assert argv[:2] == [".venv/bin/python", "experiments/10_mai.py"] and "--preset" in argv and "cpu" in argv
    monkeypatch.chdir(tmp_path)
    experiment("10_mai").main([*argv[2:], "--out", str(tmp_path / "runs"), "--wandb", "disabled"])
    rows = [json.loads(x) for x in (tmp_path / "runs" / "10_mai" / "capitals" / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {r["benchmark"] for r in rows} == {"capitals"}
    assert all(r["error"] is None and r["meta"]["think_prompt"] == "fewshot-cot" for r in rows)
    reasoning = [r for r in rows if r["kind"] == "large-R"]
    simple = [r for r in rows if r["kind"] == "large-S"]
    assert all(r["input_tokens"] > s["input_tokens"] for r, s in zip(reasoning, simple))  # the exemplars went in
    table = tmp_path / "runs" / "10_mai" / "capitals" / "report" / "paper_tables" / "table10_mai.cpu.md"
    assert "REAL data (capitals.jsonl (3 questions))" in table.read_text()
