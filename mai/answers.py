"""Our answer extraction and the cascade's agreement test: what lmms-eval does not define.

lmms-eval scores a model's raw output (mai.metrics). Two things it does not cover live here:
reading the answer off a reasoning (Think) output, and deciding whether two models' answers agree
(the cascade's mutual verification). Neither is an lmms-eval score.

Agreement follows the paper (arXiv 2604.04929, where it describes mutual verification): answers are
compared by "Exact Matching or ANLS (as per benchmark)". ``Matcher`` is that rule for one question
(rule "paper", the default):

* POPE: both answers are "yes", or both "no".
* ChartQA: relaxed correctness (5% for numbers, else equal ignoring case) in BOTH directions, each
  answer taken once as the target. The benchmark's own metric is the natural "exact match" for
  ChartQA, but it is one-sided (the tolerance is relative to the target); taking it both ways makes
  agreement symmetric, so which model is called the reference does not change a route, and an agreed
  answer would be scored correct had the other model's answer been the reference.
* InfoVQA: ANLS between the two answers at lmms-eval's threshold (>= 0.5; lmms_eval/api/metrics.py
  ``anls``), as the paper names ANLS for it.
* MMBench and RealWorldQA (multiple choice): the option each answer maps to, from the options written
  in the question ("A. Left" lines), so "Left" and "A" agree when option A is "Left". RealWorldQA
  questions without options compare normalised text.

Rule "strict" (``--agree strict``) keeps exact comparisons: equal numbers or equal text (ChartQA),
equal normalised text (InfoVQA, RealWorldQA), the same option letter as written (MMBench).

A reasoning (a Think output) has an answer only where it gives one: after an answer cue ("The answer
is ...") or after a closed think block. A reasoning without one (cut at the token limit, say) has no
answer, and no answer never agrees.
"""

from __future__ import annotations

import dataclasses
import re

from mai.metrics import _NUMBER_WORDS, _check_metric, anls, relaxed_correctness

AGREE_RULES = ("paper", "strict")
ANLS_THRESHOLD = 0.5  # lmms-eval's anls(threshold=0.5): a lower similarity scores 0

# ---------------------------------------------------------------------------
# Option letters (our rules)
# ---------------------------------------------------------------------------

_OPTION_LETTERS = "ABCDE"
# Whole answer is one letter, optionally wrapped/followed by punctuation: B, b, B., (B), [B], B), B:
_OPT_WHOLE = re.compile(r"^[(\[]?([A-Ea-e])[)\]]?[.:,)]?$")
# Answer starts with a letter plus a delimiter, then the option text: "B. cat", "B) cat", "(B) cat", "B: cat"
_OPT_LEAD = re.compile(r"^(?:[(\[]([A-E])[)\]]|([A-E])[.:)\],])(?:\s|$)")
# "option B", "Option (C)", "choice D"
_OPT_NAMED = re.compile(r"\b(?:option|choice)\s*[(\[]?([A-E])\b[)\]]?", re.IGNORECASE)
# A standalone letter token, possibly wrapped: B  B.  (B)  B)  B,  B:  :B
_OPT_TOKEN = re.compile(r"^[(\[:]?([A-E])[)\]]?[.,:)]?$")


def _extract_option_letter(text: str) -> str:
    """The option letter (A-E) in ``text``, or "" when there is none or it is ambiguous."""
    s = text.strip().strip("*\"'`").strip()
    if not s:
        return ""
    m = _OPT_WHOLE.match(s)
    if m:
        return m.group(1).upper()
    m = _OPT_LEAD.match(s)
    if m:
        return (m.group(1) or m.group(2)).upper()
    named = {x.upper() for x in _OPT_NAMED.findall(s)}
    if len(named) == 1:
        return named.pop()
    # Last resort, like MMBench's can_infer_option: exactly one distinct letter token.
    tokens = [t.strip("*\"'`") for t in s.split()]
    letters = {m.group(1) for m in map(_OPT_TOKEN.match, tokens) if m}
    if len(letters) != 1:
        return ""
    letter = letters.pop()
    # A bare "A" in a sentence is more likely the article than option A.
    if letter == "A" and "A" in tokens and len(tokens) > 3:
        return ""
    return letter



# ---------------------------------------------------------------------------
# Answer extraction
# ---------------------------------------------------------------------------

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_CUE = re.compile(r"final answer is|the answer is|answer\s*:", re.IGNORECASE)
_WRAP_CHARS = "\"'*`\u201c\u201d\u2018\u2019"
_TRAILING_PUNCT = ".,;:!?"
_YES_NO = re.compile(r"^(yes|no)\b", re.IGNORECASE)


def _strip_think(text: str) -> tuple[str, bool]:
    """Remove think blocks; return (text, whether any think tag was present).

    Balanced ``<think>...</think>`` blocks are cut out.  After that, if a ``</think>``
    is left without its ``<think>`` (a Thinking checkpoint whose template opened the
    block in the prompt), everything up to and including the last one goes.  A
    ``<think>`` that is never closed (the output was cut by max_new_tokens) is dropped
    along with everything after it.
    """
    had = _THINK_OPEN in text or _THINK_CLOSE in text
    while True:
        start = text.find(_THINK_OPEN)
        if start < 0:
            break
        end = text.find(_THINK_CLOSE, start)
        if end < 0:
            break
        text = text[:start] + text[end + len(_THINK_CLOSE):]
    if _THINK_CLOSE in text:
        text = text.rsplit(_THINK_CLOSE, 1)[1]
    if _THINK_OPEN in text:
        text = text[: text.find(_THINK_OPEN)]
    return text.strip(), had


def _after_cue(text: str) -> str | None:
    """The first line after the last answer cue, or None when there is no cue."""
    last = None
    for last in _CUE.finditer(text):
        pass
    if last is None:
        return None
    rest = text[last.end():].lstrip(" \t:").strip()
    return rest.split("\n", 1)[0].strip() if rest else ""


def _clean(text: str) -> str:
    """Strip whitespace, surrounding quotes/asterisks/backticks, and one trailing punctuation mark."""
    s = text.strip().strip(_WRAP_CHARS).strip()
    if len(s) > 1 and s[-1] in _TRAILING_PUNCT:
        s = s[:-1].rstrip()
    return s.strip(_WRAP_CHARS).strip()


def _map_yes_no(text: str) -> str:
    m = _YES_NO.match(text)
    return m.group(1).lower() if m else text


def _extract(text: str, metric: str, reasoning: bool) -> str:
    """extract_answer's steps 1-2 (no reduction to an option letter)."""
    s, had_think = _strip_think(text)
    cued = _after_cue(s)
    if cued is not None:
        s = cued
    elif reasoning and not had_think:
        return ""  # a reasoning that names no answer has none (see the module doc)
    if had_think or cued is not None:
        s = _clean(s)
        if metric == "pope":
            s = _map_yes_no(s)
    return s


def extract_answer(text: str, metric: str, reasoning: bool = False) -> str:
    """The answer part of a raw model output, before scoring or comparison.

    The steps, in order:

    1. Remove think blocks (see ``_strip_think``) and strip whitespace.  lmms-eval v0.7
       does this too.
    2. Reasoning outputs only (a think tag, or an answer cue, was present): take the
       first line after the last "The answer is" / "final answer is" / "Answer:" cue,
       case-insensitive.  Strip quotes/asterisks and one trailing punctuation mark.
       For "pope", map a leading yes/no word to "yes"/"no".
    3. For "option", always reduce to the option letter A-E ("" if none is found).

    ``reasoning=True`` says the text is a Think output: then it has an answer only after a
    cue or a closed think block, and "" otherwise (the whole reasoning is not an answer).
    A plain answer with no think tag and no cue comes back only stripped, which is
    exactly what lmms-eval scores.  See the module docstring for every departure.
    """
    _check_metric(metric)
    s = _extract(text, metric, reasoning)
    if metric == "option":
        s = _extract_option_letter(s)
    return s


# ---------------------------------------------------------------------------
# Agreement between two models (the cascade's matcher; not an lmms-eval score)
# ---------------------------------------------------------------------------

# An option line of a multiple-choice question: "A. Left" (MMBench's block after "There are several
# options:", RealWorldQA's own lines), at the start of a line.
_OPTION_LINE = re.compile(r"^[ \t]*([A-E])\.[ \t]+(\S.*?)[ \t]*$", re.MULTILINE)
_MMBENCH_OPTIONS = "There are several options:"


def question_options(question: str) -> dict[str, str]:
    """The options a multiple-choice question lists, letter -> text; {} when it lists none.

    Lines "A. text" at the start of a line, after MMBench's "There are several options:" when the
    question has it (a hint above may hold lines of its own). Letters must run A, B, C, ... from A,
    so a stray "C. ..." line in prose is not taken for a choice."""
    if _MMBENCH_OPTIONS in question:
        question = question.rsplit(_MMBENCH_OPTIONS, 1)[1]
    found = _OPTION_LINE.findall(question)
    letters = [letter for letter, _ in found]
    if not found or letters != [chr(ord("A") + k) for k in range(len(found))]:
        return {}
    return dict(found)


def _normalise(text: str) -> str:
    """Lowercase, a whole number word as its digit, punctuation removed, whitespace collapsed."""
    s = text.strip().lower()
    s = _NUMBER_WORDS.get(s, s)
    return " ".join(re.sub(r"[^\w\s]", " ", s).split())


def _number(text: str) -> float | None:
    """A plain number ("1,000", "12.5%" as 0.125, "-3"), or None."""
    s = text.strip().replace(",", "")
    scale = 1.0
    if s.endswith("%"):
        s, scale = s[:-1].strip(), 0.01
    try:
        return float(s) * scale
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class Matcher:
    """How the cascade reads and compares two models' answers to one question (see the module doc).

    ``read`` turns a raw output into the form that is compared (an option letter for a question with
    options); ``agree`` compares two read answers. Built per question, because multiple-choice
    agreement needs the question's options."""

    metric: str
    question: str = ""
    rule: str = "paper"
    options: dict = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        _check_metric(self.metric)
        if self.rule not in AGREE_RULES:
            raise ValueError(f"agree must be one of {AGREE_RULES}, got {self.rule!r}")
        choices = self.metric in ("option", "exact") and self.rule == "paper"
        object.__setattr__(self, "options", question_options(self.question) if choices else {})

    def read(self, text: str, reasoning: bool = False) -> str:
        """The answer in a raw output, as compared; "" when it has none. ``reasoning``: a Think output."""
        s = _clean(_extract(text, self.metric, reasoning))
        if self.metric == "pope":
            return _map_yes_no(s)
        if self.options:
            return self._option(s) or (s if self.metric == "exact" else "")
        if self.metric == "option":
            return _extract_option_letter(s)
        return s

    def _option(self, answer: str) -> str:
        """The letter of the option an answer names: its letter, its whole text, or the one option
        text it contains as words; "" when none or several."""
        letter = _extract_option_letter(answer)
        if letter in self.options:
            return letter
        said = _normalise(answer)
        texts = {_normalise(text): letter for letter, text in self.options.items()}
        if said in texts:
            return texts[said]
        hits = {letter for text, letter in texts.items() if text and re.search(rf"\b{re.escape(text)}\b", said)}
        return hits.pop() if len(hits) == 1 else ""

    def agree(self, a: str, b: str) -> bool:
        """Whether two read answers agree; an empty answer never does."""
        if not a or not b:
            return False
        m, strict = self.metric, self.rule == "strict"
        if m == "pope":
            return a.lower() in ("yes", "no") and a.lower() == b.lower()
        if m == "relaxed":
            if strict:
                x, y = _number(a), _number(b)
                return x == y if x is not None and y is not None else a.lower() == b.lower()
            return relaxed_correctness(a, b) and relaxed_correctness(b, a)
        if m == "anls":
            if strict:
                return " ".join(a.lower().split()) == " ".join(b.lower().split())
            return anls(a, [b], threshold=ANLS_THRESHOLD) >= ANLS_THRESHOLD
        if m == "option":
            return a.upper() == b.upper()
        x, y = _normalise(a), _normalise(b)  # exact (RealWorldQA): letters or texts
        return bool(x) and x == y


def answers_agree(a: str, b: str, metric: str, question: str = "", rule: str = "paper") -> bool:
    """Whether two raw answers (plain outputs, not reasonings) agree: Matcher(metric, question, rule)."""
    matcher = Matcher(metric, question, rule)
    return matcher.agree(matcher.read(a), matcher.read(b))
