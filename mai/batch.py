"""Stage-major execution (--order stage): each cascade stage runs as one batch over every example routed to it.

--order example (mai.cascade.Cascade.answer; mai.evaluate.run_systems) answers one query at a time at batch
size 1: the paper's latency setting. --order stage is for throughput:

    (i)   small Simple for all; large Simple for all; compare                 -> route "simple"
    (ii)  small Think for the disagreeing ones; their second stage; compare  -> route "reasoning"
    (iii) large Simple + reasoning (whole or sparse) for the rest              -> route "transfer"
          (sparse: the attention the second stage's prefill recorded, or one forward on each kept cache)

Each stage is one `generate_batch` call (mai.generation for transformers, mai.vllm_backend for vLLM),
and the traces are the same Trace objects as Cascade.answer's, calls in the same order. Under greedy
decoding on the same backend the answers are those of example order, up to floating-point differences
between batched and batch-1 kernels: token for token on the tiny fp32 models (tests/test_batch.py);
vLLM does not promise batch invariance, and scripts/gpu_check_vllm.py counts the matches. On
transformers, second stages continue each request's own KV cache one at a time (a batched first stage
hands each request its slice of the cache); on vLLM they are one batch whose prompts extend the first
stages', so prefix caching serves the shared part.

Times: a call's stage times are its batch's divided by the batch size (Result.batch_size is in the
call's summary), so a trace's latency and wall_seconds are the example's share of the machine time, a
throughput measure and not the batch-1 latency the paper reports.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterable

from tqdm.auto import tqdm

from mai.answers import Matcher
from mai.benchmarks import get_benchmark
from mai.cascade import Call, Cascade, Trace
from mai.data import Benchmark, Example
from mai.evaluate import (
    SpanVariants,
    System,
    check_example,
    error_row,
    label_of,
    request_for,
    scored_row,
    sparse_context,
    sparse_output,
    trace_output,
    transfer_output,
    with_roles,
)
from mai.generation import Request, Result
from mai.results import RunStore, row_key
from mai.reuse import copy_batches

# A row whose batch raised and was rerun alone at batch size 1 (example order) carries this under
# "fallback", so a table can count (or drop) the rows whose times are not batch shares. A single call
# that generate_batch ran alone (a transformers second stage, speculative decoding) says why in its
# own summary's "fallback".
FALLBACK = "batch failed: rerun at batch size 1"

Item = tuple[Example, Benchmark, list]  # an example, its benchmark, its decoded images
BatchSystem = Callable[[list[Item]], list[dict]]


@dataclasses.dataclass
class Query:
    """One question for the cascade, as Cascade.answer takes it."""

    question: str
    images: list
    agreement: type[Matcher]  # the benchmark's (Benchmark.agreement)
    post_prompt: str
    simple_tokens: int
    think_prompt: str | None = None  # the Think call's user text when the run chose a style
    simple_prompt: str | None = None  # the Simple calls' user text when the run chose a style


def generate_batch(generator, requests: list[Request]) -> list[Result]:
    """generator.generate_batch where the backend has one, else one request at a time."""
    if not requests:
        return []
    batch = getattr(generator, "generate_batch", None)
    return batch(requests) if batch is not None else [generator.generate(r) for r in requests]


def run_cascade_stage_major(cascade: Cascade, queries: list[Query]) -> list[Trace]:
    """Cascade.answer for every query, stage by stage (see the module doc)."""
    cfg = cascade.config
    calls: list[list[Call]] = [[] for _ in queries]
    matchers = [cascade.matcher(q.agreement, q.question) for q in queries]

    def ask(i: int) -> dict:
        q = queries[i]
        return dict(question=q.question, images=q.images, post_prompt=q.post_prompt, think_prompt=q.think_prompt,
                    simple_prompt=q.simple_prompt)

    def stage(role: str, indices: list[int], requests: list[Request], mode: str | None = None,
              reasoning: bool = False) -> dict:
        gen = cascade.small if role == "small" else cascade.large
        out = {}
        for i, request, result in zip(indices, requests, generate_batch(gen, requests)):
            answer = matchers[i].read(result.text, reasoning)
            calls[i].append(Call(role, cascade.names[role], mode or request.mode, result.summary(), answer))
            out[i] = result, answer
        return out

    def simple(i: int, **kw) -> Request:
        return Request(**ask(i), mode="simple", max_new_tokens=queries[i].simple_tokens, **kw)

    everyone = list(range(len(queries)))
    small = stage("small", everyone, [simple(i) for i in everyone])
    large = stage("large", everyone, [simple(i) for i in everyone])
    traces: dict[int, Trace] = {}

    def finish(i: int, route: str, result: Result) -> Trace:
        wall = sum(c.result["latency"] for c in calls[i])  # the example's share of the batches' time
        answer = matchers[i].extract(result.text)
        traces[i] = Trace(route, result.text, answer, calls[i], wall)
        return traces[i]

    # (i) mutual verification at the Simple prompt.
    pending = []
    for i in everyone:
        if matchers[i].agree(small[i][1], large[i][1]):
            finish(i, "simple", large[i][0])
        else:
            pending.append(i)
    # (ii) the small model reasons; its answer (second stage, or read off the reasoning) is verified.
    thought = stage("small", pending, [cascade.think_request(ask(i)) for i in pending], reasoning=True)
    verified, second = thought, {}
    if cfg.verify == "answer":
        second = stage("small", pending, [cascade.second_stage_request(ask(i), thought[i][0]) for i in pending])
        verified = second
    rest = []
    for i in pending:
        if matchers[i].agree(verified[i][1], large[i][1]):
            finish(i, "reasoning", large[i][0])
        else:
            rest.append(i)
    # (iii) reasoning transfer to the large model's Simple prompt (a sparse capture per example, where
    # the second stage's prefill did not record it).
    contexts, kept, n_reasoning = {}, {}, {}
    for i in rest:
        stage2 = second[i][0] if i in second else None
        contexts[i], kept[i], n_reasoning[i], capture = cascade.reasoning_context(thought[i][0], stage2,
                                                                                   queries[i].post_prompt)
        if capture is not None:
            calls[i].append(capture)
    for i in pending:  # the first stages' KV caches are no longer needed
        thought[i][0].cache = None
    final = stage("large", rest, [simple(i, context=contexts[i]) for i in rest], mode="transfer")
    for i in rest:
        trace = finish(i, "transfer", final[i][0])
        trace.kept_tokens, trace.reasoning_tokens = kept[i], n_reasoning[i]
    return [traces[i] for i in everyone]


# ---------------------------------------------------------------------------------------------------
# Systems over a list of examples (Table 10's rows in stage order)
# ---------------------------------------------------------------------------------------------------

def _simple_tokens(bench: Benchmark, simple_tokens: int | None) -> int:
    return min(bench.max_new_tokens, simple_tokens or bench.max_new_tokens)


def model_batch_system(generator, role: str | None, mode: str, think_tokens: int,
                       simple_tokens: int | None = None) -> BatchSystem:
    """mai.evaluate.model_system over a batch: one model, one prompt mode, one generate_batch (role None:
    mai.evaluate.prompt_system's rows, without per-role token counts: Table 7's)."""
    def run(items: list[Item]) -> list[dict]:
        requests = [request_for(ex, bench, images, mode, think_tokens, simple_tokens) for ex, bench, images in items]
        return [with_roles(r.summary(), role) if role else r.summary() for r in generate_batch(generator, requests)]
    return run


def transfer_batch_system(small, large, think_tokens: int, simple_tokens: int | None = None) -> BatchSystem:
    """mai.evaluate.transfer_system over a batch: all reasoning in one batch, all answers in another."""
    def run(items: list[Item]) -> list[dict]:
        thoughts = generate_batch(small, [request_for(ex, bench, images, "think", think_tokens)
                                          for ex, bench, images in items])
        finals = generate_batch(large, [request_for(ex, bench, images, "simple", think_tokens, simple_tokens,
                                                    context=t.text)
                                        for (ex, bench, images), t in zip(items, thoughts)])
        return [transfer_output(t, f, label_of(small), label_of(large)) for t, f in zip(thoughts, finals)]
    return run


def sparse_transfer_batch_system(cascade: Cascade, think_tokens: int, simple_tokens: int | None = None,
                                 others: SpanVariants | None = None, span: str | None = None) -> BatchSystem:
    """mai.evaluate.sparse_transfer_system over a batch: all reasoning in one batch (each keeping its cache for
    the attention capture), the captures one at a time, all answers in another batch. ``others`` and ``span``:
    as there (a span variant reuses the reasoning and capture of the cascade's own span where it can)."""
    def run(items: list[Item]) -> list[dict]:
        taken = [others.take(ex.id, span) if span is not None else None for ex, _, _ in items]
        todo = [item for item, t in zip(items, taken) if t is None]
        made = iter(generate_batch(cascade.small, [request_for(ex, bench, images, "think", think_tokens,
                                                               keep_cache=True) for ex, bench, images in todo]))
        thoughts, kept = [], []
        for (ex, bench, _), t in zip(items, taken):
            if t is not None:
                thoughts.append(t[0])
                kept.append(t[1])
                continue
            thoughts.append(next(made))
            kept.append(sparse_context(cascade, thoughts[-1], bench.post_prompt, others, ex.id, span))
        finals = generate_batch(cascade.large, [request_for(ex, bench, images, "simple", think_tokens, simple_tokens,
                                                            context=k[0])
                                                for (ex, bench, images), k in zip(items, kept)])
        return [sparse_output(cascade, t, f, k) for t, f, k in zip(thoughts, finals, kept)]
    return run


def cascade_batch_system(cascade: Cascade, simple_tokens: int | None = None) -> BatchSystem:
    """mai.evaluate.cascade_system over a batch: run_cascade_stage_major."""
    def run(items: list[Item]) -> list[dict]:
        queries = [Query(ex.question, images, bench.agreement, bench.post_prompt, _simple_tokens(bench, simple_tokens),
                         ex.think_prompt, ex.simple_prompt) for ex, bench, images in items]
        return [trace_output(t) for t in run_cascade_stage_major(cascade, queries)]
    return run


def run_systems_stage_major(store: RunStore, systems: list[tuple[dict, System, BatchSystem]],
                            examples: Iterable[Example], chunk: int | None = None, desc: str = "",
                            reuse_from: str | None = None) -> int:
    """mai.evaluate.run_systems in stage order: per system, its pending examples in chunks of `chunk`
    (all at once when None), each chunk one batched run, its rows written when it completes (a resumed
    run skips finished rows). An unreadable example becomes an error row before the batch; a batch that
    raises is rerun one example at a time (the system's batch-1 function) to isolate the failing one.
    With `reuse_from` (another run's directory), each system first copies the whole batches that run
    finished under the same settings (mai.reuse). Returns how many rows were written."""
    examples = list(examples)
    written = 0
    for fields, one, many in systems:
        copied = copy_batches(store, reuse_from, fields, examples, chunk or len(examples) or 1)
        if copied:
            print(f"{desc} {'/'.join(map(str, fields.values()))}: {copied} rows copied from {reuse_from}", flush=True)
        written += copied
        todo = [ex for ex in examples if not store.done(row_key(ex.id, *fields.values()))]
        size = chunk or len(todo) or 1
        for start in tqdm(range(0, len(todo), size), desc=f"{desc} {'/'.join(map(str, fields.values()))}",
                          unit="batch", leave=False):
            items = []
            for ex in todo[start:start + size]:
                key = row_key(ex.id, *fields.values())
                try:
                    items.append((ex, get_benchmark(ex.benchmark), check_example(ex)))
                except Exception as err:
                    store.append(error_row(key, ex, fields, err))
                    written += 1
            try:
                outputs = many(items) if items else []
            except Exception:  # find the example that fails, keep the others
                outputs = None
            for j, (ex, bench, images) in enumerate(items):
                key = row_key(ex.id, *fields.values())
                try:
                    output = outputs[j] if outputs is not None else {**one(ex, bench, images), "fallback": FALLBACK}
                    row = scored_row(key, ex, bench, fields, output)
                except Exception as err:
                    row = error_row(key, ex, fields, err)
                store.append(row)
                written += 1
    return written
