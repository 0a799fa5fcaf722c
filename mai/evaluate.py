"""Run one model over benchmark examples in given prompt modes, one result row per (example, model, mode).

Rows are written as they complete; rows already in the run are skipped (resume). A failing example
(unreadable image, empty question, generation error) becomes an error row and the loop goes on.
"""
from __future__ import annotations

import traceback
from typing import Callable, Iterable

from tqdm.auto import tqdm

from mai import metrics
from mai.data import Benchmark, Example, get_benchmark
from mai.generation import Request, Result
from mai.results import RunStore, row_key


def base_row(key: str, example: Example, model: str, mode: str) -> dict:
    return dict(key=key, example_id=example.id, benchmark=example.benchmark, model=model, mode=mode,
                question=example.question, references=list(example.references), meta=example.meta)


def result_row(key: str, example: Example, bench: Benchmark, model: str, mode: str, result: Result,
               **extra) -> dict:
    """A scored row: the raw text, the extracted answer, the example's score, tokens and stage times."""
    row = base_row(key, example, model, mode)
    row.update(result.summary())
    row["prediction"] = row.pop("text")
    row["answer"] = metrics.extract_answer(row["prediction"], bench.metric)
    row["score"] = metrics.score(bench.metric, row["prediction"], list(example.references),
                                 question=example.question)
    row["error"] = None
    row.update(extra)
    return row


def error_row(key: str, example: Example, model: str, mode: str, err: BaseException) -> dict:
    row = base_row(key, example, model, mode)
    row["error"] = f"{type(err).__name__}: {err}".strip()
    row["score"] = None
    return row


def check_example(example: Example) -> list:
    """The example's images, or a ValueError that becomes its error row."""
    if not str(example.question or "").strip():
        raise ValueError(f"empty question in {example.id}")
    return example.load_images()


def request_for(example: Example, bench: Benchmark, images: list, mode: str, think_tokens: int,
                simple_tokens: int | None = None, **kw) -> Request:
    """simple_tokens caps lmms-eval's per-benchmark length (the CPU preset's random models rarely stop)."""
    max_new = min(bench.max_new_tokens, simple_tokens or bench.max_new_tokens) if mode == "simple" else think_tokens
    return Request(question=example.question, images=images, mode=mode, post_prompt=bench.post_prompt,
                   max_new_tokens=max_new, **kw)


def evaluate_model(store: RunStore, generate: Callable[[Request], Result], model: str,
                   examples: Iterable[Example], modes: Iterable[str], think_tokens: int,
                   simple_tokens: int | None = None, on_row: Callable[[dict], None] | None = None) -> int:
    """Run `generate` on every pending (example, mode); returns how many rows were written."""
    todo = [(ex, mode) for ex in examples for mode in modes
            if not store.done(row_key(ex.id, model, mode))]
    written = 0
    for ex, mode in tqdm(todo, desc=f"{model}", unit="call", leave=False):
        key = row_key(ex.id, model, mode)
        bench = get_benchmark(ex.benchmark)
        try:
            images = check_example(ex)
            result = generate(request_for(ex, bench, images, mode, think_tokens, simple_tokens))
            row = result_row(key, ex, bench, model, mode, result)
        except Exception as err:  # one bad example must not end a long run
            if isinstance(err, (KeyboardInterrupt, MemoryError)):
                raise
            row = error_row(key, ex, model, mode, err)
            row["traceback"] = traceback.format_exc(limit=3)
        store.append(row)
        written += 1
        if on_row:
            on_row(row)
    return written
