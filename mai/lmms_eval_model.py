"""MAI as an lmms-eval model: `lmms-eval --model mai` runs the cascade on any lmms-eval generate_until task,
with images or text only.

    lmms-eval --model mai --tasks chartqa --model_args small=Qwen/Qwen3-VL-2B-Instruct,\
large=Qwen/Qwen3-VL-8B-Instruct,verify=answer,transfer=sparse,sparse_layer=12,delta=0.8
    lmms-eval --model mai-single --tasks chartqa --model_args model=Qwen/Qwen3-VL-8B-Instruct,mode=think

Registered without editing lmms-eval: pyproject.toml names ``manifests`` under the entry point group
``lmms_eval.models``, which lmms-eval 0.7.3 reads (lmms_eval/models/registry_v2.py,
``load_entrypoint_manifests``; ``@register_model`` alone is not seen by ``simple_evaluate`` or the CLI).
``pip install --no-deps -e .`` (done by ``bash scripts/setup.sh --lmms``) makes it visible. lmms-eval is
imported only when lmms-eval asks for a class (module ``__getattr__``), so ``mai`` imports without it.

What lmms-eval scores is MAI's final answer: the large model's Simple answer after mutual verification,
the small model's reasoning, or reasoning transfer (mai.cascade), scored by the task's own
``process_results`` and aggregation. ``mai-single`` is one model with the Simple or Think prompt (the
S and R baselines of Table 7).

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

Our own record, beside lmms-eval's output: ``<out>/lmms_eval/<run_name>/`` (``out`` defaults to
"runs", ``run_name`` to the model and a time stamp) holds config.json (model args, cascade config,
agreement per task, lmms-eval version, provenance), models.json and results.jsonl: one row per request
with the raw prediction, the returned text, the route and the trace of every call (mai.cascade.Trace),
and, for our own tasks, our score of the returned text (its benchmark's ``score``).

Token counts given to lmms-eval: input and output tokens of every call of both models together; the
small model's reasoning tokens as ``reasoning_tokens``.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from tqdm.auto import tqdm

from mai import MaiError, metrics
from mai.answers import AGREE_RULES, AGREEMENTS, Matcher, default_agreement

# lmms-eval task -> our benchmark (mai.benchmarks.BENCHMARKS), by the task name lmms-eval 0.7.3 gives it ...
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


def manifests():
    """The entry point's payload (pyproject.toml): lmms-eval registers both models from it."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id="mai", simple_class_path="mai.lmms_eval_model.MAI"),
            ModelManifest(model_id="mai-single", simple_class_path="mai.lmms_eval_model.MAISingle")]


# ---------------------------------------------------------------------------------------------------
# Pure parts (no lmms-eval needed): task identity, prompt split, agreement rule, returned text
# ---------------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------------
# Model arguments
# ---------------------------------------------------------------------------------------------------

COMMON_ARGS = dict(device="auto", dtype="auto", attn="sdpa", seed=0, think_tokens=1024, simple_tokens=None,
                   min_pixels=None, max_pixels=None, out="runs", run_name=None, batch_size=1, max_batch_size=None)
MAI_ARGS = dict(small="Qwen/Qwen3-VL-2B-Instruct", large="Qwen/Qwen3-VL-8B-Instruct", verify="answer",
                transfer="full", sparse_layer=None, delta=0.8, heads="mean", sink="keep", query="answer",
                agree="paper", answer_tokens=16, **COMMON_ARGS)
SINGLE_ARGS = dict(model="Qwen/Qwen3-VL-8B-Instruct", mode="simple", **COMMON_ARGS)


def parse_args(model_id: str, given: dict, defaults: dict) -> dict:
    """The model args with defaults filled in; an unknown one stops with one line. lmms-eval adds
    batch_size, max_batch_size and device from its own flags (None when not given)."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise MaiError(f"unknown model_args for {model_id}: {', '.join(unknown)}; known: {', '.join(defaults)}")
    args = {**defaults, **{k: v for k, v in given.items() if v is not None}}
    args["batch_size"] = int(args["batch_size"]) if str(args["batch_size"]).isdigit() else 1
    if args["batch_size"] < 1:
        raise MaiError("batch_size must be at least 1")
    return args


def cascade_config(args: dict):
    """The CascadeConfig of `mai`'s model args (agree: paper | strict reach the cascade; one agreement for
    every task is applied per task by agreement_for, under the paper rule)."""
    from mai.attention import SparseOptions
    from mai.cascade import CascadeConfig

    if args["verify"] not in ("answer", "reasoning"):
        raise MaiError(f"verify must be answer or reasoning, got {args['verify']!r}")
    sparse = None
    if args["transfer"] == "sparse":
        if args["sparse_layer"] is None:
            raise MaiError("transfer=sparse needs sparse_layer=L (the paper uses L10-L14 of the 2B)")
        if not 0 < float(args["delta"]) <= 1:
            raise MaiError(f"delta must lie in (0, 1], got {args['delta']}")
        sparse = SparseOptions(layer=int(args["sparse_layer"]), delta=float(args["delta"]), heads=args["heads"],
                               sink=args["sink"])
    try:
        return CascadeConfig(think_tokens=int(args["think_tokens"]), answer_tokens=int(args["answer_tokens"]),
                             verify=args["verify"], transfer=args["transfer"], sparse=sparse, query=args["query"],
                             agree="strict" if args["agree"] == "strict" else "paper")
    except ValueError as err:
        raise MaiError(str(err)) from None


# ---------------------------------------------------------------------------------------------------
# Requests
# ---------------------------------------------------------------------------------------------------

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


def base_row(item: Item, system: str, raw: str, returned: str) -> dict:
    """Our row of one request: what was asked, the raw output and what lmms-eval got; for our own tasks,
    our score of the returned text, its references and the meta its aggregate reads."""
    from mai.results import row_key

    task = task_of(item.doc_to_visual)
    target = task.doc_to_target(item.doc) if task is not None else None
    row = dict(key=row_key(item.task, item.split, item.doc_id, system), example_id=f"{item.task}/{item.doc_id}",
               benchmark=item.task, system=system, doc_id=item.doc_id, split=item.split, question=item.context,
               target=target if isinstance(target, (str, int, float, list)) else str(target),
               prediction=raw, returned=returned, error=None)
    ours = our_score(item.benchmark, returned, item.doc, item.doc_id, target) if item.benchmark else None
    if ours is not None:
        row["score"], row["references"], row["meta"] = ours
        row["scored_as"] = item.benchmark
    return row


# ---------------------------------------------------------------------------------------------------
# The run directory
# ---------------------------------------------------------------------------------------------------

def open_store(args: dict, system: str, extra: dict):
    """<out>/lmms_eval/<run_name>/ with config.json; a run name that already holds rows is refused (lmms-eval
    needs every answer again, so rows are never mixed from two runs)."""
    from importlib import metadata

    from mai.results import RunStore, provenance

    run_name = args["run_name"] or f"{system}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    config = dict(system=system, model_args={k: v for k, v in args.items() if k not in ("out", "run_name")},
                  lmms_eval=metadata.version("lmms_eval"), provenance=provenance(args["device"]),
                  scoring=dict(returned=("reasoning blocks stripped with lmms-eval's CLI default tags "
                                         f"{[list(p) for p in metrics.REASONING_TAGS]}"),
                               ours=f"{metrics.LMMS_EVAL_REPO}@{metrics.LMMS_EVAL_COMMIT} (mai/benchmarks/)"),
                  **extra)
    store = RunStore(args["out"], "lmms_eval", str(run_name), config)
    if store.rows():
        store.close()
        raise MaiError(f"{store.dir} already holds rows; pass another run_name (lmms-eval asks for every answer "
                       "again, and one run directory holds one run)")
    return store


def load_generator(spec: str, args: dict):
    from mai.generation import HFGenerator
    from mai.models import load_model

    pixels = {k: int(args[k]) for k in ("min_pixels", "max_pixels") if args[k] is not None}
    loaded = load_model(spec, device=args["device"] or "auto", dtype=args["dtype"], attn_implementation=args["attn"],
                        seed=int(args["seed"]), **pixels)
    return HFGenerator(loaded, int(args["seed"]), max_batch=args["batch_size"])


def chunks(indices: list[int], size: int):
    for start in range(0, len(indices), size):
        yield indices[start:start + size]


# ---------------------------------------------------------------------------------------------------
# The two lmms-eval models, built when lmms-eval asks for them
# ---------------------------------------------------------------------------------------------------

def _error_row(item: Item, system: str, err: BaseException) -> dict:
    row = base_row(item, system, "", "")
    row.pop("score", None)
    row["error"] = f"{type(err).__name__}: {err}".strip()
    return row


def _build_classes() -> dict:
    from lmms_eval.api.instance import GenerationResult, TokenCounts
    from lmms_eval.api.model import lmms

    from mai.batch import Query, generate_batch, run_cascade_stage_major
    from mai.cascade import Cascade
    from mai.evaluate import trace_output
    from mai.generation import Request

    class _Base(lmms):
        is_simple = True
        system = ""

        def loglikelihood(self, requests):
            raise MaiError(f"{self.system} generates answers; tasks of output_type loglikelihood are not supported")

        def generate_until_multi_round(self, requests):
            raise MaiError(f"{self.system} answers single-turn tasks; multi-round generation is not supported")

        def _run(self, requests, answer_chunk) -> list:
            """Every request, task by task, `batch_size` at a time: answer_chunk(items) -> [(raw, row, counts)];
            rows are written as each chunk completes; a chunk that raises is rerun one request at a time
            and a request that still fails becomes an error row and an empty answer."""
            items = items_of(requests, self.task_dict, self.args["simple_tokens"])
            check_text_only(items, self.generators())
            if self.store is None:
                agreement = {t: self.agreement(items[ix[0]]).describe for t, ix in by_task(items).items()}
                self.store = open_store(self.args, self.system, dict(self.run_config(), tasks=sorted(agreement),
                                                                       agreement=agreement))
                self.store.write_json("models.json", self.models)
            out: list = [None] * len(items)
            groups = [c for ix in by_task(items).values() for c in chunks(ix, self.args["batch_size"])]
            for chunk in tqdm(groups, desc=self.system, unit="batch"):
                try:
                    done = list(zip(chunk, answer_chunk([items[i] for i in chunk])))
                except Exception:  # find the request that fails, keep the others
                    done = []
                    for i in chunk:
                        try:
                            done.append((i, answer_chunk([items[i]])[0]))
                        except Exception as err:
                            done.append((i, ("", _error_row(items[i], self.system, err), TokenCounts())))
                for i, (returned, row, counts) in done:
                    self.store.append(row)
                    out[i] = GenerationResult(text=returned, token_counts=counts)
            return out

        def agreement(self, item: Item) -> Agreement:
            raise NotImplementedError

        def generators(self) -> list:
            raise NotImplementedError

    class MAI(_Base):
        """The MAI cascade (mai.cascade) as an lmms-eval simple model; see the module doc."""

        system = "mai"

        def __init__(self, **kwargs):
            super().__init__()
            self.args = parse_args("mai", kwargs, MAI_ARGS)
            self.config = cascade_config(self.args)
            agreement_for(None, [], self.args["agree"])  # a wrong agree stops before any model loads
            self.small = load_generator(self.args["small"], self.args)
            self.large = load_generator(self.args["large"], self.args)
            from mai.cli import check_sparse_layer

            check_sparse_layer(self.config, self.small.loaded)
            self.cascade = Cascade(self.small, self.large, self.config, self.small.loaded.label,
                                   self.large.loaded.label)
            self.models = {g.loaded.label: g.loaded.describe() for g in (self.small, self.large)}
            self.store = None

        def run_config(self) -> dict:
            return dict(cascade=self.config.to_dict())

        def generators(self) -> list:
            return [self.small, self.large]

        def agreement(self, item: Item) -> Agreement:
            return agreement_for(item.benchmark, task_metrics(task_of(item.doc_to_visual)), self.args["agree"])

        def generate_until(self, requests) -> list:
            return self._run(requests, self._answer)

        def _answer(self, items: list[Item]) -> list:
            agreement = self.agreement(items[0])  # a chunk holds one task
            # question + post_prompt is the context: the Simple prompt as lmms-eval built it
            queries = [Query(it.question, it.images(), agreement.matcher, it.post_prompt, it.max_new_tokens)
                       for it in items]
            out = []
            for item, trace in zip(items, run_cascade_stage_major(self.cascade, queries)):
                returned = returned_text(trace.prediction, item.until)
                row = base_row(item, self.system, trace.prediction, returned)
                row.update({k: v for k, v in trace_output(trace).items() if k != "text"}, agree_rule=agreement.describe)
                totals = trace.totals()
                think = [c for c in trace.calls if c.mode == "think"]
                counts = TokenCounts(input_tokens=totals["small_input_tokens"] + totals["large_input_tokens"],
                                     output_tokens=totals["small_output_tokens"] + totals["large_output_tokens"],
                                     reasoning_tokens=think[0].result["output_tokens"] if think else None)
                out.append((returned, row, counts))
            return out

    class MAISingle(_Base):
        """One model with the Simple or Think prompt (Table 7's S and R rows) as an lmms-eval simple model."""

        system = "mai-single"

        def __init__(self, **kwargs):
            super().__init__()
            self.args = parse_args("mai-single", kwargs, SINGLE_ARGS)
            if self.args["mode"] not in ("simple", "think"):
                raise MaiError(f"mode must be simple or think, got {self.args['mode']!r}")
            self.generator = load_generator(self.args["model"], self.args)
            self.models = {self.generator.loaded.label: self.generator.loaded.describe()}
            self.store = None

        def run_config(self) -> dict:
            return dict(mode=self.args["mode"])

        def generators(self) -> list:
            return [self.generator]

        def agreement(self, item: Item) -> Agreement:
            return Agreement(Matcher, "none (one model)")

        def generate_until(self, requests) -> list:
            return self._run(requests, self._answer)

        def _answer(self, items: list[Item]) -> list:
            mode = self.args["mode"]
            requests = [Request(question=it.question, images=it.images(), mode=mode, post_prompt=it.post_prompt,
                                max_new_tokens=it.max_new_tokens if mode == "simple" else int(self.args["think_tokens"]))
                        for it in items]
            out = []
            for item, result in zip(items, generate_batch(self.generator, requests)):
                returned = returned_text(result.text, item.until)
                row = base_row(item, self.system, result.text, returned)
                summary = result.summary()
                summary.pop("text")
                row.update(summary, model=self.generator.loaded.label, mode=mode)
                counts = TokenCounts(input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                                     reasoning_tokens=result.output_tokens if mode == "think" else None)
                out.append((returned, row, counts))
            return out

    for cls in (MAI, MAISingle):
        cls.__qualname__ = cls.__name__
    return {"MAI": MAI, "MAISingle": MAISingle}


def __getattr__(name: str):
    """MAI and MAISingle subclass lmms-eval's lmms: they are built on first access, so that importing
    this module (and mai) needs no lmms-eval."""
    if name in ("MAI", "MAISingle"):
        classes = _build_classes()
        globals().update(classes)
        return classes[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
