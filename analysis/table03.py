"""Tables 3 and 4 from a 03_stage_profiling run: time per stage, and prefill against decode cost per token.

    python -m analysis.table03 runs/03_stage_profiling/cpu

Only timed runs without errors count (warm-up rows are kept in results.jsonl but left out here).
Per-token costs, per run: prefill seconds / prompt tokens prefilled; decode seconds / (output tokens - 1),
the first output token being the prefill's. The decode/prefill ratio is the ratio of the two means.
On a GPU of known memory bandwidth (MEMORY_BANDWIDTH), Table 4 also gives decode's physical floor per
token: every weight is read once per decoded token at batch size 1, so no decode step can take less
than weight bytes / bandwidth.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import report, style
from mai import MaiError, cli
from mai.generation import STAGES

NAME3 = "table3_stage_times"
NAME4 = "table4_per_token_cost"
STAGE_NAMES = {"preprocess": "preprocess", "vision": "vision encoder", "prefill": "prefill", "decode": "decode"}
GIB = 2 ** 30
_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
# Peak HBM bandwidth in bytes/s, from NVIDIA's datasheets (H200 SXM: 4.8 TB/s; H100 SXM: 3.35 TB/s; A100
# 80GB SXM: 2.039 TB/s), matched against torch.cuda.get_device_name.
MEMORY_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "A100": 2.039e12}


def memory_bandwidth(gpu: str | None) -> float | None:
    """Peak memory bandwidth of a GPU by its name, None when unknown (or on a CPU)."""
    for name, bandwidth in MEMORY_BANDWIDTH.items():
        if gpu and name in gpu:
            return bandwidth
    return None


def read_models(run_dir) -> dict:
    path = Path(run_dir) / "models.json"
    return json.loads(path.read_text()) if path.exists() else {}


def per_token(row: dict) -> tuple[float | None, float | None]:
    """(prefill seconds per prompt token prefilled, decode seconds per output token after the first)."""
    prefilled = row["input_tokens"] - row.get("cached_tokens", 0)
    prefill = row["times"]["prefill"] / prefilled if prefilled > 0 else None
    decode = row["times"]["decode"] / (row["output_tokens"] - 1) if row["output_tokens"] > 1 else None
    return prefill, decode


def timed_runs(rows: list[dict]) -> pd.DataFrame:
    """One line per timed run without error, in seconds and bytes."""
    records = []
    for r in rows:
        if r.get("warmup") or r.get("error"):
            continue
        prefill_tok, decode_tok = per_token(r)
        records.append(dict(model=r["model"], question_tokens=r.get("question_tokens"),
                            output_tokens=r["requested_output_tokens"],
                            generated=r["output_tokens"], input_tokens=r["input_tokens"],
                            image_tokens=r.get("image_tokens"), **{s: r["times"][s] for s in STAGES},
                            latency=r["latency"], prefill_per_token=prefill_tok, decode_per_token=decode_tok,
                            peak_memory=r.get("peak_memory_bytes"), memory_before=r.get("memory_before_bytes")))
    return pd.DataFrame.from_records(records, columns=[
        "model", "question_tokens", "output_tokens", "generated", "input_tokens", "image_tokens", *STAGES, "latency",
        "prefill_per_token", "decode_per_token", "peak_memory", "memory_before"])


def aggregate(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and std (over timed runs) per model, question length and output length, in the order the models
    were run."""
    order = list(dict.fromkeys(runs.model))
    records = []
    runs = runs.assign(question_tokens=runs.question_tokens.fillna(-1))  # rows of older runs lack it
    for (model, q, n), g in runs.groupby(["model", "question_tokens", "output_tokens"], sort=False):
        rec = dict(model=model, question_tokens=int(q), output_tokens=int(n), runs=len(g),
                   input_tokens=g.input_tokens.mean(),
                   image_tokens=g.image_tokens.mean(), generated=g.generated.mean())
        for col in (*STAGES, "latency", "prefill_per_token", "decode_per_token"):
            rec[col], rec[f"{col}_std"] = g[col].mean(), g[col].std()  # std: sample (n - 1); NaN for one run
        rec["decode_over_prefill"] = rec["decode_per_token"] / rec["prefill_per_token"]
        rec["peak_memory"] = g.peak_memory.max()
        rec["peak_over_start"] = (g.peak_memory - g.memory_before).max()
        records.append(rec)
    df = pd.DataFrame.from_records(records)
    if df.empty:
        return df
    df["_order"] = df.model.map(order.index)
    return (df.sort_values(["_order", "input_tokens", "output_tokens"]).drop(columns="_order")
            .reset_index(drop=True))


def _pm(mean, std, scale=1e3, fmt=".1f") -> str:
    """'12.3 ± 0.4' (ms by default); the std is left out when there is one run."""
    if mean is None or pd.isna(mean):
        return "-"
    text = format(mean * scale, fmt)
    return text if pd.isna(std) else f"{text} ± {format(std * scale, fmt)}"


def note(config: dict, described: dict, rows: list[dict] = ()) -> str:
    """What produced the numbers: weights, simulated inputs, dtype, device, runs, commit."""
    random = sorted(label if d.get("spec", label) == label else f"{label}: {d['spec']} shape"
                    for label, d in described.items() if d.get("random_weights"))
    weights = [f"RANDOM weights ({', '.join(random)})"] if random else []
    real = {label: d for label, d in described.items() if not d.get("random_weights")}
    weights += [report.weights_note(real)[0]] if real else []
    dtypes = sorted({d.get("dtype") for d in described.values()})
    prov = config.get("provenance", {})
    threads = sorted({d["torch_threads"] for d in described.values() if d.get("torch_threads")})
    device = prov.get("gpu") or (f"CPU ({prov.get('cpu_count')} cores"
                                 + (f", torch threads: {'/'.join(map(str, threads))})" if threads else ")"))
    questions = config.get("question_tokens")
    questions = "/".join(map(str, questions)) if isinstance(questions, list) else questions
    text = (f"Produced by preset '{config.get('preset')}': {' and '.join(weights) or 'unknown weights'}, "
            f"SIMULATED inputs ({_image_text(config, described)}, a {questions}"
            f"-token question, output length forced), {'/'.join(map(str, dtypes))}, on {device}; "
            f"{config.get('warmup')} warm-up + {config.get('runs')} timed runs per setting; "
            f"commit {str(prov.get('git_commit'))[:10]}.")
    loads = [r["load_average"] for r in rows if r.get("load_average") is not None and not r.get("warmup")]
    cores = prov.get("cpu_count") or 1
    if loads and not prov.get("gpu"):
        mean = sum(loads) / len(loads)
        text += f" 1-min load average during timed runs: {mean:.1f} on {cores} cores"
        # The run itself adds about one unit per torch thread; the rest is other processes on the CPU.
        others = mean - (max(threads) if threads else cores)
        text += (f": other processes shared the CPU (~{others:.1f} runnable), so times are inflated."
                 if others > 0.5 else ".")
    if random:
        text += " These numbers check the machinery; they are not the paper's."
    elif not prov.get("gpu"):
        text += " Times of a CPU, not the paper's GPU."
    return text


def _weights_gib(d: dict) -> float | None:
    size = _BYTES.get(d.get("dtype"))
    return d["parameters"] * size / GIB if size and d.get("parameters") else None


ABSENT = "absent"  # a text-only model's vision encoder: no such stage ran (not one of 0 ms)


def table3(agg: pd.DataFrame) -> pd.DataFrame:
    text_only = agg.image_tokens.isna()  # no image was shown: the model has no vision encoder
    out = pd.DataFrame({"model": agg.model, "output tokens": agg.output_tokens, "runs": agg.runs,
                        "prompt tokens": agg.input_tokens.round().astype(int),
                        "image tokens": [ABSENT if t else int(round(v)) for t, v in zip(text_only, agg.image_tokens)]})
    for col in (*STAGES, "latency"):
        out[f"{STAGE_NAMES.get(col, 'total')} (ms)"] = [
            ABSENT if col == "vision" and t else _pm(m, s)
            for m, s, t in zip(agg[col], agg[f"{col}_std"], text_only)]
    return out


def _image_text(config: dict, described: dict) -> str:
    """The simulated image, or that there was none (text-only models: image_tokens None in models.json)."""
    text_only = [m for m, d in described.items() if "image_tokens" in d and d["image_tokens"] is None]
    image = f"a random-noise {config.get('image_size')} image"
    if not text_only:
        return image
    if len(text_only) == len(described):
        return "no image (text-only models)"
    return f"{image}, none for the text-only {', '.join(sorted(text_only))}"


def decode_floor(described: dict, bandwidth: float | None) -> float | None:
    """Seconds per decoded token if every weight byte were read once at the GPU's peak bandwidth; on a CPU
    (no bandwidth given), the bytes a step reads over the bandwidth the run measured before the model's runs
    (experiments/03 records both in models.json; mai.stage_timing), None where neither is known."""
    if bandwidth is None:
        step_bytes, measured = described.get("step_bytes"), described.get("memory_bandwidth_bytes_per_s")
        return step_bytes / measured if step_bytes and measured else None
    weights = _weights_gib(described)
    return weights * GIB / bandwidth if weights else None


def table4(agg: pd.DataFrame, described: dict, bandwidth: float | None = None) -> pd.DataFrame:
    out = pd.DataFrame({
        "model": agg.model, "prompt tokens": agg.input_tokens.round().astype(int),
        "output tokens": agg.output_tokens,
        "prefill (ms/token)": [_pm(m, s, fmt=".3f") for m, s in zip(agg.prefill_per_token, agg.prefill_per_token_std)],
        "decode (ms/token)": [_pm(m, s, fmt=".2f") for m, s in zip(agg.decode_per_token, agg.decode_per_token_std)],
        "decode / prefill": agg.decode_over_prefill,
        "weights (GiB)": [_weights_gib(described.get(m, {})) for m in agg.model],
        "peak memory (GiB)": agg.peak_memory / GIB,
        "peak over start (GiB)": agg.peak_over_start / GIB,
    })
    floors = [decode_floor(described.get(m, {}), bandwidth) for m in agg.model]
    if any(floors):
        out.insert(4, "decode floor (ms/token)", [f * 1e3 if f else None for f in floors])
        out.insert(5, "decode / floor", [d / f if f else None for d, f in zip(agg.decode_per_token, floors)])
    return out


def setting(model: str, question_tokens: int, several: bool) -> str:
    """A model's name, with its question length where several were profiled."""
    return f"{model} q{question_tokens}" if several else model


def linear_fits(agg: pd.DataFrame) -> dict[str, tuple[float, float, float]]:
    """Per model (and question length) with several output lengths: (seconds per output token, intercept,
    R^2) of mean latency."""
    fits = {}
    several = agg.question_tokens.nunique() > 1
    for (model, q), g in agg.groupby(["model", "question_tokens"], sort=False):
        if g.output_tokens.nunique() < 2:
            continue
        x, y = g.output_tokens.to_numpy(float), g.latency.to_numpy(float)
        slope, intercept = np.polyfit(x, y, 1)
        residual = ((y - (slope * x + intercept)) ** 2).sum()
        total = ((y - y.mean()) ** 2).sum()
        fits[setting(model, q, several)] = (slope, intercept, 1 - residual / total if total > 0 else 1.0)
    return fits


def ratio_lines(agg: pd.DataFrame) -> list[str]:
    return [f"{r.model}, {r.input_tokens:.0f} prompt tokens, {r.output_tokens} output tokens: decode {r.decode_per_token * 1e3:.2f} ms/token vs "
            f"prefill {r.prefill_per_token * 1e3:.3f} ms/token -> decode costs {r.decode_over_prefill:.1f}x "
            f"prefill per token" for r in agg.itertuples()]


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    text = note(config, described, rows)
    runs = timed_runs(rows)
    agg = aggregate(runs)
    if agg.empty:
        raise MaiError(f"no timed runs without errors in {run_dir}: nothing to tabulate")
    memory_methods = sorted({r["memory_method"] for r in rows if r.get("memory_method")})
    mem_note = f" Peak memory: {'; '.join(memory_methods)}; weights included." if memory_methods else ""
    tables = report.write_table(table3(agg), report_dir, NAME3, config, text,
                                "Table 3: time per stage, mean ± std over timed runs (ms)")
    bandwidth = memory_bandwidth(config.get("provenance", {}).get("gpu"))
    if bandwidth:
        mem_note += (f" Decode floor: weight bytes / {bandwidth / 1e12:.2f} TB/s (the GPU's peak memory "
                     "bandwidth), the least one decoded token can take at batch size 1.")
    elif any(decode_floor(d, None) for d in described.values()):
        mem_note += (" Decode floor (CPU): the bytes a step reads (every weight but the input embedding table) / "
                     "the memory bandwidth measured in the run before the model's runs (torch summing 2 GiB of "
                     "float32, best of five), the least one decoded token can take at batch size 1; decode / "
                     "floor above 1 is the distance from it.")
    tables += report.write_table(table4(agg, described, bandwidth), report_dir, NAME4, config, text + mem_note,
                                 "Table 4: prefill cost per prompt token vs decode cost per output token "
                                 "(decode per token = decode time / (output tokens - 1)), and peak memory")
    fits = linear_fits(agg)
    fig_path = _plot(agg, fits, report.figure_path(report_dir, NAME3, config), config, described, text)
    summary = {"errors": sum(1 for r in rows if r.get("error")),
               "warmup_runs": sum(1 for r in rows if r.get("warmup")), "timed_runs": len(runs)}
    several = agg.question_tokens.nunique() > 1
    for r in agg.itertuples():
        tag = f"{r.model}/q{r.question_tokens}/out{r.output_tokens}" if several else f"{r.model}/out{r.output_tokens}"
        summary.update({f"{tag}/{s}_ms": getattr(r, s) * 1e3 for s in (*STAGES, "latency")})
        summary.update({f"{tag}/prefill_ms_per_token": r.prefill_per_token * 1e3,
                        f"{tag}/decode_ms_per_token": r.decode_per_token * 1e3,
                        f"{tag}/decode_over_prefill": r.decode_over_prefill,
                        f"{tag}/peak_memory_gib": r.peak_memory / GIB})
        floor = decode_floor(described.get(r.model, {}), bandwidth)
        if floor:
            summary[f"{tag}/decode_floor_ms_per_token"] = floor * 1e3
    for model, (slope, intercept, r2) in fits.items():
        summary.update({f"{model}/latency_s_per_output_token": slope, f"{model}/latency_intercept_s": intercept,
                        f"{model}/latency_linear_r2": r2})
    markdown = "\n".join(t.read_text() for t in tables if t.suffix == ".md")
    stages = agg.assign(setting=[_bar_label(r, several) for r in agg.itertuples()],
                        **{f"{s}_ms": agg[s] * 1e3 for s in (*STAGES, "latency")})
    charts = [report.chart("table3_latency", "line", stages.assign(series=[setting(m, q, several) for m, q in zip(
                  agg.model, agg.question_tokens)])[["series", "output_tokens", "latency_ms"]],
                  "Table 3: latency (ms) against output tokens", x="output_tokens", y="latency_ms", stroke="series"),
              report.chart("table3", "table", stages[["setting", *(f"{s}_ms" for s in (*STAGES, "latency"))]],
                           "Table 3: time per stage (ms)")]
    return dict(tables=tables, figures=[fig_path], summary=summary, markdown=markdown, data=agg, charts=charts)


def _bar_label(r, several: bool) -> str:
    """'8B · 45+128 tok': the model, its prompt and output tokens (one bar of Table 3's figure)."""
    return f"{style.short_model(r.model)} · {r.input_tokens:.0f}+{r.output_tokens} tok"


@style.themed
def _plot(agg: pd.DataFrame, fits: dict, path: Path, config: dict, described: dict, text: str) -> Path:
    """Time per stage as horizontal stacked bars, one per model and length (left); latency against the
    forced output length with each model's linear fit, when lengths were swept (right)."""
    sweep = agg.output_tokens.nunique() > 1
    several = agg.question_tokens.nunique() > 1
    fig, axes = style.figure(1, 2 if sweep else 1, width=4.4, height=max(2.6, 0.22 * len(agg) + 1.2))
    ax = axes[0][0]
    labels = [_bar_label(r, several) for r in agg.itertuples()]
    scale, unit = (1e3, "ms") if agg.latency.max() < 1 else (1.0, "s")
    left = np.zeros(len(agg))
    for stage in STAGES:
        if agg[stage].isna().all():
            continue  # text-only models: no vision encoder stage to draw
        values = agg[stage].fillna(0).to_numpy() * scale
        ax.barh(labels, values, left=left, height=0.7, color=style.STAGE_COLORS[stage], label=STAGE_NAMES[stage])
        left += values
    ax.invert_yaxis()  # the first model on top, as in the table
    ax.set(xlabel=f"time ({unit}, mean over timed runs)", title="time per stage")
    ax.tick_params(axis="y", labelsize=7)
    handles, names = ax.get_legend_handles_labels()
    if sweep:
        ax = axes[0][1]
        roles = style.model_roles(agg.model, described)
        for (model, q), g in agg.groupby(["model", "question_tokens"], sort=False):
            name = setting(style.short_model(model), q, several)
            dashes = "-" if q == agg.question_tokens.min() else "--"
            ax.errorbar(g.output_tokens, g.latency * scale, yerr=g.latency_std.fillna(0) * scale, marker="o",
                        ms=4, capsize=2, ls=dashes, color=style.color(f"{roles[model]}-S"),
                        label=name if setting(model, q, several) not in fits else
                        f"{name}: {fits[setting(model, q, several)][0] * 1e3:.1f} ms/token")
        ax.set(xlabel="output tokens (forced)", ylabel=f"latency ({unit})", title="latency against output length")
        h2, n2 = ax.get_legend_handles_labels()
        handles, names = handles + h2, names + n2
    style.outside_legend(fig, handles, names)
    fig.suptitle("Stage profiling (Tables 3-4)", fontsize=11)
    return style.save(fig, path, config, described, text)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--report-dir", help="where paper_tables/ and figures/ go (default: RUN_DIR/report; the "
                    "repository's own: --report-dir .)")
    a = ap.parse_args()

    def _main():
        out = build(a.run_dir, a.report_dir or Path(a.run_dir) / "report")
        print(out["markdown"] + "\n" + "\n".join(ratio_lines(out["data"])))

    cli.run(_main)
