"""Figure 1 from a 07_prompt_modes run: accuracy against mean output tokens, S and R joined per model.

    python -m analysis.figure01 runs/07_prompt_modes/paper
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from analysis import report  # noqa: E402

NAME = "figure1_tokens_vs_accuracy"


def build(run_dir, report_dir) -> Path:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described)
    df = report.summarize(rows)
    benches = list(dict.fromkeys(df.benchmark))
    fig, axes = plt.subplots(1, len(benches), figsize=(4.2 * len(benches), 3.8), squeeze=False)
    for ax, bench in zip(axes[0], benches):
        part = df[df.benchmark == bench]
        for model, m in part.groupby("model", sort=False):
            m = m.set_index("mode")
            xs = [m.output_tokens.get(k) for k in ("simple", "think") if k in m.index]
            ys = [m.accuracy.get(k) or 0 for k in ("simple", "think") if k in m.index]
            line, = ax.plot(xs, ys, "-", alpha=0.6)
            for mode, marker in (("simple", "o"), ("think", "^")):
                if mode in m.index:
                    ax.scatter(m.output_tokens[mode], m.accuracy[mode] or 0, marker=marker, s=60,
                               color=line.get_color(), label=f"{model}-{'S' if mode == 'simple' else 'R'}")
        ax.set_xscale("symlog")
        ax.set(title=bench, xlabel="mean output tokens", ylabel="accuracy (%)", ylim=(0, 100))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(note, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    path = report.figure_path(report_dir, NAME, config)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


if __name__ == "__main__":
    report.main(build, __doc__)
