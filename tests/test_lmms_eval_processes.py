"""The lmms-eval plugin over several processes and across a stopped run, with lmms-eval 0.7.3 and the tiny
random-weight models on the CPU (synthetic POPE rows: they test the pipeline, not a model).

Processes: `accelerate launch --num_processes N -m lmms_eval ...` starts N processes with RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR/PORT in their environment (and ACCELERATE_USE_CPU on a CPU); here two lmms-eval
processes get exactly that environment. lmms-eval gives each rank every second document and gathers the
answers on rank 0, through the model's accelerator, as its own models expect.
Resume: a run stopped after some rows answers only the requests it has no row for.

Needs the lmms extra (`bash scripts/setup.sh --lmms`); skipped with one line without it.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

lmms_eval = pytest.importorskip("lmms_eval", reason="lmms-eval not installed: bash scripts/setup.sh --lmms")

from mai.benchmarks import get_benchmark  # noqa: E402
from mai.results import read_rows  # noqa: E402

from lmms_tasks import write_tasks  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TINY = dict(small="tiny-small", large="tiny-large", simple_tokens=3, think_tokens=6, answer_tokens=3, device="cpu",
            dtype="float32", min_pixels=4096, max_pixels=4096)
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "disabled",
       "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
TASK = "mai_local_pope"


def model_args(**kw) -> str:
    return ",".join(f"{k}={v}" for k, v in kw.items())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_each_answer_their_share_and_rank_0_scores_them_all(tmp_path):
    exe = Path(sys.executable).parent / "lmms-eval"
    if not exe.exists():
        pytest.skip("the lmms-eval command is not installed beside this Python: bash scripts/setup.sh --lmms")
    n_docs = 5  # odd: lmms-eval pads rank 1 with a copy of one of its requests
    tasks = write_tasks(tmp_path / "tasks", n=n_docs, tasks=(TASK,))
    port = _free_port()
    procs = []
    for rank in (0, 1):
        env = dict(ENV, ACCELERATE_USE_CPU="true", RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
        cmd = [str(exe), "--model", "mai", "--model_args", model_args(**TINY, out=tmp_path / "runs", run_name="two"),
               "--tasks", TASK, "--include_path", str(tasks), "--output_path", str(tmp_path / "out"),
               "--log_samples", "--batch_size", str(n_docs)]
        procs.append(subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    logs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(log[-3000:] for log in logs)
    rows = {rank: read_rows(tmp_path / "runs" / "lmms_eval" / f"two-rank{rank}of2") for rank in (0, 1)}
    # Each rank answered its share, lmms-eval's (every second document from its rank), once: no padding row.
    assert sorted(r["doc_id"] for r in rows[0]) == [0, 2, 4]
    assert sorted(r["doc_id"] for r in rows[1]) == [1, 3]
    # Rank 0 gathered every answer: lmms-eval scored exactly the texts the two ranks returned.
    samples = [json.loads(line) for line in next((tmp_path / "out").rglob(f"*_samples_{TASK}.jsonl")).read_text()
               .splitlines()]
    returned = {r["doc_id"]: r["returned"] for part in rows.values() for r in part}
    assert sorted(returned) == list(range(n_docs))
    assert {s["doc_id"]: s["filtered_resps"] for s in samples} == returned
    results = json.loads(next((tmp_path / "out").rglob("*_results.json")).read_text())["results"][TASK]
    ours = get_benchmark("pope").aggregate([dict(prediction=r["returned"], references=r["references"], meta=r["meta"])
                                            for part in rows.values() for r in part])
    for name, value in ours.items():  # lmms-eval's metrics over both ranks' answers equal ours
        assert results[f"pope_{name if name != 'f1' else 'f1_score'},none"] == pytest.approx(value, abs=1e-12)


def test_a_stopped_run_answers_only_the_requests_it_has_no_row_for(tmp_path):
    """A run stopped after two of four rows (as a killed one leaves them, a torn last line included) is run
    again under its run name: the two requests with rows are answered from them (here set to a text the
    tiny models never give, which lmms-eval then scores) and only the other two are answered by the models."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    tasks = write_tasks(tmp_path / "tasks", n=4, tasks=(TASK,))
    manager = TaskManager(include_path=str(tasks), include_defaults=False, model_name="mai")
    args = model_args(**TINY, out=tmp_path / "runs", run_name="stopped")
    first = simple_evaluate(model="mai", model_args=args, tasks=[TASK], task_manager=manager, batch_size=2,
                            log_samples=True)
    run = tmp_path / "runs" / "lmms_eval" / "stopped"
    kept = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()][:2]
    for row in kept:
        row["returned"] = "Yes, resumed"
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept) + '{"key": "torn')
    again = simple_evaluate(model="mai", model_args=args, tasks=[TASK], task_manager=manager, batch_size=2,
                            log_samples=True)
    rows = read_rows(run)
    assert sorted(r["doc_id"] for r in rows) == [0, 1, 2, 3]  # one row each: the torn line was cut off
    resumed = {r["doc_id"] for r in kept}
    scored = {s["doc_id"]: s["filtered_resps"][0] for s in again["samples"][TASK]}
    assert {d: scored[d] for d in resumed} == {d: "Yes, resumed" for d in resumed}
    before = {s["doc_id"]: s for s in first["samples"][TASK]}
    for s in again["samples"][TASK]:
        assert s["token_counts"] == before[s["doc_id"]]["token_counts"]  # from the row, or the same greedy run
        if s["doc_id"] not in resumed:
            assert s["filtered_resps"] == before[s["doc_id"]]["filtered_resps"]
