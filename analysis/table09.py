"""Table 9 and the attention-mass curve from a 09_layer_ablation run.

Per layer: accuracy of sparse transfer, mean kept reasoning tokens and the kept fraction, against Full
transfer and the large model's Simple answer; the figure shows accuracy and kept tokens over layers
(the paper: a convex token curve, L10-L14 balancing tokens and accuracy) and the fraction of reasoning
tokens holding delta of the attention mass (Appendix B.7: about 20% hold 80%), from the small model's own
reasoning on the run's examples (the "Full" rows carry it per layer), with the attention on the sink token
beside it. A run on text questions without a benchmark (--preset cpu-smollm2: the real weights of SmolLM2-
135M-Instruct, Q4_1 GGUF dequantised) gives the mass curve alone. The paper's 20% is its claim for
Qwen3-VL-2B, another model, and is drawn as such.

    python -m analysis.table09 runs/09_layer_ablation/cpu
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import seaborn as sns

from analysis import paper_numbers, report, style

NAME = "table9_layer_ablation"


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described, rows)
    if not config.get("benchmarks"):  # text questions written into the script: the curve is all there is
        weights = gguf_weights(described)
        if weights:  # not a released checkpoint: a quantised copy, dequantised to fp32
            note = re.sub(r"REAL weights \([^)]*\)", weights, note)
        return _build_mass_curve(rows, config, described, note, report_dir)
    # Number-aware rows (experiments/09 --spans token,number) get a column of their own; a run of the paper's
    # selection alone keeps the table it always had.
    spans = any(r.get("span") not in (None, "token") for r in rows)
    if spans:
        rows = [{**r, "span": r.get("span") or ("token" if r.get("layer") is not None else "")} for r in rows]
    df = report.summarize(rows, by=("benchmark", "system", "layer", *(("span",) if spans else ())),
                          means=(("kept_tokens", "kept_tokens"), ("reasoning_tokens", "reasoning_tokens"),
                                 ("kept_fraction", "kept_fraction"), ("latency_s", "latency")),
                          order=lambda k: (k[0], -1 if k[2] is None else k[2], [s == "number" for s in k[3:]],
                                           k[1]))
    df["layer"] = pd.array([None if v is None or v != v else int(v) for v in df.layer], dtype="Int64")
    df["kept_fraction"] = df.kept_fraction.astype(float) * 100  # in %, as the paper's 20%
    df = df.rename(columns={"kept_fraction": "kept_%"})
    tables = report.write_table(df, report_dir, NAME, config, note,
                                f"Table 9: sparse reasoning transfer per layer (delta {config.get('delta')}): "
                                "accuracy (%), kept reasoning tokens, kept share of the reasoning (%)")
    fig = _plot_layers(df, report.figure_path(report_dir, NAME, config), config, described, note,
                       config.get("delta"))
    keys = [report.system_key("Full" if s == "Full" else "large-S", layer=layer)
            for s, layer in zip(df.system, df.layer.astype(object).where(df.layer.notna(), None))]
    summary = report.stable_summary(df, keys, ("accuracy", "kept_tokens", "kept_%", "latency_s"))
    sparse = df[df.layer.notna()].assign(layer=lambda d: d.layer.astype(int))
    if spans:  # the summary's and charts' per-layer lines are the paper's selection
        sparse = sparse[sparse.span == "token"]
    # One key whatever the layers run (a sweep step runs one): the mean over this run's layers.
    for bench, part in sparse.groupby("benchmark"):
        for col in ("accuracy", "kept_tokens", "kept_%"):
            values = part[col].dropna().astype(float)
            if len(values):
                summary[f"{bench}/sparse/{col}"] = float(values.mean())
    charts = [report.chart("table9_accuracy_per_layer", "line", sparse[["benchmark", "layer", "accuracy"]],
                           "Table 9: accuracy (%) of sparse transfer per layer", x="layer", y="accuracy",
                           stroke="benchmark"),
              report.chart("table9_kept_tokens_per_layer", "line", sparse[["benchmark", "layer", "kept_tokens"]],
                           f"Table 9: kept reasoning tokens per layer (delta {config.get('delta')})", x="layer",
                           y="kept_tokens", stroke="benchmark"),
              report.chart("table9", "table", df, "Table 9")]
    out = dict(tables=tables, figures=[fig], summary=summary, charts=charts, markdown=tables[0].read_text())
    captured = [r for r in rows if r.get("fractions") and not r.get("error")]
    if captured:  # the small model's attention over its own reasoning, captured at each layer
        mass = _build_mass_curve(captured, config, described, note, report_dir)
        for key in ("tables", "figures", "charts"):
            out[key] = out[key] + mass[key]
        out["summary"].update(mass["summary"])
        out["markdown"] += "\n" + mass["markdown"]
    return out


def gguf_weights(described: dict) -> str:
    """What GGUF-loaded models are, from models.json: 'real weights of SmolLM2-135M-Instruct (Q4_1 GGUF,
    dequantised)' (mai.models.load_text_model), or '' when none is."""
    parts = []
    for _, d in sorted(described.items()):
        file = Path(str(d.get("spec", ""))).name
        if file.lower().endswith(".gguf"):
            model, _, quant = file[:-len(".gguf")].rpartition(".")
            parts.append(f"real weights of {model} ({quant} GGUF, dequantised)")
    return " and ".join(parts)


PAPER_LINE = (f"the paper: top {paper_numbers.APPENDIX_B7['fraction_of_tokens_for_80pct_mass']:.0%} of tokens hold "
              "80%\n(its claim for Qwen3-VL-2B, App. B.7)")


def _paper_line(ax) -> None:
    ax.axhline(100 * paper_numbers.APPENDIX_B7["fraction_of_tokens_for_80pct_mass"], color="0.4", lw=1, ls=":",
               label=PAPER_LINE)


@style.themed
def _plot_layers(df: pd.DataFrame, path: Path, config: dict, described: dict, note: str, delta) -> Path:
    """Per benchmark (a row each): accuracy per layer against Full transfer and the large model's Simple
    answer; kept reasoning tokens per layer (the paper's convex curve); the kept share of the reasoning
    against the paper's 20%."""
    benches = list(dict.fromkeys(df.benchmark))
    labels = ["sparse transfer", "Full transfer", *df[df.layer.isna()].system, PAPER_LINE]
    fig, axes = style.figure(len(benches), 3, width=3.0, height=2.4, sharex=True)
    fig.set_size_inches(9.0 + style.legend_room(labels), 2.4 * len(benches) + 0.6)
    for row, bench in zip(axes, benches):
        part = df[df.benchmark == bench]
        sparse = part[part.layer.notna()].sort_values("layer")
        if "span" in part:
            numbers = sparse[sparse.span == "number"]
            sparse = sparse[sparse.span == "token"]
            kw = dict(ms=3, color=style.color("sparse RT"), alpha=0.6)
            row[0].plot(numbers.layer.astype(int), numbers.accuracy.astype(float), "s--", label="number-aware", **kw)
            row[1].plot(numbers.layer.astype(int), numbers.kept_tokens.astype(float), "s--", **kw)
            row[2].plot(numbers.layer.astype(int), numbers["kept_%"], "s--", **kw)
        x = sparse.layer.astype(int)
        sparse_color = style.color("sparse RT")
        row[0].plot(x, sparse.accuracy.astype(float), "o-", ms=3, color=sparse_color, label="sparse transfer")
        for _, r in part[part.layer.isna()].iterrows():
            role = "Full RT" if r.system == "Full" else "large-S"
            row[0].axhline(r.accuracy if r.accuracy is not None else float("nan"), ls="--", lw=1.2,
                           color=style.color(role), label="Full transfer" if role == "Full RT" else r.system)
        style.percent_axis(row[0], label=f"{bench}\naccuracy (%)")
        row[1].plot(x, sparse.kept_tokens.astype(float), "o-", ms=3, color=sparse_color)
        row[1].set(ylabel="kept reasoning tokens", ylim=(0, None))
        row[2].plot(x, sparse["kept_%"], "o-", ms=3, color=sparse_color)
        _paper_line(row[2])
        style.percent_axis(row[2], label="reasoning kept (%)")
        for ax in row:
            style.integer_axis(ax)
    for ax, title in zip(axes[0], ("accuracy", f"kept tokens (delta {delta})", "kept share of the reasoning")):
        ax.set_title(title)
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    style.outside_legend(fig)
    fig.suptitle("Sparse reasoning transfer per layer (Table 9)", fontsize=11)
    return style.save(fig, path, config, described, note)


def _build_mass_curve(rows, config, described, note, report_dir) -> dict:
    ok = [r for r in rows if not r.get("error")]
    layers = sorted({int(k) for r in ok for k in r["fractions"]})
    records = []
    for layer in layers:
        vals = [r["fractions"][str(layer)] for r in ok]
        records.append(dict(layer=layer, questions=len(vals), fraction_for_delta=report.mean(vals),
                            reasoning_share=report.mean([r["shares"][str(layer)]["reasoning"] for r in ok]),
                            sink_share=report.mean([r["shares"][str(layer)]["sink"] for r in ok])))
    df = pd.DataFrame.from_records(records)
    delta = config.get("delta")
    name = f"{NAME}_attention_mass"
    curves = (("fraction_for_delta", f"reasoning tokens that hold\n{delta:.0%} of its attention", "o-"),
              ("reasoning_share", "attention on the reasoning,\nall of it", "^--"),
              ("sink_share", "attention on token 0\n(the sink)", "s--"))
    # In %, as its figure and the paper's "about 20% of tokens hold 80%" (App. B.7) give it.
    percent = df.assign(**{c: 100 * df[c] for c, _, _ in curves})
    table = percent.rename(columns={c: f"{c}_%" for c, _, _ in curves})
    tables = report.write_table(
        table, report_dir, name, config,
        note + f" Mean reasoning tokens: {report.mean([r['reasoning_tokens'] for r in ok]):.1f}.",
        f"Attention mass (Appendix B.7): share of reasoning tokens (%) holding {delta:.0%} of their attention, "
        "and the attention (%) on the whole reasoning and on token 0, per layer", floatfmt=".1f")
    fig_path = _plot_mass(df, curves, report.figure_path(report_dir, name, config), config, described, note)
    summary = {f"fraction/L{r.layer}": float(r.fraction_for_delta) for r in df.itertuples()}
    summary["fraction/mean_over_layers"] = float(df.fraction_for_delta.mean())
    charts = [report.chart("attention_mass_curve", "line",
                           percent.melt(id_vars="layer", value_vars=[c for c, _, _ in curves], var_name="curve",
                                        value_name="percent"),
                           f"App. B.7: share of reasoning tokens holding {delta:.0%} of the attention (%), per layer",
                           x="layer", y="percent", stroke="curve"),
              report.chart("attention_mass", "table", table, "Attention mass per layer (%)")]
    return dict(tables=tables, figures=[fig_path], summary=summary, charts=charts, markdown=tables[0].read_text())


@style.themed
def _plot_mass(df: pd.DataFrame, curves, path: Path, config: dict, described: dict, note: str) -> Path:
    """Per layer (App. B.7): the share of reasoning tokens that holds delta of the attention, the whole
    reasoning's share and the sink's, against the paper's 20% for its own model."""
    fig, axes = style.figure(1, 1, width=5.0, height=3.4)
    fig.set_size_inches(5.0 + style.legend_room([c[1] for c in curves] + [PAPER_LINE]), 3.4)
    ax = axes[0][0]
    for (col, label, fmt), colour in zip(curves, sns.color_palette("dark", 3)):
        ax.plot(df.layer, 100 * df[col], fmt, ms=3.5, color=colour, label=label)
    _paper_line(ax)
    style.percent_axis(ax, label="share (%)")
    style.integer_axis(ax)
    ax.set(xlabel="layer", title="Attention mass over the reasoning per layer (App. B.7)")
    style.outside_legend(fig)
    return style.save(fig, path, config, described, note)


if __name__ == "__main__":
    report.main(build, __doc__)
