"""Table 9 and the attention-mass curve from a 09_layer_ablation run.

Per layer: accuracy of sparse transfer, mean kept reasoning tokens and the kept fraction, against Full
transfer and the large model's Simple answer; the figure shows accuracy and kept tokens over layers
(the paper: a convex token curve, L10-L14 balancing tokens and accuracy) and the fraction of reasoning
tokens holding delta of the attention mass (Appendix B.7: about 20% hold 80%). A cpu-real run (the real
weights of SmolLM2-135M-Instruct, Q4_1 GGUF dequantised, text only) gives the mass curve alone, with the
attention on the sink token beside it; the paper's 20% is its claim for Qwen3-VL-2B, another model, and is
drawn as such.

    python -m analysis.table09 runs/09_layer_ablation/cpu
"""
from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import paper_numbers, report  # noqa: E402

NAME = "table9_layer_ablation"


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described)
    if config.get("preset") == "cpu-real":
        weights = gguf_weights(described)
        if weights:  # not a released checkpoint: a quantised copy, dequantised to fp32
            note = re.sub(r"real checkpoints \([^)]*\)", weights, note)
        return _build_mass_curve(rows, config, note, report_dir)
    df = report.summarize(rows, by=("benchmark", "system", "layer"),
                          means=(("kept_tokens", "kept_tokens"), ("reasoning_tokens", "reasoning_tokens"),
                                 ("kept_fraction", "kept_fraction"), ("latency_s", "latency")),
                          order=lambda k: (k[0], -1 if k[2] is None else k[2], k[1]))
    df["layer"] = [None if v is None or v != v else int(v) for v in df.layer]
    tables = report.write_table(df, report_dir, NAME, config, note,
                                f"Table 9: sparse reasoning transfer per layer (delta {config.get('delta')})")
    fig = report.figure_path(report_dir, NAME, config)
    _plot_layers(df, fig, note, config.get("delta"))
    summary = {f"{b}/{s}/accuracy": float(a) for b, s, a in zip(df.benchmark, df.system, df.accuracy)
               if a is not None}
    return dict(tables=tables, figures=[fig], summary=summary, markdown=tables[0].read_text())


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


def _plot_layers(df: pd.DataFrame, path: Path, note: str, delta) -> None:
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for bench, part in df.groupby("benchmark"):
        sparse = part[part.layer.notna()].sort_values("layer")
        ax.plot(sparse.layer, sparse.accuracy.astype(float), "o-", label=f"{bench}: sparse")
        for _, r in part[part.layer.isna()].iterrows():
            ax.axhline(r.accuracy or 0, ls="--", lw=1, label=f"{bench}: {r.system}",
                       color="gray" if r.system == "Full" else "black")
        ax2.plot(sparse.layer, sparse.kept_tokens.astype(float), "o-", label=f"{bench}: kept tokens")
    ax.set(xlabel="layer", ylabel="accuracy (%)", title="accuracy per layer")
    ax2.set(xlabel="layer", ylabel=f"mean kept reasoning tokens (delta {delta})", title="tokens per layer")
    for a in (ax, ax2):
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    report.save_figure(fig, path, note, top=0.88)


def _build_mass_curve(rows, config, note, report_dir) -> dict:
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
    tables = report.write_table(
        df, report_dir, name, config, note + f" Mean reasoning tokens: {report.mean([r['reasoning_tokens'] for r in ok]):.1f}.",
        f"Attention mass (Appendix B.7): fraction of reasoning tokens holding {delta:.0%} of their attention, per layer",
        floatfmt=".3f")
    fig_path = report.figure_path(report_dir, name, config)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.plot(df.layer, df.fraction_for_delta, "o-", label=f"fraction of reasoning tokens holding {delta:.0%}")
    ax.plot(df.layer, df.sink_share, "s--", label="attention on token 0 (sink)")
    ax.plot(df.layer, df.reasoning_share, "^--", label="attention on the reasoning, all of it")
    ax.axhline(paper_numbers.APPENDIX_B7["fraction_of_tokens_for_80pct_mass"], color="gray", lw=1, ls=":",
               label="the paper's claim for another model (Qwen3-VL-2B): ~20% hold 80%")
    ax.set(xlabel="layer", ylabel="fraction", ylim=(0, 1), title="Attention mass over the reasoning, per layer")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    report.save_figure(fig, fig_path, note, top=0.86)
    summary = {f"fraction/L{r.layer}": float(r.fraction_for_delta) for r in df.itertuples()}
    summary["fraction/mean_over_layers"] = float(df.fraction_for_delta.mean())
    return dict(tables=tables, figures=[fig_path], summary=summary, markdown=tables[0].read_text())


if __name__ == "__main__":
    report.main(build, __doc__)
