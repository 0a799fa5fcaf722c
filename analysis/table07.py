"""Table 7 from a 07_prompt_modes run: accuracy, mean output tokens and latency per model and prompt mode.

The accuracy column is lmms-eval's score of the raw output (mai.metrics); accuracy_extracted scores
what our answer extraction reads off it, which matters for the reasoning (R) rows. Beside each accuracy, how
one-sided the answers are (analysis/bias.py): the majority answer, its share, the base rate of that answer
among the references (what giving it every time scores), "constant" at 90% or more, and how often an
answer used its whole token cap (S: --simple-tokens, R: --think-tokens).

    python -m analysis.table07 runs/07_prompt_modes/cpu
"""
from __future__ import annotations

from pathlib import Path

import seaborn as sns

from analysis import bias, paper_numbers, report, style
from analysis.figure01 import with_systems
from mai.benchmarks import get_benchmark

NAME = "table7_prompt_modes"
MODE_TAG = {"simple": "S", "think": "R"}


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described, rows)
    df = report.summarize(rows, extracted=True)
    df.insert(1, "setting", [f"{m}-{MODE_TAG.get(mode, mode)}" for m, mode in zip(df.model, df["mode"])])
    df = with_bias(df, rows, config)
    note += " " + BIAS_NOTE
    df["paper_accuracy"] = [paper_numbers.TABLE7.get((b, m, mode))
                            for b, m, mode in zip(df.benchmark, df.model, df["mode"])]
    table = df.drop(columns=["model", "mode"])
    tables = report.write_table(table, report_dir, NAME, config, note,
                                "Table 7: accuracy (%) of the raw output as the provenance line says it is scored "
                                "(accuracy_extracted: after our answer extraction), mean output tokens and latency (s) "
                                "per prompt mode")
    systems = with_systems(df, described)
    fig_path = _plot(systems, report.figure_path(report_dir, NAME, config), config, described, note)
    summary = report.stable_summary(systems, systems.role, ("accuracy", "output_tokens", "latency_s"))
    summary["errors"] = int(df.errors.sum())
    charts = [report.chart("table7_accuracy", "bar", systems.assign(bar=systems.benchmark + " · " + systems.label)[
                  ["bar", "accuracy"]], "Table 7: accuracy (%) per benchmark and system", label="bar", value="accuracy"),
              report.chart("table7", "table", table, "Table 7")]
    return dict(tables=tables, figures=[fig_path], summary=summary, charts=charts,
                markdown=tables[0].read_text())


BIAS_NOTE = ("majority: the most common answer as the benchmark's scoring reads it ('(none)': nothing read), "
             "majority_% its share; base_rate_%: the questions whose reference is that answer (what always giving "
             f"it scores); constant: {100 * bias.CONSTANT:.0f}% or more one answer, so its accuracy is that base "
             "rate and its agreements say nothing about the questions; cap_hit_%: answers that used every token "
             "of their cap (S: --simple-tokens, R: --think-tokens), read for whatever they had reached.")


def with_bias(df, rows: list[dict], config: dict):
    """The summary with each (benchmark, model, mode)'s majority answer, its share, its base rate, the
    constant flag and the cap-hit share."""
    columns = {c: [] for c in ("majority", "majority_%", "base_rate_%", "constant", "cap_hit_%")}
    for b, m, mode in zip(df.benchmark, df.model, df["mode"]):
        group = [r for r in rows if (r.get("benchmark"), r.get("model"), r.get("mode")) == (b, m, mode)
                 and not r.get("error")]
        top = bias.majority_scored(group)
        cap = config.get("think_tokens") if mode == "think" else bias.simple_cap(config, get_benchmark(b))
        hit, n = bias.cap_hits([r["output_tokens"] for r in group if r.get("output_tokens") is not None],
                               cap or float("inf"))
        columns["majority"].append(top.answer if top else None)
        columns["majority_%"].append(100 * top.share if top else None)
        columns["base_rate_%"].append(100 * top.base_rate if top else None)
        columns["constant"].append("constant" if top and top.constant else None)
        columns["cap_hit_%"].append(100 * hit / n if n and cap else None)
    return df.assign(**columns)


@style.themed
def _plot(df, path: Path, config: dict, described: dict, note: str) -> Path:
    """Accuracy (left) and mean output tokens (right) per benchmark and system, one colour per system."""
    df = df.assign(accuracy=df.accuracy.astype(float), output_tokens=df.output_tokens.astype(float))
    benches = list(dict.fromkeys(df.benchmark))
    fig, axes = style.figure(1, 2, width=max(3.6, 1.1 * len(benches) + 1.4), height=3.1)
    order = style.legend_order(df.label, df.role)
    palette = dict(zip(df.label, (style.color(r) for r in df.role)))
    for ax, (col, label) in zip(axes[0], (("accuracy", None), ("output_tokens", "mean output tokens"))):
        sns.barplot(df, x="benchmark", y=col, hue="label", hue_order=order, order=benches, palette=palette, ax=ax,
                    errorbar=None, legend=True)
        ax.set(xlabel="", title="accuracy" if col == "accuracy" else "output tokens")
        if col == "accuracy":
            style.percent_axis(ax)
        else:
            style.log_axis(ax, "y")
            ax.set_ylabel(label)
        style.benchmark_ticks(ax)
    style.outside_legend(fig, title="system")
    fig.suptitle("Prompt modes: Simple (S) and reasoning (R) prompts (Table 7)", fontsize=11)
    return style.save(fig, path, config, described, note)


if __name__ == "__main__":
    report.main(build, __doc__)
