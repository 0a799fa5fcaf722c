"""GSM8K (Cobbe et al. 2021): grade-school math word problems whose answers take several arithmetic steps,
the text task closest to ChartQA's reasoning. The problems ship with the repository (mai/assets/gsm8k,
sha256-checked): dev is 50 problems of train.jsonl drawn with ``_vendored.SPLIT_SEED``, test is test.jsonl
(1,319; a run's --limit subsamples it). The reference is the number after "#### " in the solution.

Scoring, as lm-evaluation-harness scores gsm8k and gsm8k_cot_zeroshot at ``_bbh.LM_EVAL_COMMIT``
(lm_eval/tasks/gsm8k/gsm8k.yaml, gsm8k-cot-zeroshot.yaml): flexible-extract, the same in both (the LAST match
of "(-?[$0-9.,]{2,})|(-?[0-9]+)"), then exact match ignoring case with regexes_to_ignore ",", "\\$",
"(?s).*#### " and "\\.$" applied to prediction and reference; the headline. Beside it the two strict-matches:
gsm8k's "#### (\\-?[0-9\\.\\,]+)" (the format of its five-shot exemplars, which no prompt here asks for) and
gsm8k_cot_zeroshot's "The answer is (\\-?[0-9\\.\\,]+).". max_new_tokens 256 (lm-eval's default max_gen_toks).
Agreement: the same number (the last number of each answer, commas and "$" dropped).
"""
from __future__ import annotations

import json
import re

from mai.answers import Matcher
from mai.benchmarks import register
from mai.benchmarks._bbh import FALLBACK, filter_accuracy, regex_filter
from mai.benchmarks._vendored import DEV_SIZE, VendoredBenchmark, check_split, read_checked, split_indices
from mai.data import as_list
from mai.metrics import lmms_eval_response, mean

POST_PROMPT = "\nAnswer with only the final number."
FLEXIBLE = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"
STRICT = r"#### (\-?[0-9\.\,]+)"
COT_STRICT = r"The answer is (\-?[0-9\.\,]+)."
IGNORE = (",", r"\$", r"(?s).*#### ", r"\.$")  # gsm8k.yaml's metric_list regexes_to_ignore, in order


def exact_match(prediction: str, reference: str) -> bool:
    """``exact_match_hf_evaluate`` with gsm8k.yaml's regexes_to_ignore and ignore_case."""
    for pattern in IGNORE:
        prediction, reference = re.sub(pattern, "", prediction), re.sub(pattern, "", reference)
    return prediction.lower() == reference.lower()


def flexible(response: str) -> str:
    """gsm8k's flexible-extract: the last number-like run of the response, or "[invalid]"."""
    return regex_filter(FLEXIBLE, response, select=-1)


class NumberMatcher(Matcher):
    """The same number: the last number of each answer (flexible-extract's reading), compared as a value
    ("18", "$18.00" and "18." agree). Strict: the extracted answers as written."""

    summary = "same number (the last number of each answer, as gsm8k's flexible-extract reads it)"

    def reduce(self, answer: str) -> str:
        if self.rule == "strict":
            return answer
        found = flexible(answer)
        if found == FALLBACK:
            return ""
        digits = re.sub(r"[$,]", "", found).rstrip(".")
        try:
            return repr(float(digits))
        except ValueError:
            return ""

    def same(self, a: str, b: str) -> bool:
        return a == b


@register
class GSM8K(VendoredBenchmark):
    name = "gsm8k"
    asset_folder = "gsm8k"
    cot_file = "cot-prompt.txt"
    metric = "exact"
    headline = "flexible_extract"
    post_prompt = POST_PROMPT
    answer_format = "\nRespond with only the final number, without any explanation or working."
    max_new_tokens = 256
    agreement = NumberMatcher
    scoring = "lm-eval gsm8k / gsm8k_cot_zeroshot: flexible-extract (the last number), exact match ignoring case"
    order = 32

    def items(self, split):
        if split == "dev":
            lines = read_checked(self.asset_folder, "train.jsonl").decode().splitlines()
            return [(k, json.loads(lines[k])) for k in split_indices(len(lines), "dev", DEV_SIZE)]
        check_split(split)
        lines = read_checked(self.asset_folder, "test.jsonl").decode().splitlines()
        return [(k, json.loads(line)) for k, line in enumerate(lines)]

    def example(self, item, idx, split):
        solution = item["answer"]
        return self.text_example(idx, split, item["question"].strip(), [solution.split("#### ")[-1].strip()],
                                 {"solution": solution, "file": "train.jsonl" if split == "dev" else "test.jsonl"})

    def score(self, prediction, references, question=None, meta=None) -> float:
        answer = flexible(lmms_eval_response(prediction))
        return 1.0 if any(exact_match(answer, ref) for ref in as_list(references)) else 0.0

    def aggregate(self, rows, extracted_answers: bool = False) -> dict:
        rows = list(rows)
        text = self.extract if extracted_answers else (lambda t: t)
        return {self.headline: mean(self.row_scores(rows, extracted_answers)),
                "strict_match": filter_accuracy(rows, text, lambda resp, q: regex_filter(STRICT, resp), exact_match),
                "cot_strict_match": filter_accuracy(rows, text, lambda resp, q: regex_filter(COT_STRICT, resp),
                                                    exact_match)}
