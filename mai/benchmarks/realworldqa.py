"""RealWorldQA (xAI, 2024): real-world spatial questions, most of them multiple choice with their options
written in the question.

lmms-eval's ``realworldqa`` task at ``mai.metrics.LMMS_EVAL_COMMIT``: ``tasks/realworldqa/realworldqa.yaml``
(split test, max_new_tokens 16, post-prompt "" because the question carries its own instruction) and
``utils.py``: ``extract_mcq_answer`` for an A-D target, ``lower().strip().rstrip(".")`` otherwise.  The
scoring before commit 9ca4445d (2026-04-11), as at d0c1eae7, is ``RealWorldQA(scoring="d0c1eae7")``: the
yaml's flexible-extract filters on the raw response, then ``lower().strip().rstrip(".")``; the paper may
have used it.
"""
from __future__ import annotations

import re

from mai import MaiError
from mai.answers import OptionMatcher
from mai.benchmarks import register
from mai.data import Example, HubBenchmark, as_list
from mai.metrics import NUMBER_WORDS, extract_mcq_answer, lmms_eval_response

# The scoring at LMMS_EVAL_COMMIT, and the one before 9ca4445d (2026-04-11), read at
# d0c1eae757432949cc276537e9d883934738ae21.
SCORINGS = ("75571cfe", "d0c1eae7")
CURRENT, D0C1EAE7 = SCORINGS
_CHOICE_LINE = re.compile(r"\b([A-Z])\.\s+([^\n]*)")


class RealWorldQAMatcher(OptionMatcher):
    """The option each answer names (its letter, or an option's text, from the question's "A. Left"
    lines: "Left" and "A" agree when option A is "Left"); an answer naming none, or a question without
    options, compares normalised text. Strict: normalised text only."""

    summary = "same option (letter or text), else normalised exact match"

    def reduce(self, answer: str) -> str:
        return (self.option(answer) if self.options else "") or answer


def correct(response: str, target: str) -> bool:
    """RealWorldQA's ``process_results`` at LMMS_EVAL_COMMIT, on a processed (stripped) response.

    A target that is a letter A-D (after strip, any case) is matched by
    ``extract_mcq_answer(response, ABCD)``; any other target by
    ``response.lower().strip().rstrip(".") == target.strip().lower()``.
    """
    gt = target.strip()
    if gt.upper() in ("A", "B", "C", "D"):
        return extract_mcq_answer(response, ["A", "B", "C", "D"]) == gt.upper()
    return response.lower().strip().rstrip(".") == gt.lower()


def _filter_d0c1eae7(prediction: str, question: str | None = None) -> str:
    """d0c1eae7's ``flexible-extract`` filter chain, then its process_results normalisation.

    Meant for the raw response, as lmms-eval applies filters before stripping anything.
    """
    # NumberWordsToDigitsFilter: only when the whole response is a number word.
    text = NUMBER_WORDS.get(prediction.lower(), prediction)
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


def correct_d0c1eae7(raw: str, target: str, question: str | None = None) -> bool:
    """RealWorldQA as lmms-eval scored it at d0c1eae7 (before 9ca4445d, 2026-04-11), from the raw output.

    A response that is entirely a number word becomes its digit; punctuation is deleted
    (regex ``[^\\w\\s]``, so "B." and "(B)" become "B", and "3.5" becomes "35"); a choice
    text of the question found in it becomes its letter; then it is stripped, lowercased
    and loses any trailing ".", and must equal ``target.lower().strip()``.
    """
    return _filter_d0c1eae7(raw, question) == target.lower().strip()


@register
class RealWorldQA(HubBenchmark):
    name = "realworldqa"
    metric = "exact"
    headline = "exact_match"
    post_prompt = ""
    max_new_tokens = 16
    hub_path, split = "lmms-lab/RealWorldQA", "test"
    columns = ("image", "question", "answer")
    agreement = RealWorldQAMatcher
    order = 3

    def __init__(self, scoring: str = CURRENT):
        super().__init__()
        if scoring not in SCORINGS:
            raise MaiError(f"unknown RealWorldQA scoring {scoring!r}; known: {', '.join(SCORINGS)}")
        self.scoring = scoring

    def example(self, row: dict, idx: int) -> Example:
        # realworldqa/utils.py: question = doc["question"].strip(); the default post_prompt is "" so
        # the dataset's own instruction ("Please answer directly with ...") stays in the question.
        return Example(id=f"realworldqa-{idx}", benchmark=self.name, question=row["question"].strip(),
                       references=[str(row["answer"]).strip()], images=[row["image"]], meta={})

    def score(self, prediction, references, question=None, meta=None) -> float:
        """The score of a raw output with the scoring of LMMS_EVAL_COMMIT, or of d0c1eae7 (which reads
        the question's choice texts)."""
        if self.scoring == D0C1EAE7:
            ok = any(correct_d0c1eae7(prediction, ref, question) for ref in as_list(references))
        else:
            response = lmms_eval_response(prediction)
            ok = any(correct(response, ref) for ref in as_list(references))
        return 1.0 if ok else 0.0
