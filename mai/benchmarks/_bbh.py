"""BIG-bench benchmarks: read from a BIG-bench task file, scored as BIG-Bench Hard (Suzgun et al. 2022) is
zero-shot: the reference's answer extraction, then exact match.

``BigBenchBenchmark`` is what a BIG-bench benchmark module (strategyqa.py, object_counting.py,
date_understanding.py) subclasses: it reads the task.json ``mai.benchmarks._bigbench`` cached (or one
given as ``data_files``), subsamples it with ``mai.data.subsample_indices`` and makes text-only Examples.

The reference is EleutherAI/lm-evaluation-harness at commit 4e7e0d47f33bc71070c1d38394bafbb52b117163
(``LM_EVAL_COMMIT``): ``lm_eval/tasks/bbh/zeroshot/_zeroshot_template_yaml`` (metric exact_match with
ignore_case and regexes_to_ignore ``\\.$ , \\n \\\\ "``), the per-task ``filter_list`` of
``object_counting.yaml`` / ``date_understanding.yaml`` / ``causal_judgement.yaml`` (a "strict-match" that
scores the whole response and a "flexible-extract" that first pulls the answer out of it), the filters of
``lm_eval/tasks/bbh/zeroshot/utils.py`` and ``lm_eval/filters/extraction.py`` (``RegexFilter``), and
``exact_match_hf_evaluate`` in ``lm_eval/api/metrics.py``. A benchmark's ``score`` is its flexible-extract
number (what "exact match of the extracted answer" means there); ``strict_match`` is reported beside it.

The filters are reproduced with their quirks, on purpose: the English-number pattern of
``NumberParseRegexFilter`` (run with the ``regex`` module, as there: it uses branch-reset groups) matches
"three" or "seventeen" but not a lone "six", "seven", "eight" or "nine", and matches inside words
("often" reads as 10); the lone letter after a colon counts ("Answer: B" is (B)). Generation settings of
the reference (its stop strings "Q:", "</s>", "<|im_end|>") are not scoring and are not applied here.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from mai import MaiEnvironmentError, MaiError
from mai.benchmarks._vendored import VendoredBenchmark, read_checked, split_indices
from mai.data import Benchmark, Example, as_list, subsample_indices
from mai.metrics import lmms_eval_response, mean

LM_EVAL_COMMIT = "4e7e0d47f33bc71070c1d38394bafbb52b117163"
FALLBACK = "[invalid]"  # RegexFilter's fallback when nothing matches
# _zeroshot_template_yaml's metric_list: regexes_to_ignore (applied in order), then ignore_case.
IGNORE = (r"\.$", ",", "\n", r"\\", '"')

# causal_judgement.yaml / navigate.yaml's flexible-extract (the BBH tasks whose targets are Yes/No).
YES_NO_PATTERN = r"\b(Yes|No|yes|no)\b"
# object_counting.yaml's NumberParseRegexFilter(regex_pattern="([-0-9]+)"), then this English pattern from
# utils.py (verbatim), converted with word2number's w2n.word_to_num.
NUMBER_PATTERN = r"([-0-9]+)"
ENGLISH_NUMBER_PATTERN = (
    "((?:(?:zero|one|two|three|four|five|(?:twen|thir|for|fif|six|seven|nine)(?|teen|ty)|eight(?:|een|y)|ten|eleven"
    "|twelve|fourteen|hundred|thousand|(?:m|b|tr)illion)(?:zero|one|two|three|four|five|(?:twen|thir|for|fif|six"
    "|seven|nine)(?:|teen|ty)|eight(?|een|y)|ten|eleven|twelve|fourteen|hundred|thousand|(?:m|b|tr)illion"
    "|[^\\S\r\n]|,|and|&)+)?(?:zero|one|two|three|four|five|(?:twen|thir|for|fif|six|seven|nine)(?|teen|ty)"
    "|eight(?|een|y)|ten|eleven|twelve|fourteen|hundred|thousand|(?:m|b|tr)illion))"
)
# date_understanding.yaml's MultiChoiceRegexFilter(regex_pattern="(\([A-Z]\))", ignore_case, ignore_punctuation).
CHOICE_PATTERN = r"(\([A-Z]\))"
_CHOICES_IN_INPUT = re.compile(r"\([A-Z]\)([^\n^(]*)")  # how it reads the options off the input


def exact_match(prediction: str, reference: str) -> bool:
    """``exact_match_hf_evaluate`` with the BBH template's regexes_to_ignore and ignore_case."""
    for pattern in IGNORE:
        prediction, reference = re.sub(pattern, "", prediction), re.sub(pattern, "", reference)
    return prediction.lower() == reference.lower()


def _first(pattern, text: str, convert: dict | None = None, select: int = 0) -> str:
    """``find_match``: findall's match number ``select`` (the filter's group_select: 0 the first, as the
    zero-shot tasks take it, -1 the last, as the chain-of-thought ones do; the first non-empty group of a
    tuple), stripped, mapped through ``convert`` when it is a key; "" when none."""
    found = pattern.findall(text)
    if not found:
        return ""
    match = found[select]
    if isinstance(match, tuple):
        match = [m for m in match if m][0]
    match = match.strip()
    return (convert or {}).get(match, match) if match else match


def regex_filter(pattern: str, response: str, select: int = 0) -> str:
    """lm-eval's ``RegexFilter`` (group_select ``select``) on one response."""
    return _first(re.compile(pattern), response, select=select) or FALLBACK


def filter_accuracy(rows, text, reading, match=exact_match) -> float:
    """One lm-eval filter's accuracy over result rows: ``reading(response, question)`` is the filter on
    lmms-eval's response to ``text(prediction)``, then ``match`` (the task's exact_match) against any reference."""
    return mean(1.0 if any(match(reading(lmms_eval_response(text(r["prediction"])), r.get("question")), ref)
                           for ref in as_list(r["references"])) else 0.0 for r in rows)


def yes_no(response: str) -> str:
    """The first whole-word Yes/No/yes/no (causal_judgement's flexible-extract), or "[invalid]"."""
    return regex_filter(YES_NO_PATTERN, response)


NUMBER_WORDS = {w: k for k, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
NUMBER_WORDS.update({w: 10 * k for k, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(),
                                                        start=2)})
NUMBER_WORDS.update(hundred=100, thousand=1000, million=10**6, billion=10**9)


def _formation(values: list[int]) -> int:
    """w2n's ``number_formation`` (word2number 1.1)."""
    if len(values) == 4:
        return values[0] * values[1] + values[2] + values[3]
    if len(values) == 3:
        return values[0] * values[1] + values[2]
    if len(values) == 2:
        return values[0] * values[1] if 100 in values else values[0] + values[1]
    return values[0]


def word_to_num(phrase: str) -> int:
    """word2number 1.1's ``w2n.word_to_num`` for the phrases the English pattern matches (number words,
    spaces, commas, "and", "&"; no "point"): ValueError where it raises."""
    words = [w for w in phrase.replace("-", " ").lower().split() if w in NUMBER_WORDS]
    if not words:
        raise ValueError("no valid number words")
    scales = ("billion", "million", "thousand")
    if any(words.count(s) > 1 for s in scales):
        raise ValueError("redundant number word")
    at = {s: (words.index(s) if s in words else -1) for s in scales}
    b, m, t = at["billion"], at["million"], at["thousand"]
    if (t > -1 and (t < m or t < b)) or (m > -1 and m < b):
        raise ValueError("malformed number")
    values = [NUMBER_WORDS[w] for w in words]
    if len(values) == 1:
        return values[0]
    total = 0
    if b > -1:
        total += _formation(values[:b]) * 10**9
    if m > -1:
        total += _formation(values[b + 1:m] if b > -1 else values[:m]) * 10**6
    if t > -1:
        start = m + 1 if m > -1 else (b + 1 if b > -1 else 0)
        total += _formation(values[start:t]) * 1000
    last = max(b, m, t)
    if last == -1:
        total += _formation(values)
    elif last != len(values) - 1:
        total += _formation(values[last + 1:])
    return total


def number(response: str, select: int = 0) -> str:
    """``NumberParseRegexFilter``: the first (``select`` -1: the last) run of digits and minus signs, else
    that English number phrase of the lowercased response as digits, else "[invalid]"."""
    import regex  # a transformers dependency; the reference's pattern needs its branch-reset groups

    match = _first(re.compile(NUMBER_PATTERN), response, select=select)
    if not match:
        phrase = _first(regex.compile(ENGLISH_NUMBER_PATTERN), response.lower(), select=select)
        if phrase:
            try:
                match = str(word_to_num(phrase))
            except ValueError:  # w2n raises here and lm-eval's run stops; one answer is just unread
                match = ""
    return match or FALLBACK


def _ignore_punctuation(text: str) -> str:
    """ExtendedRegexFilter.filter_ignores with ignore_case and ignore_punctuation (every Unicode P* character)."""
    import regex

    return regex.sub(r"\p{P}", "", text.lower())


def choices(question: str) -> list[str]:
    """The option texts of a BBH multiple-choice input, as MultiChoiceRegexFilter reads them ("(A) text")."""
    return [m.strip() for m in _CHOICES_IN_INPUT.findall(question)]


def multiple_choice(response: str, question: str, select: int = 0) -> str:
    """``MultiChoiceRegexFilter``: the first (``select`` -1: the last) "(X)" in the response; else the option
    whose text (lowercased, punctuation removed) occurs so in the response treated so, as its "(X)"; else
    a letter after a colon (":  B"); else "[invalid]". The options are read off the question (the BBH input)."""
    match = _first(re.compile(CHOICE_PATTERN), response, select=select)
    if match:
        return match
    texts = [_ignore_punctuation(t) for t in choices(question)]
    letters = [chr(ord("A") + k) for k in range(len(texts))]
    to_letter = {t: f"({x})" for t, x in zip(texts, letters)}
    match = _first(re.compile("|".join(re.escape(t) for t in texts)), _ignore_punctuation(response), to_letter,
                   select)
    if match:
        return match
    if letters:
        match = _first(re.compile(rf":[\s]*({'|'.join(letters)})"), response, {x: f"({x})" for x in letters},
                       select)
    return match or FALLBACK


def map_regex(response: str, pattern_to_value: dict[str, str], select: int = 0) -> str:
    """``MapRegexFilter`` with ignore_case (bbh zeroshot/cot_zeroshot utils.py): on the lowercased response,
    match number ``select`` of all the patterns joined by "|", then the value of the first pattern that
    matches that match; "[invalid]" when none."""
    lowered = response.lower()
    whole = _first(re.compile("|".join(pattern_to_value)), lowered, select=select)
    if whole:
        for pattern, value in pattern_to_value.items():
            if _first(re.compile(pattern), whole.lower(), select=select):
                return value
    return FALLBACK


# The strict-match of every bbh/cot_zeroshot task (its yaml's filter_list, verbatim): what follows "The
# answer is" (and its variants) up to the line's last character, the first such match.
COT_STRICT_PATTERN = (r"((?<=The answer is )(.*)(?=.)|(?<=the answer is )(.*)(?=.)|(?<=The answer: )(.*)(?=.)"
                      r"|(?<=The final answer: )(.*)(?=.))")


def cot_strict(response: str) -> str:
    """bbh/cot_zeroshot's strict-match filter: the answer after "The answer is", or "[invalid]"."""
    return regex_filter(COT_STRICT_PATTERN, response)


class BBHScoring:
    """A benchmark scored as lm-eval scores BBH zero-shot: ``reference_extract`` (the task's flexible-extract
    filter) on the response, then ``exact_match`` against each reference. ``score`` is that number per
    example; ``aggregate`` also reports strict-match (the whole response, no extraction)."""

    headline = "exact_match"

    def reference_extract(self, response: str, question: str | None, meta: dict | None) -> str:
        raise NotImplementedError

    def score(self, prediction, references, question=None, meta=None) -> float:
        answer = self.reference_extract(lmms_eval_response(prediction), question, meta)
        return 1.0 if any(exact_match(answer, ref) for ref in as_list(references)) else 0.0

    def strict_score(self, prediction, references) -> float:
        response = lmms_eval_response(prediction)
        return 1.0 if any(exact_match(response, ref) for ref in as_list(references)) else 0.0

    def aggregate(self, rows, extracted_answers: bool = False) -> dict:
        """``exact_match`` (flexible-extract, the headline) and ``strict_match``, fractions in [0, 1]."""
        rows = list(rows)
        text = self.extract if extracted_answers else (lambda t: t)
        return {self.headline: mean(self.row_scores(rows, extracted_answers)),
                "strict_match": mean(self.strict_score(text(r["prediction"]), r["references"]) for r in rows)}


class BigBenchBenchmark(Benchmark):
    """A text-only benchmark read from one BIG-bench task file; a subclass turns one of its examples
    (a dict of the task.json schema) into an Example (``example``)."""

    bigbench_task: str = ""
    split = "default"  # BIG-bench task files have one list of examples

    def example(self, item: dict, idx: int) -> Example:
        raise NotImplementedError

    def text_example(self, idx: int, question: str, references: list[str], meta: dict) -> Example:
        """A text-only Example with a stable id (the item's index in the task file)."""
        return Example(id=f"{self.name}-{idx}", benchmark=self.name, question=question, references=references,
                       images=[], meta={"index": idx, **meta}, text_only=True)

    @staticmethod
    def read_items(path) -> list[dict]:
        """The examples of a task.json in BIG-bench's schema; one line for a file that cannot be read or is
        not one (also what mai.cli checks of a --data-files task file before anything loads)."""
        try:
            items = json.loads(Path(path).read_text())["examples"]
        except OSError as err:
            raise MaiEnvironmentError(f"cannot read {path} ({os.strerror(err.errno) if err.errno else err})") from None
        except (ValueError, KeyError, TypeError):
            items = None
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise MaiError(f"{path} is not a BIG-bench task file (JSON with examples)")
        return items

    def load(self, limit, seed, data_files=None):
        if data_files is None:
            # imported here, not above: then `python -m mai.benchmarks._bigbench` is not imported twice
            from mai.benchmarks._bigbench import PIN, member_path, task_file

            path, source = task_file(self.bigbench_task), f"{PIN} {member_path(self.bigbench_task)}"
        else:
            files = [data_files] if isinstance(data_files, (str, os.PathLike)) else list(data_files)
            if len(files) != 1:
                raise MaiError(f"{self.name} reads one BIG-bench task.json, got {len(files)} files")
            path, source = Path(files[0]), f"task file {files[0]} in the BIG-bench schema"
        items = self.read_items(path)
        return [self.example(items[k], k) for k in subsample_indices(len(items), limit, seed)], source


class BBHCotScoring(BBHScoring):
    """A BBH task whose outputs may be reasoning: scored as lm-eval's bbh/cot_zeroshot task scores it
    (the flexible-extract of the zero-shot task, but taking the LAST match, group_select -1, so that a
    reasoning is read at its conclusion, not at its first number), then exact match ignoring case. On a
    bare answer ("3", "(B)", "yes") both readings are the same. ``aggregate`` also reports the zero-shot
    task's two filters and cot_zeroshot's strict-match ("The answer is X.") beside it. A subclass gives
    ``read(response, question, select)``: its flexible-extract filter with that group_select."""

    headline = "cot_flexible_extract"

    def read(self, response: str, question: str | None, select: int) -> str:
        raise NotImplementedError

    def reference_extract(self, response: str, question: str | None, meta: dict | None) -> str:
        return self.read(response, question, -1)

    def aggregate(self, rows, extracted_answers: bool = False) -> dict:
        rows = list(rows)
        text = self.extract if extracted_answers else (lambda t: t)

        return {self.headline: mean(self.row_scores(rows, extracted_answers)),
                "cot_strict_match": filter_accuracy(rows, text, lambda resp, q: cot_strict(resp)),
                "zeroshot_flexible_extract": filter_accuracy(rows, text, lambda resp, q: self.read(resp, q, 0)),
                "zeroshot_strict_match": filter_accuracy(rows, text, lambda resp, q: resp)}


class VendoredBBH(VendoredBenchmark):
    """A BIG-Bench Hard task shipped in mai/assets/bbh (``task``: its file name), 50 dev and 200 test."""

    asset_folder = "bbh"
    task = ""

    @property
    def cot_file(self) -> str:
        return f"cot-prompts/{self.task}.txt"

    def items(self, split):
        examples = json.loads(read_checked(self.asset_folder, f"{self.task}.json"))["examples"]
        return [(k, examples[k]) for k in split_indices(len(examples), split)]

    def example(self, item, idx, split):
        return self.text_example(idx, split, item["input"].strip(), [item["target"].strip()], {"task": self.task})
