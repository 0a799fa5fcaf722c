"""Table 7 from a 07_prompt_modes run: accuracy, mean output tokens and latency per model and prompt mode.

The accuracy column is lmms-eval's score of the raw output (mai.metrics); accuracy_extracted scores
what our answer extraction reads off it, which matters for the reasoning (R) rows.

    python -m analysis.table07 runs/07_prompt_modes/cpu
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from analysis import paper_numbers, report  # noqa: E402

NAME = "table7_prompt_modes"
MODE_TAG = {"simple": "S", "think": "R"}


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described)
    df = report.summarize(rows, extracted=True)
    df.insert(1, "setting", [f"{m}-{MODE_TAG.get(mode, mode)}" for m, mode in zip(df.model, df["mode"])])
    df["paper_accuracy"] = [paper_numbers.TABLE7.get((b, m, mode))
                            for b, m, mode in zip(df.benchmark, df.model, df["mode"])]
    table = df.drop(columns=["model", "mode"])
    tables = report.write_table(table, report_dir, NAME, config, note,
                                "Table 7: accuracy (%) as lmms-eval scores the raw output (accuracy_extracted: after "
                                "our answer extraction), mean output tokens and latency (s) per prompt mode")
    fig_path = report.figure_path(report_dir, NAME, config)
    _plot(df, fig_path, note)
    summary = {f"{b}/{s}/accuracy": a for b, s, a in zip(df.benchmark, df.setting, df.accuracy) if a is not None}
    summary["errors"] = int(df.errors.sum())
    return dict(tables=tables, figures=[fig_path], summary=summary,
                markdown=tables[0].read_text())


def _plot(df, path: Path, note: str) -> None:
    """Accuracy against mean output tokens, one panel per benchmark: the paper's efficiency argument."""
    benches = list(dict.fromkeys(df.benchmark))
    fig, axes = plt.subplots(1, len(benches), figsize=(4.2 * len(benches), 3.6), squeeze=False)
    for ax, bench in zip(axes[0], benches):
        part = df[df.benchmark == bench]
        for mode, marker in (("simple", "o"), ("think", "^")):
            sel = part[part["mode"] == mode]
            ax.scatter(sel.output_tokens, sel.accuracy.fillna(0), marker=marker, s=60,
                       label=f"{MODE_TAG[mode]} prompt")
            for _, r in sel.iterrows():
                ax.annotate(r.setting, (r.output_tokens or 0, r.accuracy or 0), fontsize=8,
                            xytext=(4, 4), textcoords="offset points")
        ax.set_xscale("symlog")
        ax.set(title=bench, xlabel="mean output tokens", ylabel="accuracy (%)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    report.save_figure(fig, path, note, top=0.9)


if __name__ == "__main__":
    report.main(build, __doc__)
