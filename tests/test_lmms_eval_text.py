"""A text-only task through lmms-eval 0.7.3 and the `mai` model (issue 23), offline: a local generate_until
task with no doc_to_visual (tests/lmms_tasks.py, write_text_task), run by lmms-eval's own simple_evaluate
with --limit 2 on tiny random-weight models on the CPU, text-only (Qwen3 + SmolLM2) and vision-language
(Qwen3-VL) pairs. Each answer lmms-eval scored must be the same question asked of mai.cascade directly, and
its exact-match score must be that of those answers. Random weights, synthetic questions: the answers mean
nothing, the equalities are what is tested.

Needs the lmms extra (`bash scripts/setup.sh --lmms`); skipped with one line without it.
"""
from __future__ import annotations

import json
import string

import pytest

lmms_eval = pytest.importorskip("lmms_eval", reason="lmms-eval not installed: bash scripts/setup.sh --lmms")

from mai import MaiError, metrics  # noqa: E402
from mai.answers import Matcher  # noqa: E402
from mai.cascade import Cascade, CascadeConfig  # noqa: E402
from mai.generation import HFGenerator  # noqa: E402
from mai.models import load_model  # noqa: E402
from mai.results import read_rows  # noqa: E402

from lmms_tasks import TEXT_QUESTIONS, write_tasks, write_text_task  # noqa: E402

PAIRS = {"text-only pair": ("tiny-qwen3", "tiny-smollm2"), "vision-language pair": ("tiny-small", "tiny-large")}
MAX_NEW = 8  # the task's max_new_tokens (write_text_task)
TINY = dict(think_tokens=6, answer_tokens=3, device="cpu", dtype="float32")


def model_args(**kw) -> str:
    return ",".join(f"{k}={v}" for k, v in kw.items())


def direct_traces(small: str, large: str, questions: list[str]) -> list:
    """The questions through mai.cascade itself: no image, no post-prompt (the task's prompt is the question),
    the stated default agreement (normalised exact match: an lmms-eval task of no benchmark of ours)."""
    gens = [HFGenerator(load_model(spec, device="cpu", dtype="float32"), 0) for spec in (small, large)]
    cascade = Cascade(*gens, CascadeConfig(think_tokens=6, answer_tokens=3), small, large)
    return [cascade.answer(q, [], Matcher, "", MAX_NEW) for q in questions]


def exact_match(prediction: str, reference: str) -> bool:
    """The task's metric as its YAML states it: equal once lowercased and stripped of ASCII punctuation."""
    strip = str.maketrans("", "", string.punctuation)
    return prediction.lower().translate(strip) == reference.lower().translate(strip)


def run_text_task(tmp_path, small: str, large: str, answers: dict | None = None, run_name: str = "text"):
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    name = write_text_task(tmp_path / "tasks", n=3, answers=answers)
    manager = TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False, model_name="mai")
    out = simple_evaluate(model="mai", model_args=model_args(small=small, large=large, **TINY, out=tmp_path / "runs",
                                                             run_name=run_name),
                          tasks=[name], task_manager=manager, limit=2, batch_size=1, log_samples=True)
    rows = sorted(read_rows(tmp_path / "runs" / "lmms_eval" / run_name), key=lambda r: r["doc_id"])
    return name, out, rows


@pytest.mark.parametrize("pair", PAIRS.values(), ids=PAIRS.keys())
def test_a_text_only_task_scores_the_answers_mai_cascade_gives(pair, tmp_path):
    small, large = pair
    questions = [q for q, _ in TEXT_QUESTIONS[:2]]
    traces = direct_traces(small, large, questions)
    expected = [metrics.strip_reasoning_tags(t.prediction) for t in traces]
    # Doc 0's answer is the cascade's own, doc 1 keeps its true one: the score is 0.5 unless doc 1 is right.
    name, out, rows = run_text_task(tmp_path, small, large, answers={0: expected[0]})
    references = [expected[0], TEXT_QUESTIONS[1][1]]

    assert [r["doc_id"] for r in rows] == [0, 1]  # --limit 2 of 3 docs
    for row, trace, question in zip(rows, traces, questions):
        assert row["error"] is None and row["question"] == question  # the task's prompt, no post-prompt
        assert (row["route"], row["prediction"]) == (trace.route, trace.prediction)
        assert [(c["model"], c["mode"], c["result"]["text"]) for c in row["trace"]] == [
            (c.model, c.mode, c.result["text"]) for c in trace.calls]
        assert all(c["result"]["times"]["vision"] == 0 for c in row["trace"])
    samples = sorted(out["samples"][name], key=lambda s: s["doc_id"])
    assert [s["filtered_resps"] for s in samples] == [[text] for text in expected]  # what lmms-eval scored
    score = sum(exact_match(p, r) for p, r in zip(expected, references)) / 2
    assert out["results"][name]["exact_match,none"] == pytest.approx(score, abs=1e-12)
    assert score == (1.0 if exact_match(expected[1], references[1]) else 0.5)
    for sample, trace in zip(samples, traces):  # both models' tokens, as lmms-eval was given them
        totals = trace.totals()
        assert sample["token_counts"][0]["input_tokens"] == totals["small_input_tokens"] + totals["large_input_tokens"]
    config = json.loads((tmp_path / "runs" / "lmms_eval" / "text" / "config.json").read_text())
    assert config["agreement"] == {name: "default: normalised exact match"}


def test_an_image_task_for_a_text_only_pair_stops_with_one_line(tmp_path):
    """Refused before any request runs, not answered blind (every answer would be scored as if seen)."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    write_tasks(tmp_path / "tasks", n=2, tasks=("mai_local_pope",))
    manager = TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False, model_name="mai")
    with pytest.raises(MaiError) as err:
        simple_evaluate(model="mai", model_args=model_args(small="tiny-qwen3", large="tiny-small", **TINY,
                                                           out=tmp_path / "runs", run_name="img"),
                        tasks=["mai_local_pope"], task_manager=manager, limit=2)
    assert str(err.value) == ("mai_local_pope: doc 0 has images, but tiny-qwen3 is text-only; give a text-only "
                              "task (no doc_to_visual) or a vision-language pair")
    assert not (tmp_path / "runs" / "lmms_eval" / "img").exists()  # no run directory, no rows


def test_mai_single_asks_a_text_only_task_as_the_model_is_asked_directly(tmp_path):
    """mai-single (Table 7's S baseline) on the text-only task: each scored answer is the model's own
    Simple answer to the question with no image."""
    from lmms_eval.evaluator import simple_evaluate
    from lmms_eval.tasks import TaskManager

    from mai.generation import Request

    generator = HFGenerator(load_model("tiny-qwen3", device="cpu", dtype="float32"), 0)
    direct = [generator.generate(Request(q, [], "simple", "", MAX_NEW)).text for q, _ in TEXT_QUESTIONS[:2]]
    name = write_text_task(tmp_path / "tasks", n=3)
    manager = TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False, model_name="mai-single")
    out = simple_evaluate(model="mai-single", model_args=model_args(model="tiny-qwen3", device="cpu", dtype="float32",
                                                                    out=tmp_path / "runs", run_name="single"),
                          tasks=[name], task_manager=manager, limit=2, log_samples=True)
    rows = sorted(read_rows(tmp_path / "runs" / "lmms_eval" / "single"), key=lambda r: r["doc_id"])
    assert [(r["model"], r["mode"], r["prediction"]) for r in rows] == [("tiny-qwen3", "simple", t) for t in direct]
    samples = sorted(out["samples"][name], key=lambda s: s["doc_id"])
    returned = [metrics.strip_reasoning_tags(t) for t in direct]
    assert [s["filtered_resps"] for s in samples] == [[t] for t in returned]
    score = sum(exact_match(p, r) for p, (_, r) in zip(returned, TEXT_QUESTIONS)) / 2
    assert out["results"][name]["exact_match,none"] == pytest.approx(score, abs=1e-12)
