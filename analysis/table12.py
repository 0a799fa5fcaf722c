"""Table 12 from a 12_speculative_decoding run: the target alone, the target with a draft (speculative
decoding) and MAI: accuracy, latency, latency against the target alone, the draft's acceptance.

    python -m analysis.table12 runs/12_speculative_decoding/cpu

Acceptance pools every verification step of a benchmark: accepted draft tokens / proposed draft tokens;
rejection = 100 - acceptance. same_text is the share of examples whose speculative text equals the
target's own: 100% in exact arithmetic (greedy verification keeps the target's tokens; tests/test_speculative.py
checks it in fp32), less in bf16, where a forward verifying several tokens rounds differently from one decoding
a token and near-ties go either way (scripts/check_batch_ties.py --speculative measures them). Every system is
summarised over the same examples (analysis.table10.same_examples): one that failed in any system is left out of all.
cached_tokens: prompt tokens per query served from a KV cache (only MAI's second stage reuses one).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from analysis import paper_numbers, report, style
from analysis.table10 import same_examples
from mai.cascade import ROUTES

NAME = "table12_speculative"
_ORDER = ("target", "speculative", "MAI")  # the systems of experiments/12_speculative_decoding.py
_PAPER = {  # (kind, column) -> the paper's number (ChartQA, 2B draft, 8B target)
    ("speculative", "paper_latency_ratio"): paper_numbers.TABLE12["spec_decode_slowdown"],
    ("speculative", "paper_rejection_%"): 100 * paper_numbers.TABLE12["draft_rejection_rate"],
    ("MAI", "paper_speedup"): paper_numbers.TABLE12["mai_vllm_speedup_over_8b_r"],
    ("MAI", "paper_accuracy"): paper_numbers.TABLE12["mai_vllm_chartqa_accuracy"],
}


def _ok(rows, benchmark, kind):
    return [r for r in rows if r["benchmark"] == benchmark and r.get("kind") == kind and not r.get("error")]


def summarize(rows: list[dict]) -> pd.DataFrame:
    rows, _ = same_examples(rows)
    df = report.summarize(rows, by=("benchmark", "system", "kind"),
                          means=(("output_tokens", "output_tokens"), ("cached_tokens", "cached_tokens"),
                                 ("latency_s", "latency")),
                          order=lambda k: (k[0], _ORDER.index(k[2]) if k[2] in _ORDER else len(_ORDER)))
    for col in ("latency_ratio", "speedup", "acceptance_%", "rejection_%", "accepted_per_step", "same_text_%",
                "mai_routes_%"):
        df[col] = None
    for bench, part in df.groupby("benchmark"):
        ref = part[part.kind == "target"]
        if len(ref) and ref.latency_s.iloc[0]:
            df.loc[part.index, "latency_ratio"] = part.latency_s / ref.latency_s.iloc[0]
            df.loc[part.index, "speedup"] = ref.latency_s.iloc[0] / part.latency_s
    for i, r in df.iterrows():
        ok = _ok(rows, r.benchmark, r.kind)
        if r.kind == "speculative" and ok:
            proposed = sum(x["draft_proposed"] for x in ok)
            accepted = sum(x["draft_accepted"] for x in ok)
            if proposed:
                df.at[i, "acceptance_%"] = 100 * accepted / proposed
                df.at[i, "rejection_%"] = 100 - 100 * accepted / proposed
            df.at[i, "accepted_per_step"] = accepted / max(sum(x["verify_steps"] for x in ok), 1)
            checked = [x["same_as_target"] for x in ok if x.get("same_as_target") is not None]
            df.at[i, "same_text_%"] = 100 * sum(checked) / len(checked) if checked else None
        if r.kind == "MAI" and ok:
            df.at[i, "mai_routes_%"] = " / ".join(
                f"{route} {100 * sum(x.get('route') == route for x in ok) / len(ok):.0f}" for route in ROUTES)
    for (kind, col), value in _PAPER.items():
        df[col] = [value if k == kind else None for k in df.kind]
    return df


def _draft_note(rows: list[dict]) -> str:
    stats = [r["stats"] for r in rows if r.get("kind") == "speculative" and r.get("stats")]
    if not stats:
        return ""
    s = stats[0]
    sees = {True: "saw the image", False: "was BLIND to the image (transformers as is)",
            None: "had no image to see (text-only questions)"}[s.get("draft_sees_image")]
    return (f" The draft {sees}; up to {s.get('num_assistant_tokens')} draft tokens per step "
            f"({s.get('num_assistant_tokens_schedule')}), draft confidence threshold "
            f"{s.get('assistant_confidence_threshold')}. Paper columns: ChartQA, 2B draft / 8B target; the paper's "
            "MAI speedup and accuracy were measured on vLLM, ours on transformers.")


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    _, excluded = same_examples(rows)
    note = (report.provenance_note(config, described, rows) + _draft_note(rows)
            + " Every system over the same examples: "
            + ", ".join(f"{b} {n} excluded" for b, n in sorted(excluded.items())) + ".")
    df = summarize(rows)
    table = df.drop(columns=["kind"])
    tables = report.write_table(table, report_dir, NAME, config, note,
                                "Table 12: speculative decoding (assisted generation) against the target alone "
                                "and MAI: accuracy (%), latency (s), acceptance (%)")
    # The target decodes with the Simple or the reasoning prompt (its name ends -S or -R): its colour is that
    # large-model system's in every other figure.
    df = df.assign(role=[("large-R" if s.endswith("-R") else "large-S") if k == "target" else style.system_role(k)
                         for s, k in zip(df.system, df.kind)])
    fig = _plot(rows, df, report.figure_path(report_dir, NAME, config), config, described, note)
    summary = report.stable_summary(df, df.kind, ("accuracy", "output_tokens", "latency_s", "latency_ratio", "speedup",
                                                  "acceptance_%", "rejection_%"))
    summary["errors"] = sum(bool(r.get("error")) for r in rows)
    summary.update({f"{b}/excluded_examples": n for b, n in excluded.items()})
    bars = df.assign(bar=df.benchmark + " · " + df.system)
    charts = [report.chart("table12_latency", "bar", bars[["bar", "latency_s"]],
                           "Table 12: mean latency per query (s)", label="bar", value="latency_s"),
              report.chart("table12_accuracy", "bar", bars[["bar", "accuracy"]], "Table 12: accuracy (%)",
                           label="bar", value="accuracy"),
              report.chart("table12", "table", table, "Table 12")]
    return dict(tables=tables, figures=[fig], summary=summary, charts=charts, markdown=tables[0].read_text())


@style.themed
def _plot(rows: list[dict], df: pd.DataFrame, path: Path, config: dict, described: dict, note: str) -> Path:
    """Mean latency (left) and accuracy (middle) per benchmark and system: the target alone, with a draft,
    and MAI; the draft tokens proposed and accepted per verification step (right)."""
    benches = list(dict.fromkeys(df.benchmark))
    width = max(2.6, 0.9 * len(benches) + 1.0)
    fig, axes = style.figure(1, 3, width=width, height=3.3)
    fig.set_size_inches(2 * width + 3.0 + style.legend_room([*df.system, "draft tokens proposed"]), 3.3)
    palette = dict(zip(df.system, map(style.color, df.role)))
    order = style.legend_order(df.system, df.role)
    data = df.assign(accuracy=df.accuracy.astype(float), latency_s=df.latency_s.astype(float))
    for ax, col in zip(axes[0][:2], ("latency_s", "accuracy")):
        sns.barplot(data, x="benchmark", y=col, hue="system", order=benches, hue_order=order, palette=palette,
                    errorbar=None, ax=ax)
        ax.set(xlabel="")
        style.benchmark_ticks(ax)
    axes[0][0].set(ylabel="mean latency per query (s)", title="latency")
    style.percent_axis(axes[0][1])
    axes[0][1].set_title("accuracy")
    ax = axes[0][2]
    spec = [r["stats"] for r in rows if r.get("kind") == "speculative" and r.get("stats") and not r.get("error")]
    accepted = [n for s in spec for n in s["step_accepted"]]
    proposed = [n for s in spec for n in s["step_proposed"]]
    top = max(accepted + proposed + [1])
    bins = [b - 0.5 for b in range(top + 2)]
    ax.hist(proposed, bins=bins, color="0.8", label="draft tokens proposed")
    ax.hist(accepted, bins=bins, alpha=0.85, color=style.color("speculative"), label="draft tokens accepted")
    style.integer_axis(ax)
    style.integer_axis(ax, "y")
    ax.set(xlabel="draft tokens per verification step", ylabel="verification steps", title="draft acceptance")
    style.outside_legend(fig)
    fig.suptitle("Token-level speculative decoding against the target alone and MAI (Table 12)", fontsize=10)
    return style.save(fig, path, config, described, note)


if __name__ == "__main__":
    report.main(build, __doc__)
