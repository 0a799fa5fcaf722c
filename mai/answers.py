"""Our answer extraction and the cascade's agreement test: what lmms-eval does not define.

lmms-eval scores a model's raw output (each benchmark in ``mai/benchmarks/``, from ``mai.metrics``). Two
things it does not cover live here: reading the answer off a reasoning (Think) output, and deciding
whether two models' answers agree (the cascade's mutual verification). Neither is an lmms-eval score.
Nothing here knows a benchmark: each benchmark's module names its agreement rule, a ``Matcher``
class, built from the pieces here.

Agreement follows the paper (arXiv 2604.04929, where it describes mutual verification): answers are
compared by "Exact Matching or ANLS (as per benchmark)". A ``Matcher`` is that rule for one question
under one of ``AGREE_RULES`` ("paper", the default, or "strict", ``--agree strict``); the rules of the
paper's benchmarks are in their modules (POPE yes/no, ChartQA relaxed both ways, InfoVQA ANLS, MMBench
and RealWorldQA by option). A benchmark or an lmms-eval task with no rule of its own gets the stated
default, ``default_agreement``: normalised exact match (``Matcher``), or ANLS >= 0.5 between the two
answers when its metric is ANLS (``AnlsMatcher``).

A reasoning (a Think output) has an answer only where it gives one: after an answer cue ("The answer
is ...") or after a closed think block. A reasoning without one (cut at the token limit, say) has no
answer, and no answer never agrees.
"""

from __future__ import annotations

import re

from mai.metrics import NUMBER_WORDS, anls

AGREE_RULES = ("paper", "strict")
ANLS_THRESHOLD = 0.5  # lmms-eval's anls(threshold=0.5): a lower similarity scores 0

# ---------------------------------------------------------------------------
# Option letters (our rules)
# ---------------------------------------------------------------------------

# Whole answer is one letter, optionally wrapped/followed by punctuation: B, b, B., (B), [B], B), B:
_OPT_WHOLE = re.compile(r"^[(\[]?([A-Ea-e])[)\]]?[.:,)]?$")
# Answer starts with a letter plus a delimiter, then the option text: "B. cat", "B) cat", "(B) cat", "B: cat"
_OPT_LEAD = re.compile(r"^(?:[(\[]([A-E])[)\]]|([A-E])[.:)\],])(?:\s|$)")
# "option B", "Option (C)", "choice D"
_OPT_NAMED = re.compile(r"\b(?:option|choice)\s*[(\[]?([A-E])\b[)\]]?", re.IGNORECASE)
# A standalone letter token, possibly wrapped: B  B.  (B)  B)  B,  B:  :B
_OPT_TOKEN = re.compile(r"^[(\[:]?([A-E])[)\]]?[.,:)]?$")


def option_letter(text: str) -> str:
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


# LaTeX's \boxed{...}, how Qwen2.5 models close a math solution when no cue says "The answer is" (seen on
# GSM8K's dev split with the real Qwen2.5-Coder-0.5B, paper_tables/dev_settings.cpu-real.md); one level of
# nested braces, as in \boxed{\frac{3}{4}}.
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")


def _after_cue(text: str) -> str | None:
    """The first line after the last answer cue, or the content of a \\boxed{} that comes after every cue;
    None when there is neither."""
    last = None
    for last in _CUE.finditer(text):
        pass
    boxed = None
    for boxed in _BOXED.finditer(text):
        pass
    if boxed is not None and (last is None or boxed.start() > last.end()):
        return boxed.group(1).strip()
    if last is None:
        return None
    rest = text[last.end():].lstrip(" \t:").strip()
    return rest.split("\n", 1)[0].strip() if rest else ""


def clean(text: str) -> str:
    """Strip whitespace, surrounding quotes/asterisks/backticks, and one trailing punctuation mark."""
    s = text.strip().strip(_WRAP_CHARS).strip()
    if len(s) > 1 and s[-1] in _TRAILING_PUNCT:
        s = s[:-1].rstrip()
    return s.strip(_WRAP_CHARS).strip()


def map_yes_no(text: str) -> str:
    m = _YES_NO.match(text)
    return m.group(1).lower() if m else text


def extract_answer(text: str, reasoning: bool = False, yes_no: bool = False) -> str:
    """The answer part of a raw model output, before scoring or comparison.

    The steps, in order:

    1. Remove think blocks (see ``_strip_think``) and strip whitespace.  lmms-eval v0.7
       does this too.
    2. Reasoning outputs only (a think tag, or an answer cue, was present): take the
       first line after the last "The answer is" / "final answer is" / "Answer:" cue,
       case-insensitive, or the content of a later \\boxed{...}.  Strip quotes/asterisks and one trailing punctuation mark.
       With ``yes_no`` (POPE), map a leading yes/no word to "yes"/"no".

    ``reasoning=True`` says the text is a Think output: then it has an answer only after a
    cue or a closed think block, and "" otherwise (the whole reasoning is not an answer).
    A plain answer with no think tag and no cue comes back only stripped, which is
    exactly what lmms-eval scores.  A benchmark whose answers are option letters reduces
    the result to its letter (``option_letter``) in its own ``Matcher.extract``.
    """
    s, had_think = _strip_think(text)
    cued = _after_cue(s)
    if cued is not None:
        s = cued
    elif reasoning and not had_think:
        return ""  # a reasoning that names no answer has none (see the module doc)
    if had_think or cued is not None:
        s = clean(s)
        if yes_no:
            s = map_yes_no(s)
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


def normalise(text: str) -> str:
    """Lowercase, a whole number word as its digit, punctuation removed, whitespace collapsed."""
    s = text.strip().lower()
    s = NUMBER_WORDS.get(s, s)
    return " ".join(re.sub(r"[^\w\s]", " ", s).split())


def number(text: str) -> float | None:
    """A plain number ("1,000", "12.5%" as 0.125, "-3"), or None."""
    s = text.strip().replace(",", "")
    scale = 1.0
    if s.endswith("%"):
        s, scale = s[:-1].strip(), 0.01
    try:
        return float(s) * scale
    except ValueError:
        return None


class Matcher:
    """How the cascade reads and compares two models' answers to one question; this base class is the
    stated default for a benchmark or task with no rule of its own: normalised exact match (lowercase,
    a whole number word as its digit, punctuation removed, whitespace collapsed), under either rule.

    ``extract`` is the benchmark's reading of an answer for its rows and scores (no question needed);
    ``read`` turns a raw output into the form that is compared (an option letter for a question with
    options); ``agree`` compares two read answers. Built per question, because multiple-choice agreement
    needs the question's options. A subclass changes ``yes_no`` (POPE's yes/no mapping), ``reduce``
    (what a cleaned answer becomes before comparison) and ``same`` (the comparison itself)."""

    summary = "normalised exact match"  # what the rule is, for a run's config.json
    yes_no = False

    def __init__(self, question: str = "", rule: str = "paper"):
        if rule not in AGREE_RULES:
            raise ValueError(f"agree must be one of {AGREE_RULES}, got {rule!r}")
        self.question, self.rule = question, rule

    @classmethod
    def extract(cls, text: str, reasoning: bool = False) -> str:
        """The answer a row records and ``score_extracted`` scores (``extract_answer``)."""
        return extract_answer(text, reasoning, cls.yes_no)

    def read(self, text: str, reasoning: bool = False) -> str:
        """The answer in a raw output, as compared; "" when it has none. ``reasoning``: a Think output."""
        return self.reduce(clean(extract_answer(text, reasoning, self.yes_no)))

    def reduce(self, answer: str) -> str:
        return answer

    def agree(self, a: str, b: str) -> bool:
        """Whether two read answers agree; an empty answer never does."""
        return bool(a) and bool(b) and self.same(a, b)

    def same(self, a: str, b: str) -> bool:
        x, y = normalise(a), normalise(b)
        return bool(x) and x == y


class AnlsMatcher(Matcher):
    """ANLS between the two answers at lmms-eval's threshold (>= 0.5; lmms_eval/api/metrics.py ``anls``),
    as the paper names ANLS for InfoVQA; the default for any task whose metric is ANLS. Strict: equal
    text after lowercasing and collapsing whitespace."""

    summary = "ANLS >= 0.5 between the two answers"

    def same(self, a: str, b: str) -> bool:
        if self.rule == "strict":
            return " ".join(a.lower().split()) == " ".join(b.lower().split())
        return anls(a, [b], threshold=ANLS_THRESHOLD) >= ANLS_THRESHOLD


class OptionMatcher(Matcher):
    """Multiple choice (rule "paper"): the option each answer maps to, from the options written in the
    question ("A. Left" lines, ``question_options``), so "Left" and "A" agree when option A is "Left".
    A benchmark's subclass says what an answer naming no option becomes (``reduce``)."""

    def __init__(self, question: str = "", rule: str = "paper"):
        super().__init__(question, rule)
        self.options = question_options(question) if rule == "paper" else {}

    def option(self, answer: str) -> str:
        """The letter of the option an answer names: its letter, its whole text, or the one option
        text it contains as words; "" when none or several."""
        letter = option_letter(answer)
        if letter in self.options:
            return letter
        said = normalise(answer)
        texts = {normalise(text): letter for letter, text in self.options.items()}
        if said in texts:
            return texts[said]
        hits = {letter for text, letter in texts.items() if text and re.search(rf"\b{re.escape(text)}\b", said)}
        return hits.pop() if len(hits) == 1 else ""


AGREEMENTS = {"exact": Matcher, "anls": AnlsMatcher}


def default_agreement(metric: str | None = None, override: str | None = None) -> type[Matcher]:
    """The agreement for a benchmark or task with no rule of its own: ``override`` when given (a key of
    ``AGREEMENTS``), else ANLS >= 0.5 when its metric is ANLS (a metric name containing "anls", as
    lmms-eval's "anls"), else normalised exact match."""
    if override is not None:
        if override not in AGREEMENTS:
            raise ValueError(f"unknown agreement {override!r}; known: {', '.join(AGREEMENTS)}")
        return AGREEMENTS[override]
    return AnlsMatcher if metric and "anls" in metric.lower() else Matcher
