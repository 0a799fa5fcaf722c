"""What every benchmark's lmms-eval scoring shares, at a named commit: nothing here knows a benchmark.

We match EvolvingLMMs-Lab/lmms-eval at commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3
(2026-08-06), ``LMMS_EVAL_COMMIT``.  Its pipeline, for every task, and ours in the same order:

1. ``lmms_eval/evaluator.py`` strips reasoning blocks before ``process_results`` with
   ``lmms_eval/api/reasoning.py::strip_reasoning_tags`` and the CLI default
   ``--reasoning_tags '[["<think>", "</think>"], ["<analysis>", "</analysis>"]]'``
   (``lmms_eval/__main__.py``): ``strip_reasoning_tags`` here.
2. ``lmms_eval/api/task.py`` (``ConfigurableTask.process_results``) strips surrounding
   whitespace from each ``generate_until`` response (the target is not stripped):
   ``lmms_eval_response`` does both steps.
3. The task's ``process_results`` and aggregation: each benchmark's own module in
   ``mai/benchmarks/`` (ChartQA's relaxed accuracy and splits, POPE's five numbers, InfoVQA's ANLS,
   RealWorldQA, MMBench static with CircularEval), built from the pieces here that several tasks
   share: relaxed correctness, ANLS (``api/metrics.py``), ``extract_mcq_answer``
   (``tasks/_task_utils/mcq_extract.py``) and the number-word map of its filters.

No answer cue is read here ("The answer is 5" scores 0 against 5, as in lmms-eval).  Our own
extraction (``mai.answers``) is a separate step; a benchmark's ``score_extracted`` scores its result
with the same rules.

Every function is our code, written from reading lmms-eval's files at that commit; the tests
check hand-worked cases of its documented behaviour.
"""

from __future__ import annotations

LMMS_EVAL_REPO = "EvolvingLMMs-Lab/lmms-eval"
LMMS_EVAL_COMMIT = "75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3"

# lmms_eval/__main__.py's default --reasoning_tags at LMMS_EVAL_COMMIT.
REASONING_TAGS = (("<think>", "</think>"), ("<analysis>", "</analysis>"))

# The number words of lmms-eval's NumberWordsToDigitsFilter (RealWorldQA's filters before 9ca4445d).
NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}


def mean(values) -> float:
    """The mean of a list of scores; 0.0 for none (lmms-eval would divide by zero)."""
    values = list(values)
    return sum(values) / len(values) if values else 0.0


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
    strings must be equal ignoring case.  Nothing is stripped here (a benchmark's ``score`` strips the
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
