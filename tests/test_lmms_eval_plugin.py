"""MAI through lmms-eval 0.7.3, offline: `lmms-eval --model mai` (the CLI, in a subprocess) and
`simple_evaluate(model="mai")` / `model="mai-single"` on local POPE and ChartQA tasks (parquet files in the
hub schema, task YAMLs that include lmms-eval's own: tests/lmms_tasks.py), with the tiny random-weight
models on the CPU. lmms-eval's reported metrics must equal our scoring (mai/benchmarks/) of the same outputs,
what it scored must be the text we returned (think blocks stripped as its CLI strips them), and our rows
and route traces must be written. The numbers are random-weight outputs on synthetic rows: they test the
pipeline, not a model.

Needs the lmms extra (`bash scripts/setup.sh --lmms`); skipped with one line without it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

lmms_eval = pytest.importorskip("lmms_eval", reason="lmms-eval not installed: bash scripts/setup.sh --lmms")

from mai import metrics  # noqa: E402
from mai.benchmarks import get_benchmark  # noqa: E402
from mai.cascade import ROUTES  # noqa: E402
from mai.results import read_rows  # noqa: E402

from lmms_tasks import write_tasks, write_unknown_task  # noqa: E402

TASKS = ("mai_local_pope", "mai_local_chartqa")
N_DOCS = 4
# Tiny models, short outputs, 64x64 images (4 image tokens): seconds per stage on a CPU.
TINY = dict(small="tiny-small", large="tiny-large", transfer="sparse", sparse_layer=1, delta=0.8, simple_tokens=3,
            think_tokens=6, answer_tokens=3, device="cpu", dtype="float32", min_pixels=4096, max_pixels=4096)
REPO = Path(__file__).resolve().parent.parent
# PYTHONPATH: the lmms-eval command imports the `mai` of this checkout, not the one `pip install -e .` named
# (setuptools' editable finder comes after the path entries on sys.meta_path).
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "disabled",
       "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}


def model_args(**kw) -> str:
    return ",".join(f"{k}={v}" for k, v in kw.items())


def lmms_eval_cli() -> str:
    found = shutil.which("lmms-eval", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the lmms-eval command is not installed beside this Python: bash scripts/setup.sh --lmms")
    from importlib.metadata import entry_points

    if not entry_points().select(group="lmms_eval.models", name="mai"):
        pytest.skip("mai is not registered with lmms-eval: bash scripts/setup.sh --lmms (pip install -e .)")
    return found


def our_metrics(rows: list[dict], benchmark: str) -> dict:
    """Our benchmark's aggregation of our rows' returned texts, under lmms-eval's metric names."""
    scored = [dict(prediction=r["returned"], references=r["references"], meta=r["meta"]) for r in rows]
    ours = get_benchmark(benchmark).aggregate(scored)
    if benchmark == "pope":
        return {f"pope_{k if k != 'f1' else 'f1_score'}": v for k, v in ours.items()}
    return {"relaxed_overall": ours["relaxed_accuracy"], "relaxed_human_split": ours["relaxed_human_split"],
            "relaxed_augmented_split": ours["relaxed_augmented_split"]}


def scored_text(sample: dict) -> str:
    """The response lmms-eval scored for one doc: a one-item list in simple_evaluate's samples, the text
    itself in the CLI's samples file."""
    resp = sample["filtered_resps"]
    return resp[0] if isinstance(resp, list) and len(resp) == 1 else resp


def check_against_lmms_eval(results: dict, samples: dict, rows: list[dict]) -> None:
    """lmms-eval scored exactly our returned texts, and its metrics equal ours on them."""
    for task, benchmark in (("mai_local_pope", "pope"), ("mai_local_chartqa", "chartqa")):
        ours = sorted((r for r in rows if r["benchmark"] == task), key=lambda r: r["doc_id"])
        assert [r["doc_id"] for r in ours] == list(range(N_DOCS))
        assert {r["scored_as"] for r in ours} == {benchmark}  # recognised by lmms-eval's doc_to_text
        theirs = sorted(samples[task], key=lambda s: s["doc_id"])
        assert [scored_text(s) for s in theirs] == [r["returned"] for r in ours]
        for name, value in our_metrics(ours, benchmark).items():
            assert results[task][f"{name},none"] == pytest.approx(value, abs=1e-12), (task, name)


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """`lmms-eval --model mai` on the local tasks, through the CLI."""
    exe = lmms_eval_cli()
    root = tmp_path_factory.mktemp("cli")
    tasks = write_tasks(root / "tasks", n=N_DOCS)
    unknown = write_unknown_task(tasks)
    out = root / "lmms"
    cmd = [exe, "--model", "mai", "--model_args", model_args(**TINY, out=root / "runs", run_name="cli"),
           "--tasks", ",".join((*TASKS, unknown)), "--include_path", str(tasks), "--output_path", str(out), "--log_samples",
           "--batch_size", str(N_DOCS)]
    proc = subprocess.run(cmd, cwd=root, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(next(out.rglob("*_results.json")).read_text())["results"]
    samples = {t: [json.loads(line) for line in next(out.rglob(f"*_samples_{t}.jsonl")).read_text().splitlines()]
               for t in TASKS}
    return root, results, samples, read_rows(root / "runs" / "lmms_eval" / "cli")


def test_cli_metrics_equal_ours(cli_run):
    _, results, samples, rows = cli_run
    check_against_lmms_eval(results, samples, rows)
    # Token counts handed to lmms-eval: both models' calls together, the small model's reasoning apart.
    by_doc = {r["doc_id"]: r for r in rows if r["benchmark"] == "mai_local_pope"}
    for sample in samples["mai_local_pope"]:
        row = by_doc[sample["doc_id"]]
        think = [c["result"]["output_tokens"] for c in row["trace"] if c["mode"] == "think"]
        assert sample["token_counts"] == [dict(
            input_tokens=row["small_input_tokens"] + row["large_input_tokens"],
            output_tokens=row["small_output_tokens"] + row["large_output_tokens"],
            **({"reasoning_tokens": think[0]} if think else {}))]
    # The task we have no rule for is still scored by lmms-eval, on what we returned.
    assert "relaxed_overall,none" in results["mai_local_unknown"]


def test_cli_writes_our_rows_route_traces_and_config(cli_run):
    root, _, _, rows = cli_run
    run = root / "runs" / "lmms_eval" / "cli"
    config = json.loads((run / "config.json").read_text())
    assert config["agreement"] == {"mai_local_chartqa": "chartqa (paper): relaxed correctness both ways",
                                   "mai_local_pope": "pope (paper): yes/no equality",
                                   "mai_local_unknown": "default: normalised exact match"}
    assert config["cascade"]["transfer"] == "sparse" and config["lmms_eval"] == "0.7.3"
    assert set(json.loads((run / "models.json").read_text())) == {"tiny-small", "tiny-large"}
    assert len(rows) == 2 * N_DOCS + 2
    unknown = [r for r in rows if r["benchmark"] == "mai_local_unknown"]
    assert [(r["agree_rule"], "score" in r) for r in unknown] == [("default: normalised exact match", False)] * 2
    assert unknown[0]["question"] == "What is the value of bar 0?"  # its own doc_to_text, no post-prompt
    for row in rows:
        assert row["route"] in ROUTES and row["error"] is None
        modes = [c["mode"] for c in row["trace"]]
        assert modes[:2] == ["simple", "simple"]  # mutual verification first, both models
        if row["route"] == "transfer":  # sparse: the kept share of the reasoning was recorded
            assert modes[-1] == "transfer" and 0 < row["kept_tokens"] <= row["reasoning_tokens"]
        assert row["prediction"] == row["trace"][-1]["result"]["text"]  # the returned call's raw text
        assert row["returned"] == metrics.strip_reasoning_tags(row["prediction"])


def test_simple_evaluate_scores_what_the_cli_scores(cli_run, tmp_path):
    """simple_evaluate without cli_args (no reasoning-tag strip of its own) on the same tasks, with two
    ChartQA answers set to the CLI run's returned texts: the same outputs, and lmms-eval's metrics equal ours
    (relaxed accuracy 0.5 on ChartQA: a metric that is not zero by construction)."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    _, _, _, cli_rows = cli_run
    chartqa = {r["doc_id"]: r["returned"] for r in cli_rows if r["benchmark"] == "mai_local_chartqa"}
    tasks = write_tasks(tmp_path / "tasks", n=N_DOCS, answers={"mai_local_chartqa": {0: chartqa[0], 1: chartqa[1]}})
    manager = TaskManager(include_path=str(tasks), include_defaults=False, model_name="mai")
    out = simple_evaluate(model="mai", model_args=model_args(**TINY, out=tmp_path / "runs", run_name="api"),
                          tasks=list(TASKS), task_manager=manager, batch_size=N_DOCS, log_samples=True)
    rows = read_rows(tmp_path / "runs" / "lmms_eval" / "api")
    key = lambda r: (r["benchmark"], r["doc_id"])  # noqa: E731
    assert sorted((key(r), r["prediction"]) for r in rows) == sorted((key(r), r["prediction"]) for r in cli_rows
                                                                     if r["benchmark"] in TASKS)
    samples = {t: out["samples"][t] for t in TASKS}
    check_against_lmms_eval(out["results"], samples, rows)
    assert out["results"]["mai_local_chartqa"]["relaxed_overall,none"] == 0.5


def test_mai_single_think_on_a_checkpoint_directory(tmp_path):
    """mai-single with the Think prompt (an R baseline) on a checkpoint directory written by
    scripts/make_checkpoint.py's writer: its rows, and lmms-eval's metric equals ours."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from mai.checkpoints import write_qwen3_vl

    checkpoint = tmp_path / "tiny-small-ckpt"
    write_qwen3_vl("tiny-small", checkpoint)
    tasks = write_tasks(tmp_path / "tasks", n=2, tasks=("mai_local_chartqa",))
    manager = TaskManager(include_path=str(tasks), include_defaults=False, model_name="mai-single")
    args = model_args(model=checkpoint, mode="think", think_tokens=6, device="cpu", dtype="float32",
                      min_pixels=4096, max_pixels=4096, out=tmp_path / "runs", run_name="single")
    out = simple_evaluate(model="mai-single", model_args=args, tasks=["mai_local_chartqa"], task_manager=manager,
                          batch_size=2, log_samples=True)
    rows = sorted(read_rows(tmp_path / "runs" / "lmms_eval" / "single"), key=lambda r: r["doc_id"])
    assert [(r["mode"], r["model"], r["output_tokens"] <= 6) for r in rows] == [("think", "tiny-small-ckpt", True)] * 2
    # The Think prompt leaves ChartQA's post-prompt out (mai.prompts); the row keeps the context as asked.
    assert all(r["question"].endswith("\nAnswer the question with a single word.") for r in rows)
    theirs = sorted(out["samples"]["mai_local_chartqa"], key=lambda s: s["doc_id"])
    assert [scored_text(s) for s in theirs] == [r["returned"] for r in rows]
    assert [s["token_counts"][0]["reasoning_tokens"] for s in theirs] == [r["output_tokens"] for r in rows]
    scored = [dict(prediction=r["returned"], references=r["references"], meta=r["meta"]) for r in rows]
    assert out["results"]["mai_local_chartqa"]["relaxed_overall,none"] == get_benchmark(
        "chartqa").aggregate(scored)["relaxed_accuracy"]
