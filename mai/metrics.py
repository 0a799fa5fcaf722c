"""Per-benchmark scoring exactly as lmms-eval scores a raw model output, at a named commit.

We match EvolvingLMMs-Lab/lmms-eval at commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3
(2026-08-06), ``LMMS_EVAL_COMMIT``.  Its pipeline, for every task here, and ours in the same order:

1. ``lmms_eval/evaluator.py`` strips reasoning blocks before ``process_results`` with
   ``lmms_eval/api/reasoning.py::strip_reasoning_tags`` and the CLI default
   ``--reasoning_tags '[["<think>", "</think>"], ["<analysis>", "</analysis>"]]'``
   (``lmms_eval/__main__.py``): ``strip_reasoning_tags`` here.
2. ``lmms_eval/api/task.py`` (``ConfigurableTask.process_results``) strips surrounding
   whitespace from each ``generate_until`` response (the target is not stripped).
3. The task's ``process_results`` and aggregation:

   ==============  =======================================================================
   metric          benchmark, lmms-eval file
   ==============  =======================================================================
   "relaxed"       ChartQA, ``tasks/chartqa/utils.py``: relaxed correctness, overall and
                   per split (``type == "human_test"`` or augmented)
   "anls"          InfoVQA (infovqa_val), ``api/metrics.py::anls``
   "pope"          POPE, ``tasks/pope/utils.py``: accuracy, precision, recall, F1, yes-ratio
   "exact"         RealWorldQA, ``tasks/realworldqa/utils.py``: ``extract_mcq_answer`` for an
                   A-D target, ``lower().strip().rstrip(".")`` otherwise.  The scoring before
                   commit 9ca4445d (2026-04-11), as at d0c1eae7, is ``realworldqa_scoring=
                   "d0c1eae7"``: the yaml's flexible-extract filters on the raw response, then
                   ``lower().strip().rstrip(".")``
   "option"        MMBench, ``tasks/mmbench/mmbench_en_dev_static.yaml`` + ``mmbench_evals.py``
                   (``eval_method="static"``): the letter heuristics ``can_infer_option``,
                   ``can_infer_text``, then ``extract_mcq_answer``; CircularEval (a question
                   counts only if every rotated copy, grouped by ``index % 1_000_000``, is
                   right).  The GPT-judge variant (mmbench_en_dev) needs an API and is not
                   reproduced here
   ==============  =======================================================================

No answer cue is read here ("The answer is 5" scores 0 against 5, as in lmms-eval).  Our own
extraction (``mai.answers.extract_answer``: the answer off a Think output, the cascade's
comparison) is a separate step; ``score_extracted`` scores its result with the same rules, and
rows of reasoning systems keep both (``score`` is the one tables show unless they say otherwise).

Every function is our code, written from reading lmms-eval's files at that commit; the tests
check hand-worked cases of its documented behaviour.
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from mai import MaiError

LMMS_EVAL_REPO = "EvolvingLMMs-Lab/lmms-eval"
LMMS_EVAL_COMMIT = "75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3"
# RealWorldQA scorings: the one at LMMS_EVAL_COMMIT, and the one before 9ca4445d (2026-04-11),
# read at d0c1eae757432949cc276537e9d883934738ae21; the paper may have used the older one.
REALWORLDQA_SCORINGS = ("75571cfe", "d0c1eae7")
REALWORLDQA_CURRENT, REALWORLDQA_D0C1EAE7 = REALWORLDQA_SCORINGS

# lmms_eval/__main__.py's default --reasoning_tags at LMMS_EVAL_COMMIT.
REASONING_TAGS = (("<think>", "</think>"), ("<analysis>", "</analysis>"))

METRICS = ("relaxed", "anls", "pope", "exact", "option")

# The number each benchmark reports in the paper's tables: a key of aggregate()'s result.
HEADLINE = {
    "relaxed": "relaxed_accuracy",
    "anls": "anls",
    "pope": "accuracy",
    "exact": "exact_match",
    "option": "circular_accuracy",
}

# mmbench_evals.py groups the rotated copies of a question by index modulo 1e6.
MMBENCH_CIRCULAR_MOD = 1_000_000
# ChartQA's "type" column; chartqa/utils.py puts "human_test" in one split and any other in the other.
CHARTQA_SPLITS = ("human_test", "augmented_test")


class UnknownMetricError(MaiError, ValueError):
    """An unknown metric name: a ValueError that the CLI prints as one line."""


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise UnknownMetricError(f"unknown metric {metric!r}; known metrics: {', '.join(METRICS)}")


def _check_realworldqa_scoring(name: str) -> None:
    if name not in REALWORLDQA_SCORINGS:
        raise MaiError(f"unknown RealWorldQA scoring {name!r}; known: {', '.join(REALWORLDQA_SCORINGS)}")


# ---------------------------------------------------------------------------
# Steps 1-2: reasoning tags (api/reasoning.py) and task.py's strip
# ---------------------------------------------------------------------------


def strip_reasoning_tags(text: str, tag_pairs=REASONING_TAGS) -> str:
    """Remove reasoning blocks as lmms-eval's ``strip_reasoning_tags`` does, then strip whitespace.

    Per tag pair, in order: while both tags occur, cut from the first opening tag to the first
    closing tag after it (stop when no closing tag follows).  Then, if a closing tag is left and
    no opening tag, keep only the text after the last closing tag (chat templates that prefill
    the opening tag).  Case-sensitive; an opening tag with no closing tag keeps all the text.
    """
    out = text
    for start_tag, end_tag in tag_pairs:
        while start_tag in out and end_tag in out:
            start = out.find(start_tag)
            end = out.find(end_tag, start)
            if end == -1:
                break
            out = out[:start] + out[end + len(end_tag):]
        if end_tag in out and start_tag not in out:
            out = out.rsplit(end_tag, 1)[-1]
    return out.strip()


def lmms_eval_response(text: str | None) -> str:
    """The response a task's ``process_results`` receives: reasoning blocks stripped, then stripped
    (task.py turns a missing response into "")."""
    return "" if text is None else strip_reasoning_tags(text).strip()


# ---------------------------------------------------------------------------
# ChartQA: relaxed correctness (tasks/chartqa/utils.py)
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
    strings must be equal ignoring case.  Nothing is stripped here (``score`` strips the
    prediction first, as task.py does); the target is never stripped.
    """
    p = _chartqa_float(prediction)
    t = _chartqa_float(target)
    # ``if t`` (truthiness) as in lmms-eval: 0.0 and None fall through to the string
    # comparison, NaN is truthy and gives a NaN change, which compares False.
    if p is not None and t:
        return abs(p - t) / abs(t) <= max_relative_change
    return prediction.lower() == target.lower()


# ---------------------------------------------------------------------------
# InfoVQA: ANLS (api/metrics.py)
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
    max(len(reference.upper()), len(prediction.upper())), the lengths of the strings as
    passed in, before normalising (``.upper()`` differs from ``len`` only for characters
    like 'ß').  A zero denominator gives distance 0.  The result is 1 - (the smallest
    distance), set to 0 when below ``threshold``.  With no references the result is 0.0
    (lmms-eval would raise).
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
# POPE (tasks/pope/utils.py)
# ---------------------------------------------------------------------------


def pope_metrics(predictions: list[str], ground_truths: list[str]) -> dict:
    """POPE accuracy, precision, recall, F1 and yes-ratio, as lmms-eval aggregates them.

    Each prediction and ground truth is ``.lower().strip()``-ed; nothing else is mapped to
    yes/no.  A prediction that is neither "yes" nor "no" is wrong for accuracy, and is
    neither a false positive nor a false negative.  Recall's FN counts only a ground-truth
    "yes" answered exactly "no".  Precision, recall and F1 are 0 when their denominator is
    0.  yes_ratio is the share of "yes" in the ground truth, not in the predictions.  A
    ground truth other than yes/no raises ValueError (lmms-eval asserts).  Empty input
    gives all zeros (lmms-eval would divide by zero).
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
# Multiple-choice letters (tasks/_task_utils/mcq_extract.py::extract_mcq_answer)
# ---------------------------------------------------------------------------

_MCQ_DEFAULT_CHOICES = tuple("ABCDEFGH")
# The answer phrases lmms-eval looks for, in its order (English, then Korean, Chinese, Japanese).
_MCQ_PHRASES = (
    "the answer is", "answer is", "the correct answer is", "correct answer is",
    "the best answer is", "best answer is", "the correct option is", "correct option is",
    "the best option is", "best option is", "the choice is", "choice is",
    "the correct choice is", "correct choice is", "i choose", "i select", "i pick",
    "my answer is", "my choice is",
    "옵션", "정답은", "답은", "답:",
    "答案是", "答案为", "选",
    "答えは",
)
# How a letter appears, from most to least trusted; ties go to the later position.
_MCQ_RANK = {"start": 10, "end": 9, "phrase": 7, "parentheses": 6, "period": 5, "colon": 4,
             "right_paren": 3, "space": 2, "fallback": 0}
_MCQ_FORMS = (("parentheses", "({})"), ("period", "{}."), ("colon", "{}:"), ("right_paren", "{})"),
              ("space", "{} "))


def extract_mcq_answer(response: str, choices=None) -> str:
    """The choice letter lmms-eval's ``extract_mcq_answer`` reads off a response, or "".

    The response is stripped of whitespace, then of each of , . ! ? ; : ' " in turn, and
    padded with one space each side.  Candidates: the last "(X)", "X.", "X:", "X)", "X "
    of each letter; the first letter after each answer phrase ("the answer is", "i choose",
    ...; case-insensitive phrase, case-sensitive letter); a letter that starts or ends the
    text and is not followed / preceded by a letter.  Only when none of these exists: the
    last occurrence of any letter.  The best-ranked form wins (start > end > phrase >
    parentheses > period > colon > right paren > space > fallback), then the later position.
    """
    if not response or not response.strip():
        return ""
    letters = list(choices) if choices else list(_MCQ_DEFAULT_CHOICES)
    text = response.strip()
    for ch in ",.!?;:'\"":
        text = text.strip(ch)
    text = f" {text} "
    found: list[tuple[int, int, str]] = []  # (rank, position, letter)
    for form, pattern in _MCQ_FORMS:
        for letter in letters:
            at = text.rfind(pattern.format(letter))
            if at != -1:
                found.append((_MCQ_RANK[form], at, letter))
    lowered = text.lower()
    for phrase in _MCQ_PHRASES:
        at = lowered.find(phrase)
        if at == -1:
            continue
        for letter in letters:
            pos = text.find(letter, at + len(phrase))
            if pos != -1:
                found.append((_MCQ_RANK["phrase"], pos, letter))
    inner = text.strip()
    for letter in letters:
        if inner.startswith(letter) and (len(inner) == 1 or not inner[1].isalpha()):
            found.append((_MCQ_RANK["start"], 0, letter))
    for letter in letters:
        if inner.endswith(letter) and (len(inner) == 1 or not inner[-2].isalpha()):
            found.append((_MCQ_RANK["end"], len(text) - 1, letter))
    if not found:
        found = [(_MCQ_RANK["fallback"], text.rfind(letter), letter) for letter in letters if letter in text]
    if not found:
        return ""
    # A (rank, position) pair names one letter, so max() picks what lmms-eval's stable sort picks.
    return max(found, key=lambda c: (c[0], c[1]))[2]


# ---------------------------------------------------------------------------
# RealWorldQA (tasks/realworldqa)
# ---------------------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}
_CHOICE_LINE = re.compile(r"\b([A-Z])\.\s+([^\n]*)")


def realworldqa_correct(response: str, target: str) -> bool:
    """RealWorldQA's ``process_results`` at LMMS_EVAL_COMMIT, on a processed (stripped) response.

    A target that is a letter A-D (after strip, any case) is matched by
    ``extract_mcq_answer(response, ABCD)``; any other target by
    ``response.lower().strip().rstrip(".") == target.strip().lower()``.
    """
    gt = target.strip()
    if gt.upper() in ("A", "B", "C", "D"):
        return extract_mcq_answer(response, ["A", "B", "C", "D"]) == gt.upper()
    return response.lower().strip().rstrip(".") == gt.lower()


def _realworldqa_filter(prediction: str, question: str | None = None) -> str:
    """d0c1eae7's ``flexible-extract`` filter chain, then its process_results normalisation.

    Meant for the raw response, as lmms-eval applies filters before stripping anything.
    """
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
    # The evaluator's reasoning strip and task.py's strip come after the filters (the filter
    # has already deleted '<', '/' and '>', so tags rarely survive), then process_results.
    cleaned = lmms_eval_response(cleaned)
    return cleaned.lower().strip().rstrip(".")


def realworldqa_correct_d0c1eae7(raw: str, target: str, question: str | None = None) -> bool:
    """RealWorldQA as lmms-eval scored it at d0c1eae7 (before 9ca4445d, 2026-04-11), from the raw output.

    A response that is entirely a number word becomes its digit; punctuation is deleted
    (regex ``[^\\w\\s]``, so "B." and "(B)" become "B", and "3.5" becomes "35"); a choice
    text of the question found in it becomes its letter; then it is stripped, lowercased
    and loses any trailing ".", and must equal ``target.lower().strip()``.
    """
    return _realworldqa_filter(raw, question) == target.lower().strip()


def exact_match(prediction: str, target: str, *, question: str | None = None,
                realworldqa_scoring: str = REALWORLDQA_CURRENT) -> bool:
    """RealWorldQA's score of a raw output, with the scoring of LMMS_EVAL_COMMIT or of d0c1eae7."""
    _check_realworldqa_scoring(realworldqa_scoring)
    if realworldqa_scoring == REALWORLDQA_D0C1EAE7:
        return realworldqa_correct_d0c1eae7(prediction, target, question)
    return realworldqa_correct(lmms_eval_response(prediction), target)


# ---------------------------------------------------------------------------
# MMBench static (tasks/mmbench/mmbench_evals.py, eval_method="static")
# ---------------------------------------------------------------------------

_MMBENCH_WRAPS = (("", "."), ("", ","), ("", ":"), ("", ")"), ("", ")."), ("(", ")"), ("(", ")."),
                  (":", ""), (":", ","), (":", "."), (":", ")"), (":", ")."))


def _mmbench_option_token(answer: str) -> str:
    """``can_infer_option``: the one letter A-E standing as a whole word, bare or wrapped, or ""."""
    letters = "ABCDE"
    if "Failed to obtain answer via API" in answer:
        return ""
    words = answer.split()

    def only(prefix: str, suffix: str) -> str:
        hits = [c for c in letters if prefix + c + suffix in words]
        return hits[0] if len(hits) == 1 else ""

    # A bare "A" in a sentence of more than three words may be the article: skip bare letters then.
    if not ("A" in words and len(words) > 3):
        bare = only("", "")
        if bare:
            return bare
    for prefix, suffix in _MMBENCH_WRAPS:
        hit = only(prefix, suffix)
        if hit:
            return hit
    return ""


def _mmbench_option_text(answer: str, choices: dict) -> str:
    """``can_infer_text``: the one option whose text (lowercased) occurs in the lowercased answer, or ""."""
    answer = answer.lower()
    hits = [k for k, v in choices.items() if str(v).lower() in answer]
    return hits[0] if len(hits) == 1 else ""


def mmbench_choices(row: dict) -> dict:
    """The options lmms-eval's static MMBench scorer knows for a dataset row (``build_choices``).

    Letters A-D only; a missing column counts as the string "nan" (``doc.get(c, "nan")``), a
    None/NaN value is left out, and the strings "nan" and "" stay options.
    """
    out = {}
    for c in "ABCD":
        v = row.get(c, "nan")
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        out[c] = v
    return out


def mmbench_letter(response: str, choices: dict | None = None) -> str:
    """The letter the static MMBench evaluator gives a processed response, or "".

    ``can_infer_option`` (a lone letter word), else ``can_infer_text`` (exactly one option
    text inside the answer), else ``extract_mcq_answer`` over the sorted option letters.
    ``choices`` maps letters A-D to option texts (``mmbench_choices``); without it every
    letter A-D is an option with no text.
    """
    choices = dict(choices) if choices is not None else {c: None for c in "ABCD"}
    known = {k: v for k, v in choices.items() if v is not None}
    return (_mmbench_option_token(response) or _mmbench_option_text(response, known)
            or extract_mcq_answer(response, sorted(choices)))


def option_match(prediction: str, target: str, choices: dict | None = None) -> bool:
    """MMBench static: the letter read off the raw output (after the reasoning/whitespace strip)
    equals the target letter.  lmms-eval compares with the dataset's answer as it is."""
    letter = mmbench_letter(lmms_eval_response(prediction), choices)
    return bool(letter) and letter == target


def mmbench_circular(rows: list[tuple[int | None, bool]]) -> tuple[float, int]:
    """CircularEval over (index, correct) pairs: (share of questions right, number of questions).

    As ``MMBench_Evaluator.eval_result``: the questions are the rows with index < 1e6; a
    question is right when every row whose index % 1e6 equals its index (itself and its
    rotated copies) is right.  A rotated copy whose question is absent counts nowhere.  A
    row without an index is a question of its own.
    """
    correct_by_index: dict[int, list[bool]] = {}
    alone: list[bool] = []
    for index, ok in rows:
        if index is None:
            alone.append(bool(ok))
        else:
            correct_by_index.setdefault(int(index), []).append(bool(ok))
    groups: dict[int, list[bool]] = {}
    for index, oks in correct_by_index.items():
        groups.setdefault(index % MMBENCH_CIRCULAR_MOD, []).extend(oks)
    questions = [all(groups[i]) for i in sorted(correct_by_index) if i < MMBENCH_CIRCULAR_MOD
                 for _ in correct_by_index[i]]
    questions += alone
    return (sum(questions) / len(questions) if questions else 0.0), len(questions)


# ---------------------------------------------------------------------------
# Scoring and aggregation
# ---------------------------------------------------------------------------


def score(metric: str, prediction: str, references: list[str], *, question: str | None = None,
          choices: dict | None = None, realworldqa_scoring: str = REALWORLDQA_CURRENT) -> float:
    """Per-example score in [0, 1] of a raw model output, as lmms-eval's pipeline gives it.

    With several references, relaxed/exact/option/pope count as correct if any reference
    matches; ANLS takes its own best over references.  ``question`` is used only by the
    d0c1eae7 RealWorldQA scoring (choice texts), ``choices`` only by "option" (MMBench
    option texts, ``mmbench_choices``).  For MMBench this is the row's own letter match;
    the benchmark's number is the circular one of ``aggregate``.
    """
    _check_metric(metric)
    if isinstance(references, str):
        references = [references]
    references = list(references)
    if metric == "exact":
        ok = any(exact_match(prediction, ref, question=question, realworldqa_scoring=realworldqa_scoring)
                 for ref in references)
        return 1.0 if ok else 0.0
    if metric == "option":
        return 1.0 if any(option_match(prediction, ref, choices) for ref in references) else 0.0
    pred = lmms_eval_response(prediction)
    if metric == "anls":
        return anls(pred, references)
    if metric == "relaxed":
        ok = any(relaxed_correctness(pred, ref) for ref in references)
    else:  # pope: pred.lower().strip() == gt.lower().strip()
        ok = any(pred.lower().strip() == ref.lower().strip() for ref in references)
    return 1.0 if ok else 0.0


def extracted(prediction: str, metric: str) -> str:
    """Our answer extraction (``mai.answers.extract_answer``), not an lmms-eval step."""
    from mai.answers import extract_answer  # answers imports this module

    return extract_answer(prediction, metric)


def score_extracted(metric: str, prediction: str, references: list[str], **kw) -> float:
    """``score`` of the answer our extraction reads off the output (what an R row also reports)."""
    return score(metric, extracted(prediction, metric), references, **kw)


def _chartqa_split(row: dict) -> str:
    return "human" if (row.get("meta") or {}).get("type") == "human_test" else "augmented"


def aggregate(metric: str, rows: Iterable[dict], *, extracted_answers: bool = False,
              realworldqa_scoring: str = REALWORLDQA_CURRENT) -> dict:
    """The benchmark's numbers (fractions in [0, 1]) from rows of raw predictions.

    Each row has "prediction" (raw text) and "references" (list of str; a plain str is
    accepted), optionally "question" and "meta" (ChartQA's "type"; MMBench's "index" and
    "choices").  With ``extracted_answers`` every prediction first goes through our
    extraction (``score_extracted``'s numbers).  Returns:

    * relaxed: ``relaxed_accuracy`` and, for rows with a ChartQA ``type``,
      ``relaxed_human_split`` (type "human_test") and ``relaxed_augmented_split`` (any other
      type), as chartqa/utils.py splits them;
    * anls: ``anls``; exact: ``exact_match``; pope: the five keys of ``pope_metrics``;
    * option: ``circular_accuracy`` (CircularEval; lmms-eval reports it x100), ``accuracy``
      (each row alone) and ``questions``.
    """
    _check_metric(metric)
    rows = list(rows)

    def text(row):
        return extracted(row["prediction"], metric) if extracted_answers else row["prediction"]

    def refs(row):
        r = row["references"]
        return [r] if isinstance(r, str) else list(r)

    if metric == "pope":
        return pope_metrics([lmms_eval_response(text(r)) for r in rows], [refs(r)[0] for r in rows])
    scores = [score(metric, text(r), refs(r), question=r.get("question"),
                    choices=(r.get("meta") or {}).get("choices"), realworldqa_scoring=realworldqa_scoring)
              for r in rows]
    mean = sum(scores) / len(scores) if scores else 0.0
    if metric == "option":
        pairs = [((r.get("meta") or {}).get("index"), s == 1.0) for r, s in zip(rows, scores)]
        circular, n_questions = mmbench_circular(pairs)
        return {"circular_accuracy": circular, "accuracy": mean, "questions": n_questions}
    out = {HEADLINE[metric]: mean}
    if metric == "relaxed":
        # Only ChartQA's own rows carry its split names (synth-chartqa's type is "synthetic").
        if any((r.get("meta") or {}).get("type") in CHARTQA_SPLITS for r in rows):
            splits = [_chartqa_split(r) for r in rows]
            for name in ("human", "augmented"):
                part = [s for s, split in zip(scores, splits) if split == name]
                out[f"relaxed_{name}_split"] = sum(part) / len(part) if part else None
    return out
