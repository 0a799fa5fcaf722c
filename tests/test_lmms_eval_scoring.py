"""Scoring a raw output end to end as lmms-eval does at 75571cfe: every example of issue 9, hand-checked.

Each expected value is worked out by hand from lmms-eval's files at that commit (api/reasoning.py,
api/task.py, tasks/{chartqa,pope,realworldqa,mmbench}, tasks/_task_utils/mcq_extract.py) and, for
RealWorldQA's older scoring, at d0c1eae7.  The comment beside a case says why lmms-eval gives it.
"""

import pytest

from analysis import report
from mai import metrics
from mai.benchmarks import get_benchmark
from mai.benchmarks.mmbench import letter_of
from mai.benchmarks.realworldqa import RealWorldQA
from mai.data import Example
from mai.evaluate import scored_row
from mai.metrics import extract_mcq_answer, strip_reasoning_tags

CHARTQA, POPE, INFOVQA, REALWORLDQA, MMBENCH = map(get_benchmark, ("chartqa", "pope", "infovqa", "realworldqa", "mmbench"))
RWQA_D0C1EAE7 = RealWorldQA(scoring="d0c1eae7")


def test_the_commit_is_named():
    assert metrics.LMMS_EVAL_COMMIT == "75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3"


# ---------------------------------------------------------------------------
# No answer cue is read (the first examples)
# ---------------------------------------------------------------------------


def test_answer_cues_are_not_read():
    assert CHARTQA.score("The answer is 5", ["5"]) == 0.0  # "the answer is 5" != "5"
    # ANLS: "answer: 42" vs "42" is 8 edits over 10 characters; 1 - 0.8 < 0.5 -> 0.
    assert INFOVQA.score("Answer: 42", ["42"]) == 0.0
    assert POPE.score("The answer is yes", ["yes"]) == 0.0


def test_score_extracted_reads_the_cue():
    """Our extraction is the separate step a reasoning row also reports."""
    assert CHARTQA.score_extracted("The answer is 5", ["5"]) == 1.0
    assert POPE.score_extracted("<think>a dog</think>The answer is yes", ["yes"]) == 1.0


def test_scored_row_keeps_both_scores():
    ex = Example("chartqa-1", "chartqa", "What is the value?", ["5"], [], meta={"type": "human_test"})
    row = scored_row("k", ex, get_benchmark("chartqa"), {"model": "2B", "mode": "think"},
                     {"text": "<think>the bar reads 5</think>The answer is 5"})
    assert (row["score"], row["score_extracted"]) == (0.0, 1.0)
    assert row["prediction"] == "<think>the bar reads 5</think>The answer is 5"


# ---------------------------------------------------------------------------
# Reasoning tags (api/reasoning.py with the CLI's default tag pairs)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw, left", [
    ("<think>long</think>\n\n5", "5"),
    ("<think>abc 5", "<think>abc 5"),  # unclosed: the text stays, tag and all
    ("<analysis>look at the bars</analysis> 5 ", "5"),
    ("<think>a</think><analysis>b</analysis>yes", "yes"),
    ("I reasoned.</think> 7", "7"),  # a closing tag alone (prefilled opening tag): what follows the last one
    ("a</think>b</think>C", "C"),
    ("<think>x</think>y<think>z</think>w", "yw"),  # every closed block goes
    ("<THINK>x</THINK>5", "<THINK>x</THINK>5"),  # case-sensitive
    ("</think>x<think>", "</think>x<think>"),  # no closing tag after the opening one: left alone
])
def test_reasoning_tags(raw, left):
    assert strip_reasoning_tags(raw) == left


def test_unclosed_think_is_scored_with_its_text():
    assert CHARTQA.score("<think>the bar says 5", ["5"]) == 0.0
    assert POPE.score("<think>\nyes", ["yes"]) == 0.0
    assert CHARTQA.score("<analysis>the bar says</analysis>5", ["5"]) == 1.0


# ---------------------------------------------------------------------------
# RealWorldQA, at 75571cfe and at d0c1eae7
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw, target, now, before", [
    ("a", "A", 0.0, 1.0),  # extract_mcq_answer reads upper-case letters only; the old filter lowercased
    ("(b)", "B", 0.0, 1.0),
    ("two", "2", 0.0, 1.0),  # the old NumberWordsToDigitsFilter is gone
    ("I think A", "A", 1.0, 0.0),  # "A " and an ending "A"; the old one compared "i think a"
    ("option B", "B", 1.0, 0.0),
    ("The correct answer is C.", "C", 1.0, 0.0),
    ("B", "B", 1.0, 1.0),
    ("Downhill.", "Downhill", 1.0, 1.0),  # an open answer: lower().strip().rstrip(".")
    ("3.5", "3.5", 1.0, 0.0),  # the old filter deleted the "."
])
def test_realworldqa(raw, target, now, before):
    assert REALWORLDQA.score(raw, [target]) == now
    assert RWQA_D0C1EAE7.score(raw, [target]) == before


# ---------------------------------------------------------------------------
# extract_mcq_answer (tasks/_task_utils/mcq_extract.py)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("raw, letter", [
    ("The correct answer is (B).", "B"),  # its own docstring example
    ("B or C? I choose C", "B"),  # a letter that starts the text outranks an answer phrase
    ("I choose C, not B", "B"),  # a letter that ends the text (9) outranks the phrase's C (7)
    ("I choose C, not B.", "B"),  # the final "." is stripped first
    ("The answer is E", "E"),  # E is a default choice (A-H) ...
    ("cat", ""),
    ("", ""),
])
def test_extract_mcq_answer(raw, letter):
    assert extract_mcq_answer(raw) == letter


def test_extract_mcq_answer_with_choices():
    assert extract_mcq_answer("The answer is E", ["A", "B", "C", "D"]) == ""  # ... but not among A-D
    # Nothing else found: the fallback takes any occurrence, even inside a word.
    assert extract_mcq_answer("Everything", ["A", "B", "C", "D", "E"]) == "E"
    assert extract_mcq_answer("xDx", ["A", "B", "C", "D"]) == "D"


# ---------------------------------------------------------------------------
# MMBench static (mmbench_evals.py, eval_method="static") and CircularEval
# ---------------------------------------------------------------------------

CHOICES = {"A": "cat", "B": "dog", "C": "a red car"}


@pytest.mark.parametrize("raw, letter", [
    ("B", "B"),
    ("(C).", "C"),  # can_infer_option's wrapped forms
    ("It is a dog", "B"),  # can_infer_text: one option text in the answer
    ("A cat and a dog", "A"),  # "A" may be an article (4 words): two texts match; extract_mcq_answer's start
    ("I see a cat", "A"),
    ("no idea", ""),
])
def test_mmbench_letter(raw, letter):
    assert letter_of(raw, dict(CHOICES)) == letter


def test_mmbench_nan_option_text_is_matched_as_lmms_eval_does():
    # build_choices keeps the string "nan" (pd.isna("nan") is False): "banana" contains "banana" and
    # "nan", so the text match is ambiguous, and extract_mcq_answer finds no upper-case letter.
    choices = {"A": "banana", "B": "dog", "C": "cat", "D": "nan"}
    assert MMBENCH.score("banana", ["A"], meta={"choices": choices}) == 0.0
    assert MMBENCH.score("banana", ["A"], meta={"choices": {"A": "banana", "B": "dog"}}) == 1.0


def _mmbench_rows(wrong: set[int]) -> list[dict]:
    rows = []
    for question, answer in ((1, "A"), (2, "C")):
        for rotation in range(4):
            index = question + rotation * 1_000_000
            letter = "ABCD"[("ABCD".index(answer) + rotation) % 4]  # the right letter moves with the rotation
            said = "D" if index in wrong and letter != "D" else ("A" if index in wrong else letter)
            rows.append({"benchmark": "mmbench", "prediction": said, "references": [letter],
                         "meta": {"index": index, "choices": {"A": "w", "B": "x", "C": "y", "D": "z"}}})
    return rows


def test_mmbench_circular_two_questions_four_rotations_one_wrong():
    rows = _mmbench_rows(wrong={2_000_002})
    assert MMBENCH.aggregate(rows) == {"circular_accuracy": 0.5, "accuracy": 7 / 8, "questions": 2}
    assert report.accuracy(rows) == 50.0  # lmms-eval reports it x100
    assert report.accuracy(_mmbench_rows(wrong=set())) == 100.0


def test_mmbench_rotation_without_its_question_counts_nowhere():
    rows = [r for r in _mmbench_rows(wrong={1_000_001}) if r["meta"]["index"] != 1]
    assert MMBENCH.aggregate(rows)["questions"] == 1
    assert MMBENCH.aggregate(rows)["circular_accuracy"] == 1.0


# ---------------------------------------------------------------------------
# ChartQA: its post-prompt and its splits
# ---------------------------------------------------------------------------


def test_chartqa_post_prompt():
    assert get_benchmark("chartqa").post_prompt == "\nAnswer the question with a single word."


def test_chartqa_splits_beside_overall():
    rows = [{"benchmark": "chartqa", "prediction": p, "references": [t], "meta": {"type": k}} for p, t, k in [
        ("5", "5", "human_test"), ("6", "5", "human_test"), ("Yes", "yes", "augmented_test"),
        ("10.4", "10", "augmented_test")]]
    assert CHARTQA.aggregate(rows) == {"relaxed_accuracy": 0.75, "relaxed_human_split": 0.5,
                                          "relaxed_augmented_split": 1.0}
    assert report.chartqa_splits(rows) == {"human_split": 50.0, "augmented_split": 100.0}
    synth = [dict(r, meta={"type": "synthetic"}) for r in rows]
    assert CHARTQA.aggregate(synth) == {"relaxed_accuracy": 0.75}
