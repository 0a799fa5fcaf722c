"""The benchmarks, one module each, as lmms-eval's tasks and simple-evals' evals are laid out.

A module of this folder holds one benchmark: its hub ids and schema, its row -> Example loader, its
prompt, its lmms-eval scoring and its agreement rule, as a ``mai.data.HubBenchmark`` or
``SyntheticBenchmark`` subclass decorated with ``@register``. Every module here whose name does not
start with "_" is imported when this package is, so adding a benchmark is adding its file (README,
"Adding a benchmark"); nothing else names it.
"""
from __future__ import annotations

import importlib
import pkgutil

from mai import MaiError
from mai.data import Benchmark, Example

# name -> the registered benchmark, in listing order (Benchmark.order, then name).
BENCHMARKS: dict[str, Benchmark] = {}
# The hub id each loaded benchmark came from (or the local files), for the run's config.json.
_SOURCES: dict[str, str] = {}


def register(cls: type[Benchmark]) -> type[Benchmark]:
    """Class decorator: make a benchmark known by its ``name``. A second class under a taken name is an
    error (re-importing the same module replaces its own entry)."""
    bench = cls()
    if not bench.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    old = BENCHMARKS.get(bench.name)
    if old is not None and (type(old).__module__, type(old).__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"benchmark {bench.name!r} is registered twice: {type(old).__module__}."
                         f"{type(old).__qualname__} and {cls.__module__}.{cls.__qualname__}")
    BENCHMARKS[bench.name] = bench
    ordered = sorted(BENCHMARKS.values(), key=lambda b: (b.order, b.name))
    BENCHMARKS.clear()
    BENCHMARKS.update((b.name, b) for b in ordered)
    return cls


def discover() -> None:
    """Import every benchmark module on this package's path (each registers itself)."""
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise MaiError(f"unknown benchmark {name!r}; choose from: {', '.join(BENCHMARKS)}") from None


def load_benchmark(name: str, limit: int | None = None, seed: int = 0,
                   data_files: str | list[str] | None = None, split: str | None = None) -> list[Example]:
    """Load ``limit`` examples (all when None) of benchmark ``name``: from the hub, or from local parquet
    files in the hub schema when ``data_files`` is given; a synthetic one is drawn from ``seed``. ``split``
    (dev or test) applies to the benchmarks that ship with a held-out split (mai.benchmarks._vendored)."""
    bench = get_benchmark(name)
    if split is not None and not hasattr(bench, "items"):
        if split != "test":
            raise MaiError(f"{name} has no {split} split (only bbh_* and gsm8k ship with dev and test)")
        split = None
    examples, source = bench.load(limit, seed, data_files, split) if split else bench.load(limit, seed, data_files)
    _SOURCES[name] = source
    return examples


def dataset_sources() -> dict[str, str]:
    """Where each benchmark loaded in this process came from: a hub id (with its config), local
    files, or "synthetic"."""
    return dict(_SOURCES)


discover()
