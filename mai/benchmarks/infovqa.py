"""InfographicVQA (Mathew et al., WACV 2022): questions about infographics, scored by ANLS.

lmms-eval's ``infovqa_val`` task at ``mai.metrics.LMMS_EVAL_COMMIT``: ``tasks/infovqa/
_default_template_infovqa_yaml`` + ``infovqa_val.yaml`` (the DocVQA dataset's InfographicVQA config,
split validation, max_new_tokens 32, the short-answer post-prompt), ``utils.py`` and the ``anls`` metric
of ``api/metrics.py`` (mean over questions).
"""
from __future__ import annotations

from mai.answers import AnlsMatcher
from mai.benchmarks import register
from mai.data import SHORT_ANSWER, Example, HubBenchmark, as_list, jsonable
from mai.metrics import anls, lmms_eval_response


@register
class InfoVQA(HubBenchmark):
    name = "infovqa"
    metric = "anls"
    headline = "anls"
    post_prompt = SHORT_ANSWER
    max_new_tokens = 32
    hub_path, hub_config, split = "lmms-lab/DocVQA", "InfographicVQA", "validation"
    columns = ("questionId", "question", "answers", "image")
    # ANLS >= 0.5 between the two answers, as the paper names ANLS for InfoVQA (also the stated default
    # of any ANLS task); strict: equal text after lowercasing and collapsing whitespace.
    agreement = AnlsMatcher
    order = 2

    def example(self, row: dict, idx: int) -> Example:
        # infovqa/utils.py: f"{pre_prompt}{question}{post_prompt}"; doc_to_target "answers" (a list).
        answers = row["answers"]
        refs = [str(a) for a in answers] if isinstance(answers, (list, tuple)) else [str(answers)]
        meta = {"question_id": jsonable(row.get("questionId"))}
        if "answer_type" in row:
            meta["answer_type"] = jsonable(row["answer_type"])
        return Example(id=f"infovqa-{row['questionId']}", benchmark=self.name, question=row["question"],
                       references=refs, images=[row["image"]], meta=meta)

    def score(self, prediction, references, question=None, meta=None) -> float:
        """ANLS takes its own best over the references."""
        return anls(lmms_eval_response(prediction), as_list(references))
