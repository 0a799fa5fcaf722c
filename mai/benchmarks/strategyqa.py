"""StrategyQA as a BIG-bench task (Geva et al. 2021; BIG-bench, Srivastava et al. 2022): yes/no questions
whose reasoning steps are left implicit ("Would a pear sink in water?").

Data: BIG-bench's ``strategyqa`` task file (``mai.benchmarks._bigbench``, bigbench 1.0.0), 2,290 examples.
Each has ``target_scores`` {"Yes": 0/1, "No": 0/1} and a ``target`` that is the answer followed by its
explanation ("No. The density of a raw pear is ..."); the reference is the key scored 1 ("Yes" or "No").

Scoring: lm-evaluation-harness's ``bigbench_strategyqa_generate_until`` (lm_eval/tasks/bigbench/
generate_until/strategyqa.yaml at ``_bbh.LM_EVAL_COMMIT``) exact-matches a generation against that whole
explanation, which a short answer never equals, and its multiple-choice variant compares log-likelihoods,
not a generation. So this follows how lm-eval scores BIG-Bench Hard's zero-shot yes/no tasks
(causal_judgement.yaml, navigate.yaml, whose targets are Yes/No too): flexible-extract takes the first
whole-word Yes/No/yes/no of the response, then exact match ignoring case (``mai.benchmarks._bbh``).
max_new_tokens 128: that generate_until template's max_gen_toks. Agreement: POPE's yes/no rule.
"""
from __future__ import annotations

from mai.benchmarks import register
from mai.benchmarks._bbh import BBHScoring, BigBenchBenchmark, yes_no
from mai.benchmarks.pope import YesNoMatcher
from mai.data import Example

POST_PROMPT = "\nAnswer the question with yes or no."


@register
class StrategyQA(BBHScoring, BigBenchBenchmark):
    name = "strategyqa"
    bigbench_task = "strategyqa"
    metric = "exact"
    post_prompt = POST_PROMPT
    max_new_tokens = 128
    agreement = YesNoMatcher
    scoring = "first whole-word yes/no, then exact match ignoring case (lm-eval BBH zero-shot yes/no tasks)"
    order = 20

    def example(self, item: dict, idx: int) -> Example:
        answer = [k for k, v in item["target_scores"].items() if v == 1]
        return self.text_example(idx, item["input"].strip(), answer, {"explanation": item.get("target")})

    def reference_extract(self, response, question=None, meta=None) -> str:
        return yes_no(response)
