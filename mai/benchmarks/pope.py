"""POPE (Li et al., EMNLP 2023): object hallucination as yes/no questions on COCO images.

lmms-eval's ``pope`` task at ``mai.metrics.LMMS_EVAL_COMMIT``: ``tasks/pope/pope.yaml`` (split test,
max_new_tokens 128, the short-answer post-prompt) and ``utils.py`` (accuracy, precision, recall, F1 and
the ground truth's yes-ratio).
"""
from __future__ import annotations

from typing import Callable

from mai.answers import Matcher, map_yes_no
from mai.benchmarks import register
from mai.data import SHORT_ANSWER, Example, HubBenchmark, as_list, cast_image_undecoded, jsonable
from mai.metrics import lmms_eval_response

class YesNoMatcher(Matcher):
    """Both answers are "yes", or both "no" (a leading yes/no word is the answer), under either rule."""

    summary = "yes/no equality"
    yes_no = True

    def reduce(self, answer: str) -> str:
        return map_yes_no(answer)

    def same(self, a: str, b: str) -> bool:
        return a.lower() in ("yes", "no") and a.lower() == b.lower()


def pope_metrics(predictions: list[str], ground_truths: list[str]) -> dict:
    """POPE accuracy, precision, recall, F1 and yes-ratio, as lmms-eval aggregates them.

    Each prediction and ground truth is ``.lower().strip()``-ed; nothing else is mapped to
    yes/no.  A prediction that is neither "yes" nor "no" is wrong for accuracy, and is
    neither a false positive nor a false negative.  Recall's FN counts only a ground-truth
    "yes" answered exactly "no".  Precision, recall and F1 are 0 when their denominator is
    0.  yes_ratio is the share of "yes" in the ground truth, not in the predictions.  A
    ground truth other than yes/no raises ValueError (lmms-eval asserts).  Empty input
    gives all zeros (lmms-eval would divide by zero).
    """
    if len(predictions) != len(ground_truths):
        raise ValueError(f"pope_metrics: {len(predictions)} predictions but {len(ground_truths)} ground truths")
    tp = fp = fn = correct = gt_yes = gt_no = 0
    for raw_pred, raw_gt in zip(predictions, ground_truths):
        pred = raw_pred.lower().strip()
        gt = raw_gt.lower().strip()
        if gt not in ("yes", "no"):
            raise ValueError(f"POPE ground truth must be 'yes' or 'no', got {raw_gt!r}")
        correct += pred == gt
        if gt == "yes":
            gt_yes += 1
            if pred == "yes":
                tp += 1
            elif pred == "no":
                fn += 1
        else:
            gt_no += 1
            if pred == "yes":
                fp += 1
    n = len(predictions)
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {
        "accuracy": correct / n if n else 0.0,
        "precision": float(precision),
        "recall": float(recall),
        "f1": float(f1),
        "yes_ratio": gt_yes / (gt_yes + gt_no) if gt_yes + gt_no > 0 else 0.0,
    }


class PopeScoring:
    """POPE's scoring and agreement, shared by the hub benchmark and synth-pope."""

    metric = "pope"
    headline = "accuracy"
    post_prompt = SHORT_ANSWER
    max_new_tokens = 128
    agreement = YesNoMatcher

    def correct(self, response: str, target: str) -> bool:
        return response.lower().strip() == target.lower().strip()  # pope/utils.py

    def aggregate(self, rows, extracted_answers: bool = False) -> dict:
        """The five numbers of ``pope_metrics`` (the first reference of each row is its ground truth)."""
        rows = list(rows)
        text = self.extract if extracted_answers else (lambda t: t)
        return pope_metrics([lmms_eval_response(text(r["prediction"])) for r in rows],
                            [as_list(r["references"])[0] for r in rows])


def _id_key(ds) -> Callable[[dict, int], str]:
    """``question_id`` when it is unique in the split, else category + question_id, else the row."""
    qids = [str(q) for q in ds.data.column("question_id").to_pylist()]
    if len(set(qids)) == len(qids):
        return lambda row, idx: str(row["question_id"])
    cats = [str(c) for c in ds.data.column("category").to_pylist()]
    if len(set(zip(cats, qids))) == len(qids):
        return lambda row, idx: f"{row['category']}-{row['question_id']}"
    return lambda row, idx: str(idx)


@register
class Pope(PopeScoring, HubBenchmark):
    name = "pope"
    hub_path, split = "lmms-lab/POPE", "test"
    columns = ("question_id", "question", "answer", "image", "category")
    order = 1

    def examples(self, ds, indices):
        id_key = _id_key(ds)
        rows = cast_image_undecoded(ds.select(indices))
        return [self.example(row, idx, id_key(row, idx)) for idx, row in zip(indices, rows)]

    def example(self, row: dict, idx: int, key: str | None = None) -> Example:
        # pope/utils.py: question = doc["question"].strip(); f"{pre_prompt}{question}{post_prompt}".
        return Example(
            id=f"pope-{idx if key is None else key}",
            benchmark=self.name,
            question=row["question"].strip(),
            references=[str(row["answer"]).strip().lower()],
            images=[row["image"]],
            meta={
                "category": jsonable(row.get("category")),
                "question_id": jsonable(row.get("question_id")),
                "image_source": jsonable(row.get("image_source")),
            },
        )
