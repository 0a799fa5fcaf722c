"""MMBench (Liu et al., ECCV 2024): multiple-choice questions over 20 abilities, with CircularEval.

lmms-eval's ``mmbench_en_dev_static`` task at ``mai.metrics.LMMS_EVAL_COMMIT``: ``tasks/mmbench/
_default_template_mmbench_en_yaml`` (max_new_tokens 1024), ``mmbench_en_dev_static.yaml`` (the en config,
split dev), ``en_utils.py`` (the prompt) and ``mmbench_evals.py`` with ``eval_method="static"``: the
letter heuristics ``can_infer_option``, ``can_infer_text``, then ``extract_mcq_answer``; CircularEval (a
question counts only if every rotated copy, grouped by ``index % 1_000_000``, is right), x100.  The
GPT-judge variant (mmbench_en_dev) needs an API and is not reproduced here; published numbers from the
judge can differ.
"""
from __future__ import annotations

import math

from mai.answers import OptionMatcher, extract_answer, option_letter
from mai.benchmarks import register
from mai.data import Example, HubBenchmark, as_list, is_missing, jsonable, subsample_indices
from mai.metrics import extract_mcq_answer, lmms_eval_response, mean

# en_utils.mmbench_doc_to_text appends "\n" + post_prompt, and the yaml's post_prompt itself starts
# with "\n": the prompt lmms-eval builds has a blank line before the instruction.
POST_PROMPT = "\n\nAnswer with the option's letter from the given choices directly."
# mmbench_evals.py groups the rotated copies of a question by index modulo 1e6.
CIRCULAR_MOD = 1_000_000
_LETTERS = ("A", "B", "C", "D", "E")


class MMBenchMatcher(OptionMatcher):
    """The option letter each answer names: its letter, or an option's text from the question's lines
    after "There are several options:" ("cow" agrees with "B" when B is "cow"); an answer naming no
    option has none. Strict: the letter as written."""

    summary = "same option letter (letter or option text)"

    @classmethod
    def extract(cls, text: str, reasoning: bool = False) -> str:
        return option_letter(extract_answer(text, reasoning))

    def reduce(self, answer: str) -> str:
        return self.option(answer) if self.options else option_letter(answer)

    def same(self, a: str, b: str) -> bool:
        return a.upper() == b.upper()


# ---------------------------------------------------------------------------
# The static evaluator (mmbench_evals.py, eval_method="static")
# ---------------------------------------------------------------------------

_WRAPS = (("", "."), ("", ","), ("", ":"), ("", ")"), ("", ")."), ("(", ")"), ("(", ")."),
          (":", ""), (":", ","), (":", "."), (":", ")"), (":", ")."))


def _option_token(answer: str) -> str:
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
    for prefix, suffix in _WRAPS:
        hit = only(prefix, suffix)
        if hit:
            return hit
    return ""


def _option_text(answer: str, choices: dict) -> str:
    """``can_infer_text``: the one option whose text (lowercased) occurs in the lowercased answer, or ""."""
    answer = answer.lower()
    hits = [k for k, v in choices.items() if str(v).lower() in answer]
    return hits[0] if len(hits) == 1 else ""


def choices_of(row: dict) -> dict:
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


def letter_of(response: str, choices: dict | None = None) -> str:
    """The letter the static MMBench evaluator gives a processed response, or "".

    ``can_infer_option`` (a lone letter word), else ``can_infer_text`` (exactly one option
    text inside the answer), else ``extract_mcq_answer`` over the sorted option letters.
    ``choices`` maps letters A-D to option texts (``choices_of``); without it every
    letter A-D is an option with no text.
    """
    choices = dict(choices) if choices is not None else {c: None for c in "ABCD"}
    known = {k: v for k, v in choices.items() if v is not None}
    return (_option_token(response) or _option_text(response, known)
            or extract_mcq_answer(response, sorted(choices)))


def circular(rows: list[tuple[int | None, bool]]) -> tuple[float, int]:
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
        groups.setdefault(index % CIRCULAR_MOD, []).extend(oks)
    questions = [all(groups[i]) for i in sorted(correct_by_index) if i < CIRCULAR_MOD
                 for _ in correct_by_index[i]]
    questions += alone
    return (sum(questions) / len(questions) if questions else 0.0), len(questions)


# ---------------------------------------------------------------------------
# The prompt (en_utils.py + mmbench_evals.py)
# ---------------------------------------------------------------------------


def question_of(row: dict) -> tuple[str, list[str]]:
    """MMBench-en prompt before the post-prompt, as mmbench/en_utils.py + mmbench_evals.py build it.

    Options: every letter column present with a truthy value that is not NaN/"nan", as
    "L. text" lines after "There are several options:".  Then
    f"{hint} {question} {options}" when the hint is not NaN/"nan", else f"{question} {options}".
    """
    letters = [c for c in _LETTERS if c in row and row[c] and not is_missing(row[c])]
    options = "There are several options:\n" + "".join(f"{c}. {row[c]}\n" for c in letters)
    options = options.rstrip("\n")
    hint = row.get("hint")
    if is_missing(hint):
        text = f"{row['question']} {options}"
    else:
        text = f"{hint} {row['question']} {options}"
    return text, letters


@register
class MMBench(HubBenchmark):
    name = "mmbench"
    metric = "option"
    headline = "circular_accuracy"
    post_prompt = POST_PROMPT
    max_new_tokens = 1024
    hub_path, hub_config, split = "lmms-lab/MMBench", "en", "dev"
    columns = ("index", "question", "hint", "answer", "A", "B", "image", "category")
    agreement = MMBenchMatcher
    scoring = "mmbench_en_dev_static (no GPT judge), CircularEval"
    order = 4

    def indices(self, ds, limit, seed):
        """Rows of a subsample of MMBench *questions*, each with all its rotated copies.

        CircularEval (``circular``) scores a question over every row whose index modulo 1e6 is its
        index, so ``limit`` counts questions (index < 1e6) here, not rows.
        """
        index = [int(i) for i in ds.data.column("index").to_pylist()]
        questions = sorted({i for i in index if i < CIRCULAR_MOD})
        chosen = {questions[k] for k in subsample_indices(len(questions), limit, seed)}
        return [row for row, i in enumerate(index) if i % CIRCULAR_MOD in chosen]

    def example(self, row: dict, idx: int) -> Example:
        text, letters = question_of(row)
        meta = {
            "category": jsonable(row.get("category")),
            "options": letters,
            "index": jsonable(row.get("index")),  # >= 1e6: a circular-shift copy of index % 1e6
            # the option texts lmms-eval's static scorer matches answers against (choices_of())
            "choices": {k: jsonable(v) for k, v in choices_of(row).items()},
        }
        for key, out in (("L2-category", "l2_category"), ("source", "source"), ("split", "split")):
            if key in row:
                meta[out] = jsonable(row[key])
        return Example(id=f"mmbench-{row['index']}", benchmark=self.name, question=text,
                       references=[str(row["answer"]).strip()], images=[row["image"]], meta=meta)

    def score(self, prediction, references, question=None, meta=None) -> float:
        """The row's own letter match: the letter read off the raw output (after the reasoning/whitespace
        strip) equals the target letter, compared with the dataset's answer as it is; the benchmark's
        number is the circular one of ``aggregate``."""
        letter = letter_of(lmms_eval_response(prediction), (meta or {}).get("choices"))
        return 1.0 if letter and any(letter == ref for ref in as_list(references)) else 0.0

    def aggregate(self, rows, extracted_answers: bool = False) -> dict:
        """``circular_accuracy`` (CircularEval; lmms-eval reports it x100), ``accuracy`` (each row alone)
        and ``questions``."""
        rows = list(rows)
        scores = self.row_scores(rows, extracted_answers)
        pairs = [((r.get("meta") or {}).get("index"), s == 1.0) for r, s in zip(rows, scores)]
        accuracy, n_questions = circular(pairs)
        return {"circular_accuracy": accuracy, "accuracy": mean(scores), "questions": n_questions}
