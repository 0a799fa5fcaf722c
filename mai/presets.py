"""Each preset's settings as one record: what every entry point runs under (issue 39).

The experiments (their PRESETS), `python -m mai serve`, `python -m mai answer` and the bench scripts read a
preset's pair and cascade settings from here; scripts/regenerate.py runs the experiments under them. A script
adds what is its own (questions per task, its systems, its sweep) and names every field it sets otherwise, at
the call (`RECORDS["cpu"].preset(12, think_tokens=48)`), so that a difference shows where it is made. A flag
the user gives wins over both (mai.cli.parse), and a run's config.json records the settings it ran under.

cpu-real's values are mai.cli's REAL_* constants, frozen on the dev split (their comments there say how); the
cpu presets' numbers size random-weight runs for minutes on a CPU and measure nothing.
"""
from __future__ import annotations

import dataclasses

from mai import cli

# The fields a cascade reads (an experiment's cascade flags, the server's): what makes one answer.
CASCADE = ("think_tokens", "simple_tokens", "simple_prompt", "think_prompt", "max_pixels")
# Where the sparse selection reads attention, and how much of it it keeps.
SPARSE = ("sparse_layer", "delta")
# How a stage-major run batches (throughput only: what is computed does not depend on them).
STAGE = ("order", "batch_size", "threads")


@dataclasses.dataclass(frozen=True)
class Record:
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    small: str
    large: str
    think_tokens: int  # the reasoning budget
    simple_tokens: int | None = None  # the Simple answer's cap; None: each benchmark's own
    simple_prompt: str | None = None  # None: the post-prompt (mai.prompts)
    think_prompt: str | None = None  # None: instruction (mai.cli.LATE_DEFAULTS)
    transfer: str | None = None  # MAI's reasoning transfer (Table 10, the server); None: full
    sparse_layer: int | None = None  # None: the script's own default
    delta: float | None = None
    spans: tuple[str, ...] | None = None  # the sparse spans Tables 8 and 9 compare
    max_pixels: int | None = None
    order: str | None = None  # stage-major runs: their execution order, batch size and torch threads
    batch_size: int | None = None
    threads: int | None = None
    real: bool = False  # the real pair: its measured dtype and threads (mai.cli.real_loading) and decode (real_decode)

    def settings(self, *fields: str) -> dict:
        """The named fields this record sets (None left out), as a run's flags hold them (spans a list)."""
        out = {}
        for name in fields:
            value = getattr(self, name)
            if value is not None:
                out[name] = list(value) if isinstance(value, tuple) else value
        return out

    def preset(self, limit: int | None, *, pair: bool = True, sparse: bool = False, stage: bool = False,
               models: tuple[str, ...] | None = None, benchmarks: tuple[str, ...] | None = None, **own) -> cli.Preset:
        """An experiment's preset: this record's cascade settings, with the pair (--small, --large) where the script
        takes it, the sparse selection's where it transfers sparsely, the stage-major batching where it batches;
        then the script's own flags, which win."""
        extra = {**(dict(small=self.small, large=self.large) if pair else {}), **self.settings(*CASCADE),
                 **(self.settings(*SPARSE) if sparse else {}), **(self.settings(*STAGE) if stage else {}), **own}
        return cli.Preset(models or self.models, benchmarks or self.benchmarks, limit, extra, self.real)

    def served(self) -> dict:
        """What `mai serve` and `mai answer` fill in: the pair, MAI's cascade and transfer (not the batching, which a
        server does not do), and for the real pair its dtype and threads. Not its compiled decode: a served query
        decodes eagerly, taking turns token by token with the others (mai.serving.system)."""
        real = cli.real_loading() if self.real else {}
        return dict(small=self.small, large=self.large, **self.settings(*CASCADE, "transfer", *SPARSE), **real)


RECORDS = {
    "paper": Record(cli.PAPER_MODELS, cli.PAPER_BENCHMARKS, small=cli.PAPER_MODELS[0], large=cli.PAPER_MODELS[2],
                    think_tokens=1024),
    "cpu": Record(cli.CPU_MODELS, cli.CPU_BENCHMARKS, small="tiny-small", large="tiny-large", think_tokens=32,
                  simple_tokens=8, max_pixels=128 * 128),
    "cpu-text": Record(("tiny-qwen3", "tiny-smollm2"), (), small="tiny-qwen3", large="tiny-smollm2", think_tokens=32,
                       simple_tokens=8),
    "cpu-real": Record(cli.REAL_MODELS, cli.REAL_BENCHMARKS, small=cli.REAL_MODELS[0], large=cli.REAL_MODELS[1],
                       think_tokens=cli.REAL_THINK_TOKENS, simple_tokens=cli.REAL_SIMPLE_TOKENS,
                       simple_prompt=cli.REAL_SIMPLE_PROMPT, think_prompt=cli.REAL_THINK_PROMPT, transfer="sparse",
                       sparse_layer=cli.REAL_SPARSE_LAYER, delta=cli.REAL_DELTA, spans=cli.REAL_SPANS, order="stage",
                       batch_size=cli.REAL_BATCH_SIZE, threads=cli.REAL_BATCH_THREADS, real=True),
}
