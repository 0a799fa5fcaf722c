"""Per-benchmark scoring with lmms-eval semantics, plus answer extraction for the cascade.

Metric name -> benchmark (``METRICS``)::

    "relaxed"  ChartQA relaxed accuracy (and our synthetic synth-chartqa)
    "anls"     InfoVQA ANLS
    "pope"     POPE accuracy / precision / recall / F1 / yes-ratio (and synth-pope)
    "exact"    RealWorldQA exact match
    "option"   MMBench option letter

The scorers (``relaxed_correctness``, ``anls``, ``pope_metrics``, ``exact_match``)
reproduce lmms-eval (EvolvingLMMs-Lab/lmms-eval) as read from its source:

* ``lmms_eval/api/task.py``: ``ConfigurableTask.process_results`` strips surrounding
  whitespace from every ``generate_until`` response before any task scorer sees it
  (the reference/target is *not* stripped).
* ``lmms_eval/tasks/chartqa/utils.py``: ``relaxed_correctness``.
* ``lmms_eval/api/metrics.py``: ``anls`` (the default InfoVQA metric; no task-specific
  ``process_results``).
* ``lmms_eval/tasks/pope/utils.py``: ``pope_process_results`` and ``pope_aggregate_*``.
* ``lmms_eval/tasks/realworldqa/realworldqa.yaml`` + ``utils.py``: the
  ``flexible-extract`` filters (``NumberWordsToDigitsFilter`` then
  ``MultiChoiceRegexFilter``) and ``realworldqa_process_results``.
* ``lmms_eval/tasks/mmbench/mmbench_evals.py``: MMBench is matched by a GPT judge there.
* ``lmms_eval/api/reasoning.py`` (v0.7): ``strip_reasoning_tags`` removes
  ``<think>...</think>`` before ``process_results`` in the evaluator, then ``.strip()``.

Answer extraction (``mai.answers.extract_answer``) runs before scoring and before two models'
answers are compared.  Where it departs from lmms-eval:

1. Think blocks.  lmms-eval (v0.7+) strips them at pipeline level, as we do.  Older
   lmms-eval versions and its Qwen3-VL wrapper (``models/simple/qwen3_vl.py``) do not
   strip them at all.  Ours takes the text after the *last* lone ``</think>``; one
   lmms-eval version takes the text after the *first* one.  lmms-eval v0.7 strips
   *after* the RealWorldQA filters, and those filters have already deleted the ``<``,
   ``/`` and ``>`` characters.  We strip before the filters.  All of this only matters
   for outputs that contain think tags.
2. Answer cues ("The answer is", "final answer is", "Answer:"): lmms-eval has no such
   step.  We take the text after the last cue, first line only.
3. Cosmetic clean-up.  We strip surrounding quotes, asterisks and backticks, and one
   trailing ``. , ; : ! ?``.  For "pope" we map "Yes, ..." / "No, ..." to "yes"/"no".
   lmms-eval does none of this.  We apply these steps **only to reasoning outputs**:
   text that had a think tag or an answer cue.  A plain short answer, as an Instruct
   checkpoint gives to "Answer the question using a single word or phrase.", is left
   as lmms-eval leaves it (whitespace-stripped only).  So scores of plain outputs are
   identical to lmms-eval: "Yes." still fails against "Yes" on ChartQA, as it does
   there.
4. MMBench ("option"): lmms-eval matches the answer to an option with a GPT judge
   (after a cheap letter heuristic), using CircularEval over rotated copies of each
   question.  We extract the option letter with rules and compare it exactly, per
   example.  No judge and no circular grouping, so numbers can differ from published
   MMBench numbers.
5. RealWorldQA: the lmms-eval filter maps a *choice text* found in the answer (e.g.
   "Left") to its letter.  That needs the question text, so it is applied only when
   ``question=`` is passed to ``exact_match``/``score`` (``aggregate`` passes
   ``row["question"]`` when present).  lmms-eval maps number words ("two" -> "2") on
   the unstripped response; we map them on the extracted (stripped) answer.

``answers_agree`` (the cascade's matcher) is our own and is not an lmms-eval score.  It
always applies the clean-up from item 3 to both answers, whether or not they are
reasoning outputs.
"""

from __future__ import annotations

import re
from typing import Iterable

from mai import MaiError

METRICS = ("relaxed", "anls", "pope", "exact", "option")

# The number each benchmark reports in the paper's tables: a key of aggregate()'s result
# (pope returns all five of pope_metrics; accuracy is its headline).
HEADLINE = {
    "relaxed": "relaxed_accuracy",
    "anls": "anls",
    "pope": "accuracy",
    "exact": "exact_match",
    "option": "accuracy",
}


class UnknownMetricError(MaiError, ValueError):
    """An unknown metric name: a ValueError that the CLI prints as one line."""


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise UnknownMetricError(f"unknown metric {metric!r}; known metrics: {', '.join(METRICS)}")


# ---------------------------------------------------------------------------
# ChartQA: relaxed correctness (lmms_eval/tasks/chartqa/utils.py)
# ---------------------------------------------------------------------------


def _chartqa_float(text: str) -> float | None:
    """Parse as lmms-eval does: a trailing '%' (all trailing '%'s) means divide by 100.

    Python's float() semantics are kept on purpose (it accepts surrounding whitespace,
    '1e3', '1_000', 'nan', 'inf'); commas are not removed.
    """
    try:
        if text.endswith("%"):
            return float(text.rstrip("%")) / 100.0
        return float(text)
    except ValueError:
        return None


def relaxed_correctness(prediction: str, target: str, max_relative_change: float = 0.05) -> bool:
    """ChartQA relaxed correctness with lmms-eval semantics.

    If the prediction parses as a number and the target parses as a non-zero number,
    the answer is correct when |p - t| / |t| <= max_relative_change.  Otherwise the
    strings must be equal ignoring case.  Nothing is stripped here: lmms-eval strips
    the prediction earlier (in task.py), and ``score`` does the same through
    ``extract_answer``.  The target is never stripped.
    """
    p = _chartqa_float(prediction)
    t = _chartqa_float(target)
    # ``if t`` (truthiness) as in lmms-eval: 0.0 and None fall through to the string
    # comparison, NaN is truthy and gives a NaN change, which compares False.
    if p is not None and t:
        return abs(p - t) / abs(t) <= max_relative_change
    return prediction.lower() == target.lower()


# ---------------------------------------------------------------------------
# InfoVQA: ANLS (lmms_eval/api/metrics.py)
# ---------------------------------------------------------------------------


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute; each cost 1), two-row dynamic programme."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        cur = [i]
        for j, cb in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _anls_norm(text: str) -> str:
    return " ".join(text.strip().lower().split())


def anls(prediction: str, references: list[str], threshold: float = 0.5) -> float:
    """ANLS for one question, as lmms-eval's ``anls`` metric computes it.

    For each reference: the Levenshtein distance between the normalised strings
    (stripped, lowercased, whitespace collapsed), divided by
    max(len(reference.upper()), len(prediction.upper())).  Those lengths are of the
    strings as passed in, before normalising.  ``.upper()`` is what lmms-eval
    measures; it differs from ``len`` only for characters like 'ß'.  A zero
    denominator gives distance 0.  The result is 1 - (the smallest distance), set to 0
    when below ``threshold``.  With no references the result is 0.0 (lmms-eval would
    raise).
    """
    if not references:
        return 0.0
    det = _anls_norm(prediction)
    values = []
    for ref in references:
        length = max(len(ref.upper()), len(prediction.upper()))
        values.append(0.0 if length == 0 else levenshtein(_anls_norm(ref), det) / length)
    result = 1.0 - min(values)
    if result < threshold:
        result = 0.0
    return float(result)


# ---------------------------------------------------------------------------
# POPE (lmms_eval/tasks/pope/utils.py)
# ---------------------------------------------------------------------------


def pope_metrics(predictions: list[str], ground_truths: list[str]) -> dict:
    """POPE accuracy, precision, recall, F1 and yes-ratio, as lmms-eval aggregates them.

    Each prediction and ground truth is ``.lower().strip()``-ed.  lmms-eval does not map
    other answers to yes/no.  A prediction that is neither "yes" nor "no" counts as
    wrong for accuracy, and is neither a false positive nor a false negative.  Recall's
    FN counts only a ground-truth "yes" answered exactly "no".  Precision, recall and F1
    are 0 when their denominator is 0.  yes_ratio is the share of "yes" in the ground
    truth, not in the predictions.  A ground truth other than yes/no raises ValueError
    (lmms-eval asserts).  Empty input gives all zeros (lmms-eval would divide by zero).
    """
    if len(predictions) != len(ground_truths):
        raise ValueError(f"pope_metrics: {len(predictions)} predictions but {len(ground_truths)} ground truths")
    tp = fp = fn = correct = gt_yes = gt_no = 0
    for raw_pred, raw_gt in zip(predictions, ground_truths):
        pred = raw_pred.lower().strip()
        gt = raw_gt.lower().strip()
        if gt not in ("yes", "no"):
            raise ValueError(f"POPE ground truth must be 'yes' or 'no', got {raw_gt!r}")
        correct += pred == gt
        if gt == "yes":
            gt_yes += 1
            if pred == "yes":
                tp += 1
            elif pred == "no":
                fn += 1
        else:
            gt_no += 1
            if pred == "yes":
                fp += 1
    n = len(predictions)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {
        "accuracy": correct / n if n else 0.0,
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "yes_ratio": gt_yes / (gt_yes + gt_no) if gt_yes + gt_no > 0 else 0.0,
    }


# ---------------------------------------------------------------------------
# RealWorldQA (lmms_eval/tasks/realworldqa: flexible-extract filters + process_results)
# ---------------------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}
_CHOICE_LINE = re.compile(r"\b([A-Z])\.\s+([^\n]*)")


def _realworldqa_filter(prediction: str, question: str | None = None) -> str:
    """The lmms-eval ``flexible-extract`` filter chain, then its process_results normalisation."""
    # NumberWordsToDigitsFilter: only when the whole response is a number word.
    text = _NUMBER_WORDS.get(prediction.lower(), prediction)
    # MultiChoiceRegexFilter: delete every character that is neither a word character
    # nor whitespace, then strip.
    cleaned = re.sub(r"[^\w\s]", "", text).strip()
    if question:
        # Choice texts ("A. Left") from the question; letters are given in order of
        # appearance from "A", as lmms-eval does.  The first (leftmost) choice text
        # found in the cleaned response gives the letter.
        choice_to_letter: dict[str, str] = {}
        texts = []
        for k, (_, choice_text) in enumerate(_CHOICE_LINE.findall(question)):
            choice_text = choice_text.strip()
            texts.append(re.escape(choice_text))
            choice_to_letter[choice_text] = chr(ord("A") + k)
        if texts:
            m = re.search("|".join(texts), cleaned)
            if m and m.group() in choice_to_letter:
                cleaned = choice_to_letter[m.group()]
    # realworldqa_process_results (after task.py's strip).
    return cleaned.strip().lower().strip().rstrip(".")


def exact_match(prediction: str, target: str, *, question: str | None = None) -> bool:
    """RealWorldQA exact match with lmms-eval semantics.

    The steps, in order: a response that is entirely a number word becomes its digit;
    punctuation is deleted (regex ``[^\\w\\s]``, so "B." and "(B)" become "B", and "3.5"
    becomes "35"); the text is stripped, lowercased and loses any trailing "."; it must
    then equal ``target.lower().strip()``.  If ``question`` is given, a choice text
    from it found in the response is first mapped to its letter, as lmms-eval's filter
    does.
    """
    return _realworldqa_filter(prediction, question) == target.lower().strip()


# ---------------------------------------------------------------------------
# MMBench
# ---------------------------------------------------------------------------

def option_match(prediction: str, target: str) -> bool:
    """MMBench: the option letter extracted from ``prediction`` equals the target letter.

    ``prediction`` may be raw or already extracted.  lmms-eval matches with a GPT
    judge.  We extract the letter with rules and compare exactly.
    """
    from mai.answers import extract_answer  # scoring will stop extracting (lmms-eval does not)

    letter = extract_answer(prediction, "option")  # idempotent on an already-extracted letter
    return bool(letter) and letter == target.strip().upper()



# ---------------------------------------------------------------------------
# Scoring and aggregation
# ---------------------------------------------------------------------------


def score(metric: str, prediction: str, references: list[str], *, question: str | None = None) -> float:
    """Per-example score in [0, 1] for a raw model output (``extract_answer`` is applied first).

    With several references, relaxed/exact/option/pope count as correct if any
    reference matches.  ANLS takes its own best over references.  ``question`` is used
    only by "exact" (RealWorldQA choice-text mapping).
    """
    _check_metric(metric)
    if isinstance(references, str):
        references = [references]
    from mai.answers import extract_answer

    pred = extract_answer(prediction, metric)
    if metric == "anls":
        return anls(pred, list(references))
    if metric == "relaxed":
        ok = any(relaxed_correctness(pred, ref) for ref in references)
    elif metric == "pope":
        # lmms-eval's per-example POPE score: pred.lower().strip() == gt.lower().strip().
        ok = any(pred.lower().strip() == ref.lower().strip() for ref in references)
    elif metric == "exact":
        ok = any(exact_match(pred, ref, question=question) for ref in references)
    else:  # option
        ok = any(option_match(pred, ref) for ref in references)
    return 1.0 if ok else 0.0


def aggregate(metric: str, rows: Iterable[dict]) -> dict:
    """The benchmark's headline numbers (fractions in [0, 1]) from rows of raw predictions.

    Each row has "prediction" (raw text) and "references" (list of str; a plain str is
    accepted), and optionally "question" (used by "exact").  Returns
    ``{"relaxed_accuracy"}``, ``{"anls"}``, ``{"exact_match"}``, ``{"accuracy"}``
    (option), or, for "pope", the five keys of ``pope_metrics``.  lmms-eval reports
    MMBench as a percentage; ours is a fraction.
    """
    _check_metric(metric)
    from mai.answers import extract_answer

    rows = list(rows)
    if metric == "pope":
        preds, gts = [], []
        for row in rows:
            refs = row["references"]
            preds.append(extract_answer(row["prediction"], metric))
            gts.append(refs if isinstance(refs, str) else refs[0])
        return pope_metrics(preds, gts)
    scores = [score(metric, row["prediction"], row["references"], question=row.get("question")) for row in rows]
    return {HEADLINE[metric]: sum(scores) / len(scores) if scores else 0.0}


