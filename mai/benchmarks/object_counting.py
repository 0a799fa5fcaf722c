"""Object counting (BIG-bench, Srivastava et al. 2022; one of BIG-Bench Hard's 23 tasks, Suzgun et al. 2022):
"I have a clarinet, a violin, and a flute. How many musical instruments do I have?".

Data: BIG-bench's ``object_counting`` task file (``mai.benchmarks._bigbench``, bigbench 1.0.0), 1,000
examples, each with ``target`` [word, digits] (["three", "3"]). BBH's own 250 (suzgunmirac/BIG-Bench-Hard
bbh/object_counting.json at commit 9ee07bd481feebf959a6b59d61ea57bdcf30964d) were generated afresh with
the task's generator (one of them is in this file) and give the target as digits alone; the reference here
is likewise the digits.

Scoring, as lm-evaluation-harness scores BBH zero-shot (lm_eval/tasks/bbh/zeroshot/object_counting.yaml at
``_bbh.LM_EVAL_COMMIT``): flexible-extract (``NumberParseRegexFilter``: the first run of digits, else the
first English number phrase as digits), then exact match ignoring case. "7" and "7." score; "seven" does
not (that filter's English pattern misses a lone six/seven/eight/nine: ``mai.benchmarks._bbh``).
max_new_tokens 256: lm-eval's default max_gen_toks (the BBH yaml sets none). Agreement: the same number
read off both answers.
"""
from __future__ import annotations

from mai.answers import Matcher
from mai.benchmarks import register
from mai.benchmarks._bbh import FALLBACK, NUMBER_WORDS, BBHScoring, BigBenchBenchmark, number, word_to_num
from mai.data import Example

POST_PROMPT = "\nAnswer with only the number."


class CountMatcher(Matcher):
    """The count each answer gives, equal ("7", "seven" and "7 objects" agree; "7" and "8" do not): an
    answer of number words only is that number (word2number's reading), any other the first number the
    reference's filter reads off it. Unlike that filter, a lone "seven" is 7 here: which model says "7" and
    which "seven" must not decide a route. Strict: normalised exact match."""

    summary = "same count (number words, else the first number as lm-eval's BBH number filter reads it)"

    def reduce(self, answer: str) -> str:
        if self.rule == "strict":
            return answer
        words = answer.replace("-", " ").lower().split()
        if words and all(w in NUMBER_WORDS or w == "and" for w in words) and any(w in NUMBER_WORDS for w in words):
            try:
                return str(word_to_num(answer))
            except ValueError:
                return ""
        found = number(answer)
        return "" if found == FALLBACK else found


@register
class ObjectCounting(BBHScoring, BigBenchBenchmark):
    name = "object_counting"
    bigbench_task = "object_counting"
    metric = "exact"
    post_prompt = POST_PROMPT
    max_new_tokens = 256
    agreement = CountMatcher
    scoring = "lm-eval bbh_zeroshot_object_counting: flexible-extract (number), exact match ignoring case"
    order = 21

    def example(self, item: dict, idx: int) -> Example:
        digits = [t for t in item["target"] if t.isdigit()]
        words = [t for t in item["target"] if not t.isdigit()]
        return self.text_example(idx, item["input"].strip(), digits, {"target_words": words})

    def reference_extract(self, response, question=None, meta=None) -> str:
        return number(response)
