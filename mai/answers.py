"""Our answer extraction and the cascade's agreement test: what lmms-eval does not define.

lmms-eval scores a model's raw output (mai.metrics). Two things it does not cover live here:
reading the answer off a reasoning (Think) output, and deciding whether two models' answers agree
(the cascade's mutual verification). Neither is an lmms-eval score.
"""

from __future__ import annotations

import re

from mai.metrics import _anls_norm, _check_metric, _realworldqa_filter, relaxed_correctness

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


def extract_answer(text: str, metric: str) -> str:
    """The answer part of a raw model output, before scoring or comparison.

    The steps, in order:

    1. Remove think blocks (see ``_strip_think``) and strip whitespace.  lmms-eval v0.7
       does this too.
    2. Reasoning outputs only (a think tag, or an answer cue, was present): take the
       first line after the last "The answer is" / "final answer is" / "Answer:" cue,
       case-insensitive.  Strip quotes/asterisks and one trailing punctuation mark.
       For "pope", map a leading yes/no word to "yes"/"no".
    3. For "option", always reduce to the option letter A-E ("" if none is found).

    A plain answer with no think tag and no cue comes back only stripped, which is
    exactly what lmms-eval scores.  See the module docstring for every departure.
    """
    _check_metric(metric)
    s, had_think = _strip_think(text)
    cued = _after_cue(s)
    if cued is not None:
        s = cued
    if had_think or cued is not None:
        s = _clean(s)
        if metric == "pope":
            s = _map_yes_no(s)
    if metric == "option":
        s = _extract_option_letter(s)
    return s


# ---------------------------------------------------------------------------
# Agreement between two models (the cascade's matcher; not an lmms-eval score)
# ---------------------------------------------------------------------------


def _agree_form(text: str, metric: str) -> str:
    s = _clean(extract_answer(text, metric))
    if metric == "pope":
        s = _map_yes_no(s)
    return s


def answers_agree(a: str, b: str, metric: str) -> bool:
    """Whether two models' raw answers agree, under ``metric``'s extraction.

    ``b`` is the larger model's answer.  Both are extracted, then cleaned of quotes,
    asterisks and one trailing punctuation mark, whether or not they are reasoning
    outputs.  An empty answer never agrees.

    * relaxed: ``relaxed_correctness(a, b)`` with ``b`` as the target, i.e. within 5%
      of ``b`` if both are numbers, else equal ignoring case.
    * anls: equal after lowercasing and collapsing whitespace.  We do not use
      ANLS >= 0.5: it would accept answers that differ by one character, like
      "1995" vs "1996" (ANLS 0.75), and those are different answers.
    * pope: both are "yes", or both are "no" (after mapping "Yes, ..." to "yes").
    * exact: equal after RealWorldQA's lmms-eval normalisation (number words,
      punctuation removal, lowercase).
    * option: the same option letter.
    """
    _check_metric(metric)
    x, y = _agree_form(a, metric), _agree_form(b, metric)
    if not x or not y:
        return False
    if metric == "relaxed":
        return relaxed_correctness(x, y)
    if metric == "anls":
        return _anls_norm(x) == _anls_norm(y)
    if metric == "pope":
        x, y = x.lower(), y.lower()
        return x in ("yes", "no") and x == y
    if metric == "exact":
        fx, fy = _realworldqa_filter(x), _realworldqa_filter(y)
        return bool(fx) and fx == fy
    return x.upper() == y.upper()  # option: letters (or "" already rejected above)

