"""Table 8 from an 08_reasoning_transfer run: accuracy of S-R, M-S, L-S and L-S with S's reasoning.

    python -m analysis.table08 runs/08_reasoning_transfer/cpu
"""
from __future__ import annotations

import seaborn as sns

from analysis import report, style
from analysis.table10 import same_examples

NAME = "table8_reasoning_transfer"
ORDER = ("small-R", "mid-S", "large-S", "transfer", "sparse transfer")


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described, rows)
    # Every system over the same questions (a run still going, or an example that failed somewhere, leaves
    # some out of all), so that a gain over large-S compares answers to the same questions.
    rows, excluded = same_examples(rows)
    if any(excluded.values()):
        note += (" Every system over the same examples: " + ", ".join(f"{b} {n} excluded" for b, n in
                                                                      sorted(excluded.items()) if n)
                 + " (answered by some systems only).")
    df = report.summarize(rows, by=("benchmark", "system", "kind"),
                          means=(("small_tokens", "small_output_tokens"), ("large_tokens", "large_output_tokens"),
                                 ("latency_s", "latency")),
                          order=lambda k: (k[0], ORDER.index(k[2]) if k[2] in ORDER else len(ORDER)))
    # The paper's question: does the transferred reasoning beat the large model's own Simple answer?
    df["gain_vs_large_S"] = None
    for _, part in df.groupby("benchmark"):
        base = part[part.kind == "large-S"].accuracy
        if len(base) and base.iloc[0] is not None:
            df.loc[part.index, "gain_vs_large_S"] = part.accuracy - base.iloc[0]
    table = df.drop(columns=["kind"])
    tables = report.write_table(table, report_dir, NAME, config, note,
                                "Table 8: reasoning transfer, accuracy (%) and tokens")
    df = df.assign(label=df.system,  # model labels are short already ('8B-S + 2B reasoning')
                   role=[style.system_role(k) for k in df.kind])
    fig = _plot(df, report.figure_path(report_dir, NAME, config), config, described, note)
    summary = report.stable_summary(df, [report.system_key(k) for k in df.kind],
                                    ("accuracy", "small_tokens", "large_tokens", "latency_s", "gain_vs_large_S"))
    charts = [report.chart("table8_accuracy", "bar", df.assign(bar=df.benchmark + " · " + df.label)[["bar", "accuracy"]],
                           "Table 8: accuracy (%) per benchmark and system", label="bar", value="accuracy"),
              report.chart("table8", "table", table, "Table 8")]
    return dict(tables=tables, figures=[fig], summary=summary, charts=charts, markdown=tables[0].read_text())


@style.themed
def _plot(df, path, config: dict, described: dict, note: str):
    """Accuracy per benchmark, one bar per system: does the small model's reasoning lift the large model's
    Simple answer (Full RT against large-S)?"""
    benches = list(dict.fromkeys(df.benchmark))
    fig, axes = style.figure(1, 1, width=max(3.0, 1.0 * len(benches) + 1.2) + style.legend_room(df.label), height=3.2)
    ax = axes[0][0]
    sns.barplot(df.assign(accuracy=df.accuracy.astype(float)), x="benchmark", y="accuracy", hue="label",
                order=benches, hue_order=style.legend_order(df.label, df.role),
                palette=dict(zip(df.label, map(style.color, df.role))), errorbar=None, ax=ax)
    style.percent_axis(ax)
    ax.set(xlabel="", title="accuracy per benchmark")
    style.benchmark_ticks(ax)
    style.outside_legend(fig, title="system")
    fig.suptitle("Reasoning transfer (Table 8)", fontsize=11)
    return style.save(fig, path, config, described, note)


if __name__ == "__main__":
    report.main(build, __doc__)
