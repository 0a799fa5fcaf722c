"""BIG-Bench Hard's object_counting (Suzgun et al. 2022), the 250 examples that ship with the repository
(mai/assets/bbh, sha256-checked; 50 dev, 200 test: ``mai.benchmarks._vendored``): "I have a clarinet, a
violin, and a flute. How many musical instruments do I have?"; the target is the count in digits.

Scoring: lm-evaluation-harness's bbh_cot_zeroshot_object_counting at ``_bbh.LM_EVAL_COMMIT``
(lm_eval/tasks/bbh/cot_zeroshot/object_counting.yaml): ``NumberParseRegexFilter`` with group_select -1 (the
last number of the response, else its last English number phrase), exact match ignoring case; the zero-shot
task's reading (the first number) is reported beside it (``_bbh.BBHCotScoring``). Prompt and agreement are
those of the BIG-bench archive's object_counting benchmark (``mai.benchmarks.object_counting``).
"""
from __future__ import annotations

from mai.benchmarks import register
from mai.benchmarks._bbh import BBHCotScoring, VendoredBBH, number
from mai.benchmarks.object_counting import POST_PROMPT, CountMatcher


@register
class BBHObjectCounting(BBHCotScoring, VendoredBBH):
    name = "bbh_object_counting"
    task = "object_counting"
    metric = "exact"
    post_prompt = POST_PROMPT
    answer_format = "\nRespond with only the number, in digits, without any explanation."
    max_new_tokens = 256
    agreement = CountMatcher
    scoring = ("lm-eval bbh_cot_zeroshot_object_counting: flexible-extract (the last number), exact match "
               "ignoring case")
    order = 30

    def read(self, response, question, select):
        return number(response, select)
