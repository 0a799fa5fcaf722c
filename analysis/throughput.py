"""Aggregate decode throughput of the cpu-real pair by batch size, per model and backend: the table behind the
cpu-real preset's batch size and backend (issue 28), from scripts/bench_batch.py's measurements.

    python -m analysis.throughput                       # runs/bench/batch.{hf,vllm}.json -> paper_tables/, figures/
    python -m analysis.throughput --report-dir /tmp/x

Writes paper_tables/throughput.cpu-real.{md,tex} and figures/throughput.cpu-real.{png,pdf,json}: per model,
backend (transformers eager, transformers with the compiled decode of mai.compiled_decode, vLLM's CPU engine) and
batch size, tokens/s (batch size x forced output tokens / the batch call's wall seconds, prefill included), its
ratio to batch 1 and to eager transformers at the same batch, one decode step's milliseconds (prefill cancelled)
and the bandwidth bound's fraction (the bytes a step reads over the bandwidth measured in the same run, divided
by the step: 100% is the bound), and on how many questions the batched greedy answers equal batch-1 answers. Each file's note says what produced it (real weights, dev questions,
threads, what else ran on the machine).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from analysis import report, style

NAME = "throughput"
BACKENDS = {"hf": "transformers", "hf-compiled": "transformers, compiled decode", "vllm": "vLLM (CPU engine)"}


def load(bench_dir: Path) -> tuple[pd.DataFrame, list[dict]]:
    """One line per (model, backend, batch size) from every runs/bench/batch.<backend>.json."""
    lines, sources = [], []
    # A step's bytes per model, as the transformers runs counted them (vLLM's cannot count its engine's weights).
    step_bytes = {model: m["step_bytes"] for backend in ("hf", "hf-compiled")
                  if (bench_dir / f"batch.{backend}.json").exists()
                  for model, m in json.loads((bench_dir / f"batch.{backend}.json").read_text())["models"].items()
                  if m.get("step_bytes")}
    for backend in BACKENDS:
        path = bench_dir / f"batch.{backend}.json"
        if not path.exists():
            continue
        record = json.loads(path.read_text())
        sources.append(dict(record, file=path.name))
        for model, measured in record["models"].items():
            same = measured["equality"]
            for batch, m in measured["by_batch"].items():
                lines.append(dict(model=model, backend=BACKENDS[backend], batch=int(batch),
                                  tokens_per_s=m["tokens_per_s"], ratio_to_batch_1=m["ratio_to_smallest"],
                                  seconds=m["seconds"], decode_step_ms=_ms(m.get("decode_step_s")),
                                  bound_fraction=_bound(m, measured, step_bytes.get(model)),
                                  batched_equals_batch_1=f"{same['questions'] - same['differing']}/{same['questions']}"))
    if not lines:
        raise SystemExit(f"error: no batch.<backend>.json under {bench_dir}; run scripts/bench_batch.py first")
    df = pd.DataFrame(lines).sort_values(["model", "batch", "backend"], kind="stable").reset_index(drop=True)
    df = df.astype({"decode_step_ms": float, "bound_fraction": float})
    hf = df[df.backend == BACKENDS["hf"]].set_index(["model", "batch"]).tokens_per_s
    df["ratio_to_transformers"] = [r.tokens_per_s / hf[(r.model, r.batch)] if (r.model, r.batch) in hf.index
                                   else None for r in df.itertuples()]
    return df, sources


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e3, 1)


def _bound(m: dict, measured: dict, step_bytes: int | None) -> float | None:
    """A decode step's fraction of the bandwidth bound: the step's bytes / the run's own bandwidth / the step."""
    step_s, bandwidth = m.get("decode_step_s"), measured.get("bandwidth_bytes_per_s")
    if not (step_s and bandwidth and step_bytes):
        return None
    return round(step_bytes / bandwidth / step_s, 3)


def note(sources: list[dict]) -> str:
    parts = []
    for s in sources:
        parts.append(f"{s['file']}: {s['dtype']}, {s['threads']} torch thread(s), {s['output_tokens']} "
                     f"output tokens forced, {s['machine']}, load average {s['load_average_before']:.2f} before and "
                     f"{s['load_average_after']:.2f} after" + (f"; meanwhile: {s['note']}" if s.get("note") else ""))
    return ("Produced by scripts/bench_batch.py (REAL weights: the cpu-real pair, Qwen2.5-Coder 0.5B/1.5B-Instruct; "
            "REAL dev questions of bbh_object_counting and gsm8k, Simple prompts; CPU). " + " ".join(parts)
            + ". decode_step_ms: one decode step of the batch, (time at 4 + 32 forced tokens - time at 4) / 32; "
            "bound_fraction: the bytes a step reads (every weight but the input embedding table) / the memory "
            "bandwidth measured in the same run (torch summing 2 GiB of float32 with the run's threads) / the step "
            "(above 1: the sum understates the read rate the GEMM kernels reach). batched_equals_batch_1: greedy answers (48 new tokens, unforced) of one batch against each "
            "question alone, same backend. Ratios are measured within one run of the script.")


@style.themed
def _plot(df: pd.DataFrame, path: Path, config: dict, described: dict, text: str) -> Path:
    models = list(dict.fromkeys(df.model))
    fig, axes = style.figure(1, len(models), width=3.4, height=2.8)
    markers = {name: m for name, m in zip(BACKENDS.values(), ("o", "^", "s"))}
    colors = {name: style.color(role) for name, role in zip(BACKENDS.values(), ("large-S", "MAI", "Full RT"))}
    for ax, model in zip(axes[0], models):
        for backend, part in df[df.model == model].groupby("backend", sort=False):
            ax.plot(part.batch, part.tokens_per_s, marker=markers[backend], ms=4, color=colors[backend], label=backend)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(df.batch.unique()), [str(b) for b in sorted(df.batch.unique())])
        ax.set(title=model, xlabel="batch size", ylabel="decode tokens/s (all requests)", ylim=(0, None))
    style.outside_legend(fig)
    fig.suptitle("Aggregate throughput by batch size (CPU)", fontsize=11)
    return style.save(fig, path, config, described, text)


def build(bench_dir: str | Path = "runs/bench", report_dir: str | Path = ".") -> dict:
    df, sources = load(Path(bench_dir))
    config = dict(preset="cpu-real", experiment="bench_batch", provenance=sources[0].get("provenance", {}))
    described = {m: dict(spec=m, random_weights=False) for m in df.model.unique()}
    text = note(sources)
    tables = report.write_table(df, report_dir, NAME, config, text,
                                "Aggregate decode throughput by batch size, per model and backend")
    figure = _plot(df, report.figure_path(report_dir, NAME, config), config, described, text)
    return dict(markdown=tables[0].read_text(), tables=tables, figures=[figure])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench-dir", default="runs/bench", help="where batch.<backend>.json are (default: runs/bench)")
    ap.add_argument("--report-dir", default=".", help="where paper_tables/ and figures/ go (default: the repository)")
    args = ap.parse_args(argv)
    out = build(args.bench_dir, args.report_dir)
    print(out["markdown"])


if __name__ == "__main__":
    main()
