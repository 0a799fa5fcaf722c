"""MAI as an lmms-eval model: `lmms-eval --model mai` runs the cascade on any lmms-eval generate_until task,
with images or text only.

    lmms-eval --model mai --tasks chartqa --model_args small=Qwen/Qwen3-VL-2B-Instruct,\
large=Qwen/Qwen3-VL-8B-Instruct,verify=answer,transfer=sparse,sparse_layer=12,delta=0.8
    lmms-eval --model mai-single --tasks chartqa --model_args model=Qwen/Qwen3-VL-8B-Instruct,mode=think

Registered without editing lmms-eval: pyproject.toml names ``manifests`` under the entry point group
``lmms_eval.models``, which lmms-eval 0.7.3 reads (lmms_eval/models/registry_v2.py,
``load_entrypoint_manifests``; ``@register_model`` alone is not seen by ``simple_evaluate`` or the CLI).
``pip install --no-deps -e .`` (done by ``bash scripts/setup.sh --lmms``) makes it visible. lmms-eval is
imported only by the classes' own module, mai.lmms_eval_plugin, which lmms-eval loads from the class paths
below; this module (arguments, the run directory) needs no lmms-eval, so ``mai`` imports without it.

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
--num_processes N -m lmms_eval``): each takes its rank and world size from accelerate
(``mai.lmms_eval_plugin._Base._processes``), lmms-eval hands it its share of the documents, and it writes its
rows into ``<run_name>-rank<I>of<N>``.
"""
from __future__ import annotations

from mai import MaiError, metrics
from mai.presets import RECORDS


def manifests():
    """The entry point's payload (pyproject.toml): lmms-eval registers both models from it."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return [ModelManifest(model_id="mai", simple_class_path="mai.lmms_eval_plugin.MAI"),
            ModelManifest(model_id="mai-single", simple_class_path="mai.lmms_eval_plugin.MAISingle")]


# ---------------------------------------------------------------------------------------------------
# Model arguments
# ---------------------------------------------------------------------------------------------------

# The paper preset's record (mai.presets): its pair and reasoning budget, as the experiments run them.
COMMON_ARGS = dict(device="auto", dtype="auto", attn="sdpa", seed=0, think_tokens=RECORDS["paper"].think_tokens,
                   simple_tokens=None, min_pixels=None, max_pixels=None, out="runs", run_name=None, batch_size=1,
                   max_batch_size=None)
MAI_ARGS = dict(small=RECORDS["paper"].small, large=RECORDS["paper"].large, verify="answer",
                transfer="full", sparse_layer=None, delta=0.8, heads="mean", sink="keep", query="answer",
                agree="paper", answer_tokens=16, **COMMON_ARGS)
SINGLE_ARGS = dict(model=RECORDS["paper"].large, mode="simple", **COMMON_ARGS)


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
    requests are not answered again (see mai.lmms_eval_plugin._Base._run); one with another configuration is refused in one line
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
