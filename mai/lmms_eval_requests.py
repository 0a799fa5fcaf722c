"""How an lmms-eval request becomes a cascade query, and how its answer goes back (the `mai` and
`mai-single` lmms-eval models, mai.lmms_eval_model, run them): the task a request came from, the Simple
prompt split into question and post-prompt, the agreement rule of its task, the text handed back, our
score of it and our row. Nothing here imports lmms-eval.

How requests become cascade queries. A simple-style model receives every request of a run in one
``generate_until`` call, each as (context, gen_kwargs, doc_to_visual, doc_id, task, split)
(lmms_eval/api/task.py ``construct_requests``). The images are
``doc_to_visual(self.task_dict[task][split][doc_id])``; a text-only task (no doc_to_visual) gives none, and its
questions are asked without images, of any pair (text-only or vision-language). Images for a text-only
model stop the run with one line before any request runs (``check_text_only``): dropped, they would leave
lmms-eval scoring answers as if the model had seen them. The context is the task's
``doc_to_text``: pre-prompt, question, post-prompt; it is the Simple prompt as it stands. The Think
prompt leaves the post-prompt out (mai.prompts says why): ``doc_to_visual`` is the task's bound method,
so the task's own ``lmms_eval_specific_kwargs["post_prompt"]`` is read off it and cut from the end of the
context (a context that does not end with it is kept whole). ``max_new_tokens`` is the task's (capped by
``simple_tokens``), and its ``until`` strings cut the returned text as lmms-eval's Qwen3-VL wrapper does
(it drops the default "\\n\\n"). The cascade runs stage by stage (mai.batch.run_cascade_stage_major)
over ``batch_size`` requests at a time, one task after another.

Agreement (mutual verification). A task that is one of ours (chartqa, pope, infovqa_val, realworldqa,
mmbench_en_dev(_static), by task name or by the lmms-eval doc_to_text it uses) gets its benchmark's rule
(``Benchmark.agreement`` in mai/benchmarks/, under ``agree=paper`` or ``strict``). Any other task gets the
stated default, ``mai.answers.default_agreement``: ANLS >= 0.5 between the two answers when the task's
metric is ANLS, else normalised exact match (lowercase, number words as digits, punctuation removed,
whitespace collapsed), never through a question's options. ``agree=exact`` or ``agree=anls``
(``mai.answers.AGREEMENTS``), or ``agree=<benchmark>`` (chartqa, pope, ...: that benchmark's rule), imposes
one rule on every task. The rule each task used, with its ``summary``, is in config.json ("agreement") and
in every row ("agree_rule").

Reasoning tags. The lmms-eval CLI strips <think>/<analysis> blocks before scoring (its default
--reasoning_tags); ``simple_evaluate`` called without ``cli_args`` does not (lmms_eval/evaluator.py). The
text returned here is already stripped with the CLI's default tag pairs (mai.metrics.REASONING_TAGS), so
both entry points score the same text; our rows keep the raw output as "prediction".
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

from mai import MaiError, metrics
from mai.answers import AGREE_RULES, AGREEMENTS, Matcher, default_agreement
from mai.results import row_key

TASK_BENCHMARKS = {"chartqa": "chartqa", "pope": "pope", "infovqa_val": "infovqa", "realworldqa": "realworldqa",
                   "mmbench_en_dev": "mmbench", "mmbench_en_dev_static": "mmbench"}
# ... or by the doc_to_text it builds prompts with (lmms_eval/tasks/<folder>/<file>.py::<function>), which a
# local task that `include:`s lmms-eval's own yaml under another name keeps.
DOC_TO_TEXT_BENCHMARKS = {
    ("chartqa", "utils", "chartqa_doc_to_text"): "chartqa",
    ("pope", "utils", "pope_doc_to_text"): "pope",
    ("infovqa", "utils", "infovqa_doc_to_text"): "infovqa",
    ("realworldqa", "utils", "realworldqa_doc_to_text"): "realworldqa",
    ("mmbench", "en_utils", "mmbench_doc_to_text"): "mmbench",
}



def task_of(doc_to_visual) -> Any:
    """The lmms-eval Task a request came from: its doc_to_visual is the task's bound method."""
    return getattr(doc_to_visual, "__self__", None)


def benchmark_of(task_name: str, task) -> str | None:
    """Our benchmark for an lmms-eval task, or None when we have no rule of our own for it."""
    if task_name in TASK_BENCHMARKS:
        return TASK_BENCHMARKS[task_name]
    fn = getattr(getattr(task, "config", None), "doc_to_text", None)
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    path = code.co_filename.replace(os.sep, "/").split("/")
    key = (path[-2] if len(path) > 1 else "", path[-1].removesuffix(".py"), fn.__name__)
    return DOC_TO_TEXT_BENCHMARKS.get(key)


def task_metrics(task) -> list[str]:
    """The metric names of the task's metric_list."""
    return [m.get("metric") for m in (getattr(getattr(task, "config", None), "metric_list", None) or [])
            if isinstance(m, dict)]


def post_prompt_of(task) -> str:
    """The task's post-prompt as its doc_to_text appends it (lmms_eval_specific_kwargs, resolved for this
    model by the task: its "default" entry), or ""."""
    kwargs = getattr(task, "lmms_eval_specific_kwargs", None)
    post = kwargs.get("post_prompt") if isinstance(kwargs, dict) else None
    return post if isinstance(post, str) else ""


def split_context(context: str, post_prompt: str) -> tuple[str, str]:
    """(question, post_prompt) with question + post_prompt == context: the post-prompt cut from the end,
    newlines before it going with it (MMBench's doc_to_text puts "\\n" between); (context, "") when the
    context does not end with it."""
    if not post_prompt or not context.endswith(post_prompt):
        return context, ""
    question = context[:len(context) - len(post_prompt)].rstrip("\n")
    return question, context[len(question):]


def agree_values() -> tuple[str, ...]:
    """What model_args agree= takes: a rule for our benchmarks' own agreement (paper | strict), or one
    agreement for every task: a default's (exact | anls) or a benchmark's (its name)."""
    from mai.benchmarks import BENCHMARKS

    return (*AGREE_RULES, *AGREEMENTS, *BENCHMARKS)


@dataclasses.dataclass(frozen=True)
class Agreement:
    """How mutual verification compares answers on one task: the Matcher class (a benchmark's, or the stated
    default, which reads no options) and a description for the results."""

    matcher: type[Matcher]
    describe: str


def agreement_for(benchmark: str | None, metric_names: list[str], agree: str) -> Agreement:
    """The agreement rule for a task (see the module doc)."""
    from mai.benchmarks import BENCHMARKS, get_benchmark

    if agree not in agree_values():
        raise MaiError(f"agree must be one of {', '.join(agree_values())}, got {agree!r}")
    if agree in AGREEMENTS or agree in BENCHMARKS:
        rule = default_agreement(override=agree) if agree in AGREEMENTS else get_benchmark(agree).agreement
        return Agreement(rule, f"{rule.summary} for every task (model_args agree={agree})")
    if benchmark is not None:
        rule = get_benchmark(benchmark).agreement
        return Agreement(rule, f"{benchmark} ({agree}): {rule.summary}")
    # The task's metric is ANLS when any metric of its metric_list is.
    rule = default_agreement(" ".join(str(m) for m in metric_names))
    return Agreement(rule, f"default: {rule.summary}")


def returned_text(raw: str, until: list[str] | None = None) -> str:
    """The text handed to lmms-eval: cut at the first of the task's stop strings (lmms-eval's Qwen3-VL wrapper
    does, dropping the default "\\n\\n"), then reasoning blocks stripped with the lmms-eval CLI's default tags
    (``--reasoning_tags``), so simple_evaluate scores what the CLI scores."""
    text = raw
    for term in until or []:
        if term and term != "\n\n":
            text = text.split(term)[0]
    return metrics.strip_reasoning_tags(text)


def stop_strings(gen_kwargs: dict) -> list[str]:
    until = (gen_kwargs or {}).get("until") or []
    return [until] if isinstance(until, str) else list(until)


def our_score(benchmark: str, text: str, doc: dict, doc_id: int, target) -> tuple[float, list[str], dict] | None:
    """Our scoring of a returned text on one of our tasks (its benchmark's ``score``): (score, references,
    meta), the meta its ``aggregate`` reads (ChartQA's type, MMBench's index and option texts), taken from
    the Example our loader makes of the doc (an lmms-eval doc is a row of the hub schema); None for a doc
    that lacks a column of that schema, which lmms-eval still scores."""
    from mai.benchmarks import get_benchmark

    bench = get_benchmark(benchmark)
    if bench.missing_columns(doc):
        return None
    example = bench.example(doc, doc_id)
    references = [str(t) for t in target] if isinstance(target, (list, tuple)) else [str(target)]
    return bench.score(text, references, example.question, example.meta), references, example.meta


@dataclasses.dataclass
class Item:
    """One lmms-eval request, as the cascade and our rows see it."""

    task: str
    split: str
    doc_id: int
    doc: Any
    doc_to_visual: Any
    context: str
    question: str
    post_prompt: str
    max_new_tokens: int
    until: list[str]
    benchmark: str | None

    def visuals(self) -> list:
        """What the task's doc_to_visual gives: [] for a text-only task (lmms-eval 0.7.3's Task.doc_to_visual
        returns the config's None when the task sets none, lmms_eval/api/task.py)."""
        return self.doc_to_visual(self.doc) or []

    def images(self) -> list:
        """The task's images, RGB ([]: a text-only question); a task with video or audio stops with one line."""
        from PIL import Image

        out = []
        for v in self.visuals():
            if not isinstance(v, Image.Image):
                raise MaiError(f"{self.task}: MAI takes images; doc {self.doc_id} gives a {type(v).__name__}")
            out.append(v.convert("RGB"))
        return out


def items_of(requests, task_dict: dict, simple_cap: int | None) -> list[Item]:
    """The requests of a generate_until call as Items (lmms-eval 0.7.3's argument tuple)."""
    out = []
    for req in requests:
        context, gen_kwargs, doc_to_visual, doc_id, task_name, split = req.args
        task = task_of(doc_to_visual)
        context = context.replace("<image>", "")  # as lmms-eval's Qwen3-VL wrapper does
        question, post = split_context(context, post_prompt_of(task))
        max_new = int((gen_kwargs or {}).get("max_new_tokens") or 128)  # its wrapper's default, 128
        if simple_cap:
            max_new = min(max_new, int(simple_cap))
        out.append(Item(task_name, split, doc_id, task_dict[task_name][split][doc_id], doc_to_visual, context,
                        question, post, max_new, stop_strings(gen_kwargs), benchmark_of(task_name, task)))
    return out


def check_text_only(items: list[Item], generators: list) -> None:
    """A task with images for a text-only model stops the run with one line, before any request runs: the
    model could not see them, and lmms-eval would score its answers as if it had."""
    blind = [g.loaded.label for g in generators if not g.loaded.family.multimodal]
    if not blind:
        return
    for item in items:
        if item.visuals():
            raise MaiError(f"{item.task}: doc {item.doc_id} has images, but {', '.join(blind)} "
                           f"{'is' if len(blind) == 1 else 'are'} text-only; give a text-only task "
                           "(no doc_to_visual) or a vision-language pair")


def by_task(items: list[Item]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        groups.setdefault(item.task, []).append(i)
    return groups


def item_key(item: Item, system: str) -> str:
    """The key of a request's row: a resumed run answers only the requests without one."""
    return row_key(item.task, item.split, item.doc_id, system)


def base_row(item: Item, system: str, raw: str, returned: str) -> dict:
    """Our row of one request: what was asked, the raw output and what lmms-eval got; for our own tasks,
    our score of the returned text, its references and the meta its aggregate reads."""
    task = task_of(item.doc_to_visual)
    target = task.doc_to_target(item.doc) if task is not None else None
    row = dict(key=item_key(item, system), example_id=f"{item.task}/{item.doc_id}",
               benchmark=item.task, system=system, doc_id=item.doc_id, split=item.split, question=item.context,
               target=target if isinstance(target, (str, int, float, list)) else str(target),
               prediction=raw, returned=returned, error=None)
    ours = our_score(item.benchmark, returned, item.doc, item.doc_id, target) if item.benchmark else None
    if ours is not None:
        row["score"], row["references"], row["meta"] = ours
        row["scored_as"] = item.benchmark
    return row
