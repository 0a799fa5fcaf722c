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
S and R baselines of Table 7). How a request becomes a cascade query, which agreement rule its task gets
and what text goes back: mai.lmms_eval_requests.

Our own record, beside lmms-eval's output: ``<out>/lmms_eval/<run_name>/`` (``out`` defaults to
"runs", ``run_name`` to the model and a time stamp) holds config.json (model args, cascade config,
agreement per task, lmms-eval version, provenance), models.json and results.jsonl: one row per request
with the raw prediction, the returned text, the route and the trace of every call (mai.cascade.Trace),
and, for our own tasks, our score of the returned text (its benchmark's ``score``).

Token counts given to lmms-eval: input and output tokens of every call of both models together; the
small model's reasoning tokens as ``reasoning_tokens``.

Resuming: a run name whose directory holds rows (a killed run) answers only the requests without one; the
others get the text and token counts their rows recorded. Several processes (``accelerate launch
--num_processes N -m lmms_eval``): each takes its rank and world size from accelerate (``_Base._processes``),
lmms-eval hands it its share of the documents, and it writes its rows into ``<run_name>-rank<I>of<N>``.
"""
from __future__ import annotations

import os
import time

from tqdm.auto import tqdm

from mai import MaiError, metrics
from mai.answers import Matcher
from mai.cli import check_sparse_layer
from mai.lmms_eval_requests import (Agreement, Item, agreement_for, base_row, by_task, check_text_only, item_key,
                                    items_of, returned_text, task_metrics, task_of)


def manifests():
    """The entry point's payload (pyproject.toml): lmms-eval registers both models from it."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id="mai", simple_class_path="mai.lmms_eval_model.MAI"),
            ModelManifest(model_id="mai-single", simple_class_path="mai.lmms_eval_model.MAISingle")]


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
# The run directory
# ---------------------------------------------------------------------------------------------------

def open_store(args: dict, run_name: str, system: str, extra: dict):
    """<out>/lmms_eval/<run_name>/ with config.json. A run name that already holds rows resumes: their
    requests are not answered again (see _Base._run); one with another configuration is refused in one line
    (mai.results.RunStore)."""
    from importlib import metadata

    from mai.results import RunStore, provenance

    config = dict(system=system, model_args={k: v for k, v in args.items() if k not in ("out", "run_name")},
                  lmms_eval=metadata.version("lmms_eval"), provenance=provenance(args["device"]),
                  scoring=dict(returned=("reasoning blocks stripped with lmms-eval's CLI default tags "
                                         f"{[list(p) for p in metrics.REASONING_TAGS]}"),
                               ours=f"{metrics.LMMS_EVAL_REPO}@{metrics.LMMS_EVAL_COMMIT} (mai/benchmarks/)"),
                  **extra)
    return RunStore(args["out"], "lmms_eval", str(run_name), config)


def is_padding(request) -> bool:
    """A copy lmms-eval 0.7.3 adds so that every process runs as many requests as the busiest one
    (lmms_eval/evaluator.py, _clone_padding_request: metadata "__padding_only__"); its answer is dropped."""
    return bool((getattr(request, "metadata", None) or {}).get("__padding_only__"))


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
    import torch
    from lmms_eval.api.instance import GenerationResult, TokenCounts
    from lmms_eval.api.model import lmms

    from mai.batch import Query, generate_batch, run_cascade_stage_major
    from mai.cascade import Cascade
    from mai.evaluate import trace_output
    from mai.generation import Request

    class _Base(lmms):
        is_simple = True
        system = ""

        def _processes(self) -> None:
            """This process's rank among the processes lmms-eval runs in, as lmms-eval 0.7.3's own models read
            it (models/simple/qwen3_vl.py: an accelerate Accelerator, its process index and num_processes as
            _rank and _world_size, a GPU each); the evaluator gives each rank every world_size-th document
            (Task.build_all_requests(rank, world_size)) and gathers through self.accelerator. Each rank
            writes its own rows, in <run_name>-rank<I>of<N>; the run name is rank 0's."""
            from accelerate import Accelerator

            self.accelerator = Accelerator()
            self._world_size = self.accelerator.num_processes
            self._rank = self.accelerator.process_index
            name = self.args["run_name"] or f"{self.system}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
            if self._world_size > 1:
                from accelerate.utils import broadcast_object_list

                name = broadcast_object_list([name], from_process=0)[0]  # one name for every rank's rows
                name = f"{name}-rank{self._rank}of{self._world_size}"
                if self.args["device"] in (None, "auto") and torch.cuda.is_available():
                    self.args["device"] = f"cuda:{self.accelerator.local_process_index}"
            self.run_name = name

        @property
        def device(self):
            """Where the evaluator puts the tensors it gathers across ranks: the (first) model's device."""
            return self.generators()[0].loaded.device

        def loglikelihood(self, requests):
            raise MaiError(f"{self.system} generates answers; tasks of output_type loglikelihood are not supported")

        def generate_until_multi_round(self, requests):
            raise MaiError(f"{self.system} answers single-turn tasks; multi-round generation is not supported")

        def _open(self, items: list[Item]) -> None:
            agreement = {t: self.agreement(items[ix[0]]).describe for t, ix in by_task(items).items()}
            self.store = open_store(self.args, self.run_name, self.system,
                                    dict(self.run_config(), tasks=sorted(agreement), agreement=agreement))
            self.store.write_json("models.json", self.models)

        def _run(self, requests, answer_chunk) -> list:
            """Every request, task by task, `batch_size` at a time: answer_chunk(items) -> [(raw, row, counts)];
            rows are written as each chunk completes; a chunk that raises is rerun one request at a time
            and a request that still fails becomes an error row and an empty answer. A request whose row
            the run directory already holds (a resumed run) is answered from it, not again; lmms-eval's
            padding copies get an empty answer and no row."""
            out: list = [GenerationResult(text="", token_counts=TokenCounts())] * len(requests)
            asked = [i for i, r in enumerate(requests) if not is_padding(r)]
            items = items_of([requests[i] for i in asked], self.task_dict, self.args["simple_tokens"])
            check_text_only(items, self.generators())
            if self.store is None:
                self._open(items)
            rows = {row["key"]: row for row in self.store.rows()}
            todo = []
            for i, item in zip(asked, items):
                row = rows.get(item_key(item, self.system))
                if row is None:
                    todo.append((i, item))
                else:
                    out[i] = GenerationResult(text=row["returned"], token_counts=TokenCounts(**row.get("token_counts", {})))
            by_index = dict(todo)
            groups = [c for ix in by_task([item for _, item in todo]).values()
                      for c in chunks([todo[k][0] for k in ix], self.args["batch_size"])]
            for chunk in tqdm(groups, desc=self.system, unit="batch", disable=self.rank != 0):
                for i, (returned, row, counts) in self._answer_chunk(chunk, by_index, answer_chunk):
                    row["token_counts"] = counts.to_dict()  # what lmms-eval got, for a resumed run
                    self.store.append(row)
                    out[i] = GenerationResult(text=returned, token_counts=counts)
            return out

        def _answer_chunk(self, chunk: list[int], items: dict, answer_chunk) -> list:
            try:
                return list(zip(chunk, answer_chunk([items[i] for i in chunk])))
            except Exception:  # find the request that fails, keep the others
                done = []
                for i in chunk:
                    try:
                        done.append((i, answer_chunk([items[i]])[0]))
                    except Exception as err:
                        done.append((i, ("", _error_row(items[i], self.system, err), TokenCounts())))
                return done

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
            self._processes()
            self.small = load_generator(self.args["small"], self.args)
            self.large = load_generator(self.args["large"], self.args)
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
            self._processes()
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
