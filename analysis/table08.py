"""Table 8 from an 08_reasoning_transfer run: accuracy of S-R, M-S, L-S and L-S with S's reasoning.

    python -m analysis.table08 runs/08_reasoning_transfer/cpu
"""
from __future__ import annotations


import matplotlib

matplotlib.use("Agg")

from analysis import report  # noqa: E402

NAME = "table8_reasoning_transfer"
ORDER = ("small-R", "mid-S", "large-S", "transfer")


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described)
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
    df = df.drop(columns=["kind"])
    tables = report.write_table(df, report_dir, NAME, config, note,
                                "Table 8: reasoning transfer, accuracy (%) and tokens")
    fig = report.figure_path(report_dir, NAME, config)
    pivot = df.pivot(index="benchmark", columns="system", values="accuracy").astype(float)
    ax = pivot.plot.bar(figsize=(7, 3.8), rot=0)
    ax.set(ylabel="accuracy (%)", title="Reasoning transfer")
    report.save_figure(ax.figure, fig, note, top=0.88)
    summary = {f"{b}/{s}/accuracy": float(a) for b, s, a in zip(df.benchmark, df.system, df.accuracy)
               if a is not None}
    return dict(tables=tables, figures=[fig], summary=summary, markdown=tables[0].read_text())


if __name__ == "__main__":
    report.main(build, __doc__)
