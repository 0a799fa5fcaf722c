"""BIG-Bench Hard's date_understanding (Suzgun et al. 2022), the 250 examples that ship with the repository
(mai/assets/bbh, sha256-checked; 50 dev, 200 test: ``mai.benchmarks._vendored``): "Yesterday was April 30,
2021. What is the date today in MM/DD/YYYY?" with options "(A) ..." in the input; the target is "(X)".

Scoring: lm-evaluation-harness's bbh_cot_zeroshot_date_understanding at ``_bbh.LM_EVAL_COMMIT``:
``MultiChoiceRegexFilter`` with group_select -1 (the last "(X)", else the last option text, else the last
letter after a colon), exact match ignoring case; the zero-shot task's reading (the first) beside it. Prompt
and agreement are those of the BIG-bench archive's date_understanding benchmark.
"""
from __future__ import annotations

from mai.benchmarks import register
from mai.benchmarks._bbh import BBHCotScoring, VendoredBBH, multiple_choice
from mai.benchmarks.date_understanding import POST_PROMPT, DateMatcher


@register
class BBHDateUnderstanding(BBHCotScoring, VendoredBBH):
    name = "bbh_date_understanding"
    task = "date_understanding"
    metric = "option"
    post_prompt = POST_PROMPT
    answer_format = ("\nRespond with only the letter of the correct option in parentheses, e.g. (A), without any "
                     "explanation.")
    max_new_tokens = 256
    agreement = DateMatcher
    scoring = ("lm-eval bbh_cot_zeroshot_date_understanding: flexible-extract (the last option named), exact "
               "match ignoring case")
    order = 31

    def read(self, response, question, select):
        return multiple_choice(response, question or "", select)
