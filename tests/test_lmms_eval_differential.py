"""Differential test: our scoring (mai/benchmarks/) against lmms-eval 0.7.3's own task functions.

lmms-eval's side is its real pipeline for each task: the evaluator's strip_reasoning_tags with the CLI's
default --reasoning_tags (read off its own argument parser), then the task object's process_results
(ConfigurableTask: the whitespace strip, then the task's function or metric) and its aggregation, on
ConfigurableTask objects built by lmms-eval from local YAMLs that include its task files (chartqa, pope,
infovqa_val, realworldqa, mmbench_en_dev_static). Ours: each benchmark's score / aggregate on the raw text
(mai/benchmarks/<name>.py; POPE's pope_metrics, MMBench's choices_of and CircularEval), and
mai.metrics.extract_mcq_answer.
The cases are generated from a seeded Random (thousands per task, synthetic); every one must agree.

Needs the lmms extra (`bash scripts/setup.sh --lmms`); skipped with one line without it.
"""
from __future__ import annotations

import math
import random
import sys
from types import SimpleNamespace

import pytest

lmms_eval = pytest.importorskip("lmms_eval", reason="lmms-eval not installed: bash scripts/setup.sh --lmms")

from mai import metrics  # noqa: E402
from mai.benchmarks import get_benchmark  # noqa: E402
from mai.benchmarks.mmbench import choices_of  # noqa: E402
from mai.benchmarks.pope import pope_metrics  # noqa: E402

from lmms_tasks import LOCAL_TASKS, write_tasks  # noqa: E402

N = 3000  # cases per task
MMBENCH_QUESTIONS = 400  # each with up to 4 rotated copies


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """lmms-eval's ConfigurableTasks for the five benchmarks (one drawn row each, to construct them)."""
    from lmms_eval.tasks import TaskManager, get_task_dict

    directory = write_tasks(tmp_path_factory.mktemp("lmms_tasks"), n=1, tasks=tuple(LOCAL_TASKS))
    manager = TaskManager(include_path=str(directory), include_defaults=False, model_name="mai")
    return get_task_dict(list(LOCAL_TASKS), manager)


@pytest.fixture(scope="module")
def cli_tags(monkeypatch_module):
    """The lmms-eval CLI's default --reasoning_tags, parsed as its evaluator parses them."""
    from lmms_eval.__main__ import parse_eval_args
    from lmms_eval.api.reasoning import parse_reasoning_tags_config

    monkeypatch_module.setattr(sys, "argv", ["lmms-eval"])
    _, args = parse_eval_args()
    return parse_reasoning_tags_config(cli_value=args.reasoning_tags)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def lmms_response(raw: str, tags) -> str:
    """What the evaluator hands process_results (evaluator.py: strip_reasoning_tags with the CLI tags)."""
    from lmms_eval.api.reasoning import strip_reasoning_tags

    return strip_reasoning_tags(raw, tags)


# ---------------------------------------------------------------------------------------------------
# Generated raw outputs: the shapes real outputs take, and the corners of each scorer
# ---------------------------------------------------------------------------------------------------

WRAPS = ["{}", " {} ", "{}.", "{}\n", "**{}**", "({})", "{}%", "The answer is {}", "Answer: {}", "{}, I think",
         "<think>hmm {}</think>{}", "<think>{}", "</think>{}", "<analysis>x</analysis> {}", "{}</think>{}",
         "<THINK>{}</THINK>", "I choose {}", "{} or {}", "Option {}", "{}:", "{})", ":{}", "\t{}\t"]
WORDS = ["yes", "no", "Yes", "NO", "yes.", "Yes, there is", "none", "nan", "inf", "1e3", "1_000", "ß", "İ", "",
         "Left", "left", "Middle", "a red car", "A cat", "banana", "Downhill", "two", "three"]


def number(rng: random.Random) -> str:
    x = rng.choice([0, 0.0, 1, 5, 12.5, -3, 100, 2024, 0.05, 1e-3, rng.uniform(-200, 200), rng.randint(0, 99)])
    text = rng.choice(["{}", "{:.1f}", "{:.3f}", "{:,}" if isinstance(x, int) else "{}"]).format(x)
    return text + ("%" if rng.random() < 0.1 else "")


def near(target: str) -> list[str]:
    """Numbers around a numeric target, at ChartQA's 5% boundary too (20 -> 21 and 19, exactly 5% off)."""
    try:
        t = float(target.rstrip("%"))
    except ValueError:
        return []
    if not math.isfinite(t):
        return []
    out = [f"{t * f:g}" for f in (1.0, 1.049, 1.051, 0.949, 0.951, 2.0)]
    if t == int(t) and int(t) % 20 == 0:
        out += [str(int(t) + int(t) // 20), str(int(t) - int(t) // 20)]
    return out


def atom(rng: random.Random, extra=()) -> str:
    pool = rng.choice([WORDS, list("ABCDEFGHabcd"), [number(rng)], list(extra) or WORDS])
    return rng.choice(pool)


def raw_output(rng: random.Random, extra=()) -> str:
    wrap = rng.choice(WRAPS)
    return wrap.format(*(atom(rng, extra) for _ in range(wrap.count("{}"))))


# ---------------------------------------------------------------------------------------------------
# The five tasks
# ---------------------------------------------------------------------------------------------------

def test_reasoning_tags_are_the_clis(cli_tags):
    assert [tuple(p) for p in cli_tags] == list(metrics.REASONING_TAGS)


def test_chartqa(tasks, cli_tags):
    task, rng, ours_b = tasks["mai_local_chartqa"], random.Random(1), get_benchmark("chartqa")
    per_doc, rows = [], []
    for i in range(N):
        target = rng.choice([number(rng), str(20 * rng.randint(1, 50)), rng.choice(WORDS), atom(rng)])
        doc = {"question": "q", "answer": target, "type": rng.choice(["human_test", "augmented_test"])}
        raw = raw_output(rng, extra=[target, target.upper(), target + "%", *near(target) * 2])
        per_doc.append(task.process_results(doc, [lmms_response(raw, cli_tags)]))
        rows.append({"prediction": raw, "references": [target], "meta": {"type": doc["type"]}})
        assert ours_b.score(raw, [target]) == per_doc[-1]["relaxed_overall"], (raw, target)
    ours = ours_b.aggregate(rows)
    agg = task.aggregation()
    for theirs, key in (("relaxed_overall", "relaxed_accuracy"), ("relaxed_human_split", "relaxed_human_split"),
                        ("relaxed_augmented_split", "relaxed_augmented_split")):
        values = [d[theirs] for d in per_doc if theirs in d]
        assert agg[theirs](values) == pytest.approx(ours[key], abs=1e-12)
    assert 0 < ours["relaxed_accuracy"] < 1  # the cases reach both outcomes


def test_pope(tasks, cli_tags):
    task, rng = tasks["mai_local_pope"], random.Random(2)
    per_doc, preds, truths = [], [], []
    for i in range(N):
        truth = rng.choice(["yes", "no", "Yes", " no "])
        doc = {"question_id": str(i), "answer": truth}
        raw = raw_output(rng)
        per_doc.append(task.process_results(doc, [lmms_response(raw, cli_tags)]))
        preds.append(metrics.lmms_eval_response(raw))
        truths.append(truth)
        assert get_benchmark("pope").score(raw, [truth]) == per_doc[-1]["pope_accuracy"]["score"], (raw, truth)
    ours = pope_metrics(preds, truths)
    agg = task.aggregation()
    for theirs, key in (("pope_accuracy", "accuracy"), ("pope_precision", "precision"), ("pope_recall", "recall"),
                        ("pope_f1_score", "f1"), ("pope_yes_ratio", "yes_ratio")):
        assert agg[theirs]([d[theirs] for d in per_doc]) == pytest.approx(ours[key], abs=1e-12), theirs
    assert 0 < ours["accuracy"] < 1 and 0 < ours["precision"] < 1


def test_infovqa(tasks, cli_tags):
    task, rng, ours_b = tasks["mai_local_infovqa"], random.Random(3), get_benchmark("infovqa")
    per_doc, rows = [], []
    for i in range(N):
        answers = [rng.choice(WORDS + ["panel 3", "Panel  3", "p3", "ßtraße", "12,345", "panel"])
                   for _ in range(rng.randint(1, 3))]
        doc = {"questionId": str(i), "question": "q", "answers": answers}
        half = [a[:len(a) // 2] + "#" * (len(a) - len(a) // 2) for a in answers]  # ANLS exactly 0.5 when even
        raw = raw_output(rng, extra=answers + [a + "s" for a in answers] + half)
        per_doc.append(task.process_results(doc, [lmms_response(raw, cli_tags)]))
        rows.append({"prediction": raw, "references": answers})
        assert ours_b.score(raw, answers) == pytest.approx(per_doc[-1]["anls"], abs=1e-12), (raw, answers)
    assert task.aggregation()["anls"]([d["anls"] for d in per_doc]) == pytest.approx(
        ours_b.aggregate(rows)["anls"], abs=1e-12)


def test_realworldqa(tasks, cli_tags):
    task, rng, ours_b = tasks["mai_local_realworldqa"], random.Random(4), get_benchmark("realworldqa")
    per_doc, rows = [], []
    for i in range(N):
        target = rng.choice(["A", "B", "C", "D", "a", " B ", "0", "3", "Downhill", "Left", "two"])
        doc = {"question": "Which?\nA. Left\nB. Right", "answer": target}
        raw = raw_output(rng, extra=[target, "Left", "Right"])
        per_doc.append(task.process_results(doc, [lmms_response(raw, cli_tags)]))
        rows.append({"prediction": raw, "references": [target]})
        assert ours_b.score(raw, [target]) == per_doc[-1]["exact_match"], (raw, target)
    assert task.aggregation()["exact_match"]([d["exact_match"] for d in per_doc]) == pytest.approx(
        ours_b.aggregate(rows)["exact_match"], abs=1e-12)


def mmbench_docs(rng: random.Random) -> list[dict]:
    """Questions with rotated copies (index + k * 1e6), some copies missing, options that may be absent,
    None or the string "nan", as the dev split has them."""
    docs = []
    texts = ["cat", "dog", "a red car", "banana", "nan", "left", "A", "Left side"]
    for q in range(MMBENCH_QUESTIONS):
        options = rng.sample(texts, 4)
        if rng.random() < 0.2:
            options[3] = rng.choice([None, "nan"])
        for k in range(rng.choice([1, 2, 4, 4])):
            if k and rng.random() < 0.1:
                continue  # a rotated copy the run lacks
            rotated = options[k:] + options[:k]
            doc = {"index": q + k * 1_000_000, "question": "Which?", "hint": "nan", "source": "s", "split": "dev",
                   "category": rng.choice(["x", "y"]), "L2-category": "z", "answer": "ABCD"[(q + k) % 4]}
            doc.update({c: v for c, v in zip("ABCD", rotated) if v is not None})
            docs.append(doc)
    return docs


def test_mmbench_static_circular(tasks, cli_tags, tmp_path, capsys):
    task, rng = tasks["mai_local_mmbench"], random.Random(5)
    docs = mmbench_docs(rng)
    per_doc, rows = [], []
    for doc in docs:
        texts = [str(doc.get(c)) for c in "ABCD"]
        raw = raw_output(rng, extra=[doc["answer"]] * 3 + texts)
        per_doc.append(task.process_results(doc, [lmms_response(raw, cli_tags)]))
        rows.append({"prediction": raw, "references": [doc["answer"]],
                     "meta": {"index": doc["index"], "choices": choices_of(doc)}})
    args = SimpleNamespace(output_path=str(tmp_path))
    theirs = task.aggregation()["gpt_eval_score"]([d["gpt_eval_score"] for d in per_doc], args)
    ours = get_benchmark("mmbench").aggregate(rows)
    capsys.readouterr()
    assert len(docs) > 1000
    assert theirs == pytest.approx(100 * ours["circular_accuracy"], abs=1e-9)
    assert 0 < ours["circular_accuracy"] < ours["accuracy"] < 1  # circular grouping makes a difference


def test_extract_mcq_answer():
    from lmms_eval.tasks._task_utils.mcq_extract import extract_mcq_answer

    rng = random.Random(6)
    phrases = ["the answer is", "I choose", "my answer is", "答案是", "correct option is", "Option", "", ""]
    mismatches = []
    forms = ["({})", "{}.", "{}:", "{})", "{}", "{},", "[{}]", "{}{}"]
    for _ in range(5 * N):
        if rng.random() < 0.5:  # several letter forms in one text: which form outranks which
            pieces = [rng.choice(forms).format(*rng.choices("ABCDEFa", k=2)) for _ in range(rng.randint(1, 4))]
            pieces += rng.sample(["cat", "is", "and", "not", "Answer", rng.choice(phrases)], rng.randint(0, 3))
            rng.shuffle(pieces)
            text = " ".join(pieces)
        else:
            parts = [rng.choice(phrases), raw_output(rng), rng.choice(["", ".", "!", "?", ")", " ", "\n"])]
            text = " ".join(p for p in parts if p) if rng.random() < 0.7 else raw_output(rng)
        choices = rng.choice([None, list("ABCD"), list("ABCDE"), list("AB")])
        if extract_mcq_answer(text, choices) != metrics.extract_mcq_answer(text, choices):
            mismatches.append((text, choices))
    assert mismatches == []
