"""Figure 1 from a 07_prompt_modes run: accuracy against mean output tokens, S and R joined per model.

    python -m analysis.figure01 runs/07_prompt_modes/paper

One panel per benchmark; each model is two labelled points, its Simple (S, circle) and reasoning (R,
triangle) prompt, joined by a grey segment: the paper's point is that a large model answering briefly can
sit above and left of a small model reasoning at length.
"""
from __future__ import annotations

import math
from pathlib import Path

from analysis import report, style

NAME = "figure1_tokens_vs_accuracy"
MODE_TAG = {"simple": "S", "think": "R"}
MARKERS = {"simple": "o", "think": "^"}


def with_systems(df, described: dict):
    """The summary with each row's system label ('8B-S') and colour role ('large-S')."""
    df = df[df.accuracy.notna() & df.output_tokens.notna()]  # a setting whose every row failed has no point
    roles = style.model_roles(df.model, described)
    tag = [MODE_TAG.get(m, m) for m in df["mode"]]
    return df.assign(label=[f"{style.short_model(m)}-{t}" for m, t in zip(df.model, tag)],
                     role=[f"{roles[m]}-{t}" for m, t in zip(df.model, tag)])


@style.themed
def tokens_vs_accuracy(df, config: dict, described: dict, path: Path, note: str) -> Path:
    df = with_systems(df, described)
    benches = list(dict.fromkeys(df.benchmark))
    ncols = min(3, len(benches))
    nrows = math.ceil(len(benches) / ncols)
    fig, axes = style.figure(nrows, ncols, width=3.4, height=2.9)
    flat = axes.ravel()
    for ax in flat[len(benches):]:
        fig.delaxes(ax)
    labelled = []
    for ax, bench in zip(flat, benches):
        part = df[df.benchmark == bench]
        for _, m in part.groupby("model", sort=False):
            m = m.set_index("mode")
            modes = [k for k in ("simple", "think") if k in m.index]
            ax.plot([m.output_tokens[k] for k in modes], [m.accuracy[k] for k in modes], color="0.75",
                    lw=1, zorder=1)
            for k in modes:
                ax.scatter(m.output_tokens[k], m.accuracy[k], marker=MARKERS[k], s=42, zorder=3,
                           color=style.color(m.role[k]), edgecolor="white", linewidth=0.5, label=m.label[k])
        if len(part) and part.output_tokens.min() > 0:
            style.log_axis(ax)
        style.percent_axis(ax)
        ax.set(title=bench, xlabel="mean output tokens")
        labelled.append((ax, part))
    style.outside_legend(fig, title="system (S: Simple, R: reasoning)")
    for ax, part in labelled:
        style.place_labels(ax, list(zip(part.output_tokens, part.accuracy)), list(part.label),
                           [style.color(r) for r in part.role])
    fig.suptitle("Accuracy against output tokens (Figure 1)", fontsize=11)
    return style.save(fig, path, config, described, note,
                      data=dict(points=df[["benchmark", "label", "output_tokens", "accuracy"]].to_dict("records")))


def build(run_dir, report_dir) -> Path:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described, rows)
    return tokens_vs_accuracy(report.summarize(rows), config, described,
                              report.figure_path(report_dir, NAME, config), note)


if __name__ == "__main__":
    report.main(build, __doc__)
