"""Date understanding (BIG-bench, Srivastava et al. 2022; one of BIG-Bench Hard's 23 tasks, Suzgun et al. 2022):
"Yesterday was April 30, 2021. What is the date today in MM/DD/YYYY?" with five or six dates to choose from.

Data: BIG-bench's ``date_understanding`` task file (``mai.benchmarks._bigbench``, bigbench 1.0.0), 369
examples, each with ``target_scores`` {date: 0/1} (one date scored 1). The question is built in BBH's
format (suzgunmirac/BIG-Bench-Hard bbh/date_understanding.json at commit
9ee07bd481feebf959a6b59d61ea57bdcf30964d): the input, then "Options:" and one "(A) date" line per option;
the reference is the right option's "(X)", as BBH's targets are. Option order: the task file lists the
right date first in 364 of 369 examples, and BBH's 250 (all of them examples of this file) are in neither
that order nor sorted (checked on all 250: 248 in another order, 2 sorted), a shuffle whose seed BBH does
not publish; so the options are shuffled here with ``random.Random(index)`` (index: the example's place in
the task file), deterministic and spread over the letters like BBH's.

Scoring, as lm-evaluation-harness scores BBH zero-shot (lm_eval/tasks/bbh/zeroshot/date_understanding.yaml
at ``_bbh.LM_EVAL_COMMIT``): flexible-extract (``MultiChoiceRegexFilter``: the first "(X)", else an
option's text, else a letter after a colon), then exact match ignoring case against "(X)". "(B)" and
"The answer is (B)." score; a bare "B" does not (``mai.benchmarks._bbh``), so the post-prompt asks for
the letter in parentheses. max_new_tokens 256: lm-eval's default max_gen_toks. Agreement: the same option,
named by its letter or by its text.
"""
from __future__ import annotations

import random
import re

from mai.answers import Matcher, extract_answer, normalise
from mai.benchmarks import register
from mai.benchmarks._bbh import FALLBACK, BBHScoring, BigBenchBenchmark, multiple_choice
from mai.data import Example

POST_PROMPT = "\nAnswer with the option's letter in parentheses from the given choices directly."
_OPTION_LINE = re.compile(r"^\(([A-Z])\) (.*)$", re.MULTILINE)
_PAREN = re.compile(r"\(([A-Z])\)")
# A whole answer that is a letter, or starts with one and a delimiter: "B", "B.", "B)", "[B]", "B: ..."
_LEAD = re.compile(r"^[(\[]?([A-Z])(?:[)\].:,]|$)")


def bbh_question(text: str, options: list[str]) -> str:
    """BBH's input: the question, "Options:", then "(A) option" lines."""
    lines = "\n".join(f"({chr(ord('A') + k)}) {o}" for k, o in enumerate(options))
    return f"{text}\nOptions:\n{lines}"


def options_of(question: str) -> dict[str, str]:
    """letter -> option text of a question in BBH's format; {} when it has no "Options:" block."""
    if "\nOptions:\n" not in question:
        return {}
    return dict(_OPTION_LINE.findall(question.rsplit("\nOptions:\n", 1)[1]))


def _letter(answer: str) -> str:
    """The letter an answer names by its letter: the first "(X)", or a leading lone letter; "" if none."""
    s = answer.strip().strip("*\"'`").strip()
    m = _PAREN.search(s) or _LEAD.match(s)
    return m.group(1) if m else ""


class DateMatcher(Matcher):
    """The option each answer names: its letter ("(B)", "B", "B. 12/25/1937"), the reference's reading of it
    (an option's text), or the one option whose text it contains; equal letters agree. Strict: the letter
    as written only."""

    summary = "same option (letter or option text)"

    def __init__(self, question: str = "", rule: str = "paper"):
        super().__init__(question, rule)
        self.options = options_of(question)

    @classmethod
    def extract(cls, text: str, reasoning: bool = False) -> str:
        """"(X)" when the answer names a letter (the form the reference scores), else the answer text (its
        option text still scores, read against the question)."""
        answer = extract_answer(text, reasoning)
        letter = _letter(answer)
        return f"({letter})" if letter else answer

    def reduce(self, answer: str) -> str:
        letter = _letter(answer)
        if self.rule == "strict":
            return letter
        if letter in self.options:
            return letter
        read = multiple_choice(answer, self.question) if self.options else FALLBACK
        if read != FALLBACK and read[1] in self.options:
            return read[1]
        said = normalise(answer)
        hits = {x for x, text in self.options.items() if normalise(text) and normalise(text) in said}
        return hits.pop() if len(hits) == 1 else ""

    def same(self, a: str, b: str) -> bool:
        return a.upper() == b.upper()


@register
class DateUnderstanding(BBHScoring, BigBenchBenchmark):
    name = "date_understanding"
    bigbench_task = "date_understanding"
    metric = "option"
    post_prompt = POST_PROMPT
    max_new_tokens = 256
    agreement = DateMatcher
    scoring = "lm-eval bbh_zeroshot_date_understanding: flexible-extract (multiple choice), exact match ignoring case"
    order = 22

    def example(self, item: dict, idx: int) -> Example:
        options = list(item["target_scores"])
        random.Random(idx).shuffle(options)
        right = [k for k, o in enumerate(options) if item["target_scores"][o] == 1]
        letters = [f"({chr(ord('A') + k)})" for k in right]
        return self.text_example(idx, bbh_question(item["input"].strip(), options), letters,
                                 {"options": {chr(ord("A") + k): o for k, o in enumerate(options)}})

    def reference_extract(self, response, question=None, meta=None) -> str:
        if question is None:  # rows without their question: rebuild it from the recorded options
            question = bbh_question("", list(((meta or {}).get("options") or {}).values()))
        return multiple_choice(response, question)
