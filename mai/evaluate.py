"""Run systems (a model with a prompt mode, or the whole cascade) over benchmark examples, one row each.

A system is a function (example, benchmark, images) -> dict holding at least "text" (the raw answer);
usually Result.summary() or a cascade trace. Rows are scored, written as they complete, and skipped
when already in the run (resume). A failing example (unreadable image, empty question, generation
error) becomes an error row and the loop goes on.
"""
from __future__ import annotations

import dataclasses
import traceback
from typing import Callable, Iterable

from tqdm.auto import tqdm

from mai.benchmarks import get_benchmark
from mai.data import Benchmark, Example
from mai.generation import Request, Result
from mai.results import RunStore, row_key

System = Callable[[Example, Benchmark, list], dict]


def base_row(key: str, example: Example, fields: dict) -> dict:
    return dict(key=key, example_id=example.id, benchmark=example.benchmark, **fields,
                question=example.question, references=list(example.references), meta=example.meta)


def scored_row(key: str, example: Example, bench: Benchmark, fields: dict, output: dict) -> dict:
    """A row: the raw text as prediction, the extracted answer, the example's scores (lmms-eval's on the
    raw text, and after our extraction), and the output's tokens, stage times and anything else it
    carries (a cascade's route and trace)."""
    row = base_row(key, example, fields)
    row.update(output)
    # The row's wall-clock span (UTC): its own call's, or from its first call's start to its last call's end.
    calls = [c.get("result", {}) for c in row.get("calls") or row.get("trace") or []]
    starts = [c["started"] for c in calls if c.get("started")]
    ends = [c["ended"] for c in calls if c.get("ended")]
    if starts and "started" not in row:
        row["started"], row["ended"] = min(starts), max(ends)
    row["prediction"] = row.pop("text")
    row["answer"] = bench.extract(row["prediction"])
    # score: lmms-eval's protocol on the raw text (what tables show); score_extracted: the same rules
    # after our extraction (mai.answers), the reading of a reasoning (R) output that lmms-eval lacks.
    scored = (row["prediction"], list(example.references), example.question, example.meta)
    row["score"] = bench.score(*scored)
    row["score_extracted"] = bench.score_extracted(*scored)
    row["error"] = None
    return row


def error_row(key: str, example: Example, fields: dict, err: BaseException) -> dict:
    row = base_row(key, example, fields)
    row["error"] = f"{type(err).__name__}: {err}".strip()
    row["score"] = row["score_extracted"] = None
    row["traceback"] = traceback.format_exc(limit=3)
    return row


def check_example(example: Example) -> list:
    """The example's images, or a ValueError that becomes its error row."""
    if not str(example.question or "").strip():
        raise ValueError(f"empty question in {example.id}")
    return example.load_images()


def request_for(example: Example, bench: Benchmark, images: list, mode: str, think_tokens: int,
                simple_tokens: int | None = None, **kw) -> Request:
    """simple_tokens caps lmms-eval's per-benchmark length (the CPU preset's random models rarely stop)."""
    max_new = (min(bench.max_new_tokens, simple_tokens or bench.max_new_tokens) if mode == "simple"
               else think_tokens)
    return Request(question=example.question, images=images, mode=mode, post_prompt=bench.post_prompt,
                   max_new_tokens=max_new, think_prompt=example.think_prompt, simple_prompt=example.simple_prompt,
                   **kw)


def prompt_system(generate: Callable[[Request], Result], mode: str, think_tokens: int,
                  simple_tokens: int | None = None, **request_kw) -> System:
    """One model answering with one prompt mode."""
    def run(example, bench, images):
        return generate(request_for(example, bench, images, mode, think_tokens, simple_tokens,
                                    **request_kw)).summary()
    return run


def reset_caches(generators) -> None:
    """Empty every engine's cross-request caches (vLLM's prefix, image and encoder caches); a transformers
    generator keeps nothing between calls, so it has nothing to reset."""
    for gen in generators:
        reset = getattr(gen, "reset_caches", None)
        if reset is not None:
            reset()


def isolated(system: Callable, generators) -> Callable:
    """`system` with nothing cached from another system: the generators' caches are emptied before each
    call of it (one example in example order, one batch in stage order). Inside the call nothing is reset,
    so a second stage still extends its first stage's KV, as the method reuses it."""
    def run(*args):
        reset_caches(generators)
        return system(*args)
    return run


def run_systems(store: RunStore, systems: list[tuple[dict, System]], examples: Iterable[Example],
                desc: str = "", on_row: Callable[[dict], None] | None = None) -> int:
    """Every pending (example, system); `fields` (e.g. {"model": "2B", "mode": "simple"}) name the system
    in its rows and keys. Returns how many rows were written."""
    todo = [(ex, fields, fn) for ex in examples for fields, fn in systems
            if not store.done(row_key(ex.id, *fields.values()))]
    written = 0
    for ex, fields, fn in tqdm(todo, desc=desc, unit="row", leave=False):
        key = row_key(ex.id, *fields.values())
        bench = get_benchmark(ex.benchmark)
        try:
            row = scored_row(key, ex, bench, fields, fn(ex, bench, check_example(ex)))
        except Exception as err:  # one bad example must not end a long run
            row = error_row(key, ex, fields, err)
        store.append(row)
        written += 1
        if on_row:
            on_row(row)
    return written


def evaluate_model(store: RunStore, generate: Callable[[Request], Result], model: str,
                   examples: Iterable[Example], modes: Iterable[str], think_tokens: int,
                   simple_tokens: int | None = None) -> int:
    """One model in several prompt modes (Table 7's rows)."""
    systems = [({"model": model, "mode": mode}, prompt_system(generate, mode, think_tokens, simple_tokens))
               for mode in modes]
    return run_systems(store, systems, examples, desc=model)


def with_roles(summary: dict, role: str) -> dict:
    """A single model's output, with its tokens also under its role (tables compare systems per role)."""
    other = "large" if role == "small" else "small"
    return {**summary, f"{role}_output_tokens": summary["output_tokens"], f"{other}_output_tokens": 0}


def model_system(generate, role: str, mode: str, think_tokens: int, simple_tokens: int | None = None) -> System:
    """A baseline: one model (the small or the large one) with one prompt mode."""
    inner = prompt_system(generate, mode, think_tokens, simple_tokens)
    return lambda example, bench, images: with_roles(inner(example, bench, images), role)


def transfer_system(small, large, think_tokens: int, simple_tokens: int | None = None) -> System:
    """Full reasoning transfer without verification: the small model reasons, the large model answers with
    the Simple prompt and that reasoning prepended (Table 8's '8B-S + 2B reasoning', Table 10's Full RT)."""
    def run(example, bench, images):
        thought = small.generate(request_for(example, bench, images, "think", think_tokens))
        final = large.generate(request_for(example, bench, images, "simple", think_tokens, simple_tokens,
                                           context=thought.text))
        return transfer_output(thought, final, label_of(small), label_of(large))
    return run


def sparse_transfer_system(cascade, think_tokens: int, simple_tokens: int | None = None,
                           others: SpanVariants | None = None, span: str | None = None) -> System:
    """Sparse reasoning transfer without verification (Table 8's sparse row): the small model reasons, the
    reasoning tokens holding the cascade's delta of its attention at its sparse layer are kept (mai.transfer,
    as MAI's transfer stage keeps them), and the large model answers the Simple prompt with them prepended.
    ``others``: keep the other spans' selections of the same capture there; with ``span`` as well, this is that
    span's row, read off what the cascade's own row kept (SpanVariants.take) where it can."""
    small, large = cascade.small, cascade.large

    def run(example, bench, images):
        taken = others.take(example.id, span) if span is not None else None
        if taken is not None:
            thought, kept = taken
        else:
            thought = small.generate(request_for(example, bench, images, "think", think_tokens, keep_cache=True))
            kept = sparse_context(cascade, thought, bench.post_prompt, others, example.id, span)
        final = large.generate(request_for(example, bench, images, "simple", think_tokens, simple_tokens,
                                           context=kept[0]))
        return sparse_output(cascade, thought, final, kept)
    return run


def sparse_context(cascade, thought: Result, post_prompt: str, others: "SpanVariants | None" = None, key: str = "",
                   span: str | None = None) -> tuple:
    """(context, kept tokens, reasoning tokens, the capture's call or None): MAI's sparse selection of a
    reasoning (Cascade.reasoning_context, read from a kept KV cache), which frees that cache; in ``span`` where
    given, else the cascade's own. With ``others`` (SpanVariants) and no ``span``, the other spans' selections
    from the same capture are kept there under ``key``."""
    keep = others is not None and span is None
    spans = (span or cascade.config.sparse.span, *(others.spans if keep else ()))
    out = cascade.reasoning_contexts(thought, None, post_prompt, spans)
    thought.cache = None  # the KV cache is not needed any more
    if keep:
        others.kept[key] = (thought, out)
    return out[spans[0]]


@dataclasses.dataclass
class SpanVariants:
    """Table 8's sparse row in other spans (SparseOptions.span, e.g. the number-aware one) read off the SAME
    reasoning and capture as the row of the cascade's own span: example id -> (reasoning, span -> context)."""

    spans: tuple[str, ...]
    kept: dict = dataclasses.field(default_factory=dict)

    def take(self, key: str, span: str):
        """(reasoning, that span's context tuple) when the row of the cascade's own span made them, else None
        (a resumed run whose own-span rows were written earlier: the variant reasons and captures anew)."""
        thought, contexts = self.kept.pop(key, (None, {}))
        return (thought, contexts[span]) if span in contexts else None


def sparse_output(cascade, thought: Result, final: Result, kept: tuple) -> dict:
    """transfer_output of a sparse transfer: the kept reasoning is what the large model read; the capture's
    own forward, when it ran one, is a call of the trace and counts in the times."""
    context, n_kept, n_reasoning, capture = kept
    out = transfer_output(thought, final, label_of(cascade.small), label_of(cascade.large))
    if capture is not None:
        out["calls"].insert(1, dict(role="small", model=capture.model, mode="attention", result=capture.result,
                                    answer=None))
        out["times"] = {k: v + capture.result["times"][k] for k, v in out["times"].items()}
        out["latency"] += capture.result["latency"]
    return {**out, "kept_tokens": n_kept, "reasoning_tokens": n_reasoning, "transferred": context}


def label_of(generator) -> str:
    """A generator's model label (transformers generators hold a LoadedModel, vLLM ones the label itself)."""
    return getattr(generator, "label", None) or generator.loaded.label


def transfer_output(thought: Result, final: Result, small: str = "small", large: str = "large") -> dict:
    """Full RT's output: the large model's answer; tokens per role, times of both calls added up, and
    both calls as a cascade trace records them (the latency model predicts call by call)."""
    times = {k: thought.times[k] + final.times[k] for k in final.times}
    calls = [dict(role="small", model=small, mode="think", result=thought.summary(), answer=None),
             dict(role="large", model=large, mode="transfer", result=final.summary(), answer=None)]
    return dict(text=final.text, input_tokens=final.input_tokens, output_tokens=final.output_tokens,
                small_output_tokens=thought.output_tokens, large_output_tokens=final.output_tokens,
                cached_tokens=thought.cached_tokens + final.cached_tokens, times=times,
                latency=thought.latency + final.latency, reasoning=thought.text, calls=calls)


def cascade_system(cascade, simple_tokens: int | None = None) -> System:
    """MAI: the cascade's answer, route, per-role totals and full trace."""
    def run(example, bench, images):
        max_simple = min(bench.max_new_tokens, simple_tokens or bench.max_new_tokens)
        return trace_output(cascade.answer(example.question, images, bench.agreement, bench.post_prompt, max_simple,
                                           think_prompt=example.think_prompt, simple_prompt=example.simple_prompt))
    return run


def trace_output(trace) -> dict:
    """MAI's output: the cascade's answer, route, per-role totals and full trace."""
    d = trace.to_dict()
    out = dict(text=d.pop("prediction"), route=d.pop("route"), **{k: v for k, v in d.items()
                                                                     if k not in ("answer", "calls")},
               output_tokens=d["large_output_tokens"], trace=d["calls"])
    out["cached_tokens"] = sum(c["result"].get("cached_tokens", 0) for c in d["calls"])  # every call's KV reuse
    return out
