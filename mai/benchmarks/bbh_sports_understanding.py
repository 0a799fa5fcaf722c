"""BIG-Bench Hard's sports_understanding (Suzgun et al. 2022), the 250 examples that ship with the repository
(mai/assets/bbh, sha256-checked; 50 dev, 200 test: ``mai.benchmarks._vendored``): 'Is the following
sentence plausible? "Joao Moutinho caught the screen pass in the NFC championship."'; the target is yes/no.
It replaces BIG-bench's StrategyQA (whose archive the registry no longer serves) as the cpu-real preset's
yes/no task: commonsense plausibility, as StrategyQA's implicit reasoning; causal_judgement, BBH's other
yes/no task here, has 187 examples, too few for 50 dev and 200 test.

Scoring: lm-evaluation-harness's bbh_cot_zeroshot_sports_understanding at ``_bbh.LM_EVAL_COMMIT``:
``MapRegexFilter`` {"\\b(no|not plausible)\\b": "no", "\\b(yes|plausible)\\b": "yes"} with ignore_case and
group_select -1 (the last), exact match ignoring case; the zero-shot task's (group_select 0) beside it.
Agreement: POPE's yes/no rule.
"""
from __future__ import annotations

from mai.benchmarks import register
from mai.benchmarks._bbh import BBHCotScoring, VendoredBBH, map_regex
from mai.benchmarks.pope import YesNoMatcher

POST_PROMPT = "\nAnswer the question with yes or no."
# sports_understanding.yaml's regex_pattern_to_value (zeroshot and cot_zeroshot alike), in its order.
PLAUSIBLE = {r"\b(no|not plausible)\b": "no", r"\b(yes|plausible)\b": "yes"}


@register
class BBHSportsUnderstanding(BBHCotScoring, VendoredBBH):
    name = "bbh_sports_understanding"
    task = "sports_understanding"
    metric = "exact"
    post_prompt = POST_PROMPT
    answer_format = "\nRespond with only yes or no, without any explanation."
    max_new_tokens = 128
    agreement = YesNoMatcher
    scoring = ("lm-eval bbh_cot_zeroshot_sports_understanding: flexible-extract (the last yes/no or "
               "plausible/not plausible), exact match ignoring case")
    order = 29

    def read(self, response, question, select):
        return map_regex(response, PLAUSIBLE, select)
