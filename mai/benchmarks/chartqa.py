"""ChartQA (Masry et al., ACL Findings 2022): questions about charts, answered with a word or a number.

lmms-eval's ``chartqa`` task at ``mai.metrics.LMMS_EVAL_COMMIT``: ``tasks/chartqa/chartqa.yaml`` (split
test, max_new_tokens 16, its own post-prompt) and ``utils.py`` (relaxed correctness, reported overall and
on the human_test / augmented splits of the dataset's ``type`` column).
"""
from __future__ import annotations

from mai.answers import Matcher, number
from mai.benchmarks import register
from mai.data import Example, HubBenchmark, jsonable
from mai.metrics import mean, relaxed_correctness

# chartqa/chartqa.yaml's own post-prompt differs from the other tasks'.
POST_PROMPT = "\nAnswer the question with a single word."
# The "type" column; chartqa/utils.py puts "human_test" in one split and any other in the other.
SPLITS = ("human_test", "augmented_test")


class RelaxedMatcher(Matcher):
    """Relaxed correctness (5% for numbers, else equal ignoring case) in BOTH directions, each answer
    taken once as the target. The benchmark's own metric is the natural "exact match" for ChartQA, but
    it is one-sided (the tolerance is relative to the target); taking it both ways makes agreement
    symmetric, so which model is called the reference does not change a route, and an agreed answer
    would be scored correct had the other model's answer been the reference. Strict: equal numbers
    (after commas and %) or equal text ignoring case."""

    summary = "relaxed correctness both ways"

    def same(self, a: str, b: str) -> bool:
        if self.rule == "strict":
            x, y = number(a), number(b)
            return x == y if x is not None and y is not None else a.lower() == b.lower()
        return relaxed_correctness(a, b) and relaxed_correctness(b, a)


def _split(row: dict) -> str:
    return "human" if (row.get("meta") or {}).get("type") == "human_test" else "augmented"


class ChartQAScoring:
    """ChartQA's prompt, scoring and agreement, shared by the hub benchmark and synth-chartqa."""

    metric = "relaxed"
    headline = "relaxed_accuracy"
    post_prompt = POST_PROMPT
    max_new_tokens = 16
    agreement = RelaxedMatcher

    def correct(self, response: str, target: str) -> bool:
        return relaxed_correctness(response, target)

    def aggregate(self, rows, extracted_answers: bool = False) -> dict:
        """``relaxed_accuracy`` and, for rows with a ChartQA ``type``, ``relaxed_human_split`` (type
        "human_test") and ``relaxed_augmented_split`` (any other type), as chartqa/utils.py splits them."""
        rows = list(rows)
        scores = self.row_scores(rows, extracted_answers)
        out = {self.headline: mean(scores)}
        # Only ChartQA's own rows carry its split names (synth-chartqa's type is "synthetic").
        if any((r.get("meta") or {}).get("type") in SPLITS for r in rows):
            splits = [_split(r) for r in rows]
            for name in ("human", "augmented"):
                part = [s for s, split in zip(scores, splits) if split == name]
                out[f"relaxed_{name}_split"] = mean(part) if part else None
        return out


@register
class ChartQA(ChartQAScoring, HubBenchmark):
    name = "chartqa"
    hub_path, split = "lmms-lab/ChartQA", "test"
    columns = ("image", "question", "answer", "type")
    order = 0

    def example(self, row: dict, idx: int) -> Example:
        # chartqa/utils.py: f"{pre_prompt}{question}{post_prompt}", question not stripped.
        return Example(id=f"chartqa-{idx}", benchmark=self.name, question=row["question"],
                       references=[str(row["answer"])], images=[row["image"]],
                       meta={"type": jsonable(row.get("type"))})
