"""Table 12 from a 12_speculative_decoding run: the target alone, the target with a draft (speculative
decoding) and MAI: accuracy, latency, latency against the target alone, the draft's acceptance.

    python -m analysis.table12 runs/12_speculative_decoding/cpu

Acceptance pools every verification step of a benchmark: accepted draft tokens / proposed draft tokens;
rejection = 100 - acceptance. same_text is the share of examples whose speculative text equals the
target's own (greedy decoding makes it 100% unless something is wrong). Every system is summarised over
the same examples (analysis.table10.same_examples): one that failed in any system is left out of all.
cached_tokens: prompt tokens per query served from a KV cache (only MAI's second stage reuses one).
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import paper_numbers, report  # noqa: E402
from analysis.table10 import same_examples  # noqa: E402
from mai.cascade import ROUTES  # noqa: E402

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
    sees = "saw the image" if s.get("draft_sees_image") else "was BLIND to the image (transformers as is)"
    return (f" The draft {sees}; up to {s.get('num_assistant_tokens')} draft tokens per step "
            f"({s.get('num_assistant_tokens_schedule')}), draft confidence threshold "
            f"{s.get('assistant_confidence_threshold')}. Paper columns: ChartQA, 2B draft / 8B target; the paper's "
            "MAI speedup and accuracy were measured on vLLM, ours on transformers.")


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    _, excluded = same_examples(rows)
    note = (report.provenance_note(config, described) + _draft_note(rows) + " Every system over the same examples: "
            + ", ".join(f"{b} {n} excluded" for b, n in sorted(excluded.items())) + ".")
    df = summarize(rows)
    table = df.drop(columns=["kind"])
    tables = report.write_table(table, report_dir, NAME, config, note,
                                "Table 12: speculative decoding (assisted generation) against the target alone "
                                "and MAI: accuracy (%), latency (s), acceptance (%)")
    fig = report.figure_path(report_dir, NAME, config)
    _plot(rows, df, fig, note)
    summary = {}
    for _, r in df.iterrows():
        for col in ("accuracy", "latency_s", "latency_ratio", "speedup", "acceptance_%", "rejection_%"):
            if r[col] is not None and r[col] == r[col]:
                summary[f"{r.benchmark}/{r.kind}/{col}"] = float(r[col])
    summary["errors"] = sum(bool(r.get("error")) for r in rows)
    summary.update({f"{b}/excluded_examples": n for b, n in excluded.items()})
    return dict(tables=tables, figures=[fig], summary=summary, markdown=tables[0].read_text())


def _plot(rows: list[dict], df: pd.DataFrame, path: Path, note: str) -> None:
    """Per-example latency of each system (left); accepted draft tokens per verification step (right)."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    bench = df.benchmark.iloc[0] if len(df) else None
    ids = list(dict.fromkeys(r["example_id"] for r in rows if r["benchmark"] == bench))
    kinds = [k for k in _ORDER if k in set(df.kind)]
    width = 0.8 / max(len(kinds), 1)
    for j, kind in enumerate(kinds):
        latency = {r["example_id"]: r["latency"] for r in _ok(rows, bench, kind)}
        label = df[(df.benchmark == bench) & (df.kind == kind)].system.iloc[0]
        ax.bar([i + j * width for i in range(len(ids))], [latency.get(e, 0.0) for e in ids], width, label=label)
    ax.set_xticks([i + width * (len(kinds) - 1) / 2 for i in range(len(ids))], [str(i) for i in range(len(ids))])
    ax.set(xlabel=f"example ({bench})", ylabel="latency (s)", title="latency per query")
    ax.legend(fontsize=8)
    steps = [n for r in rows if r.get("kind") == "speculative" and r.get("stats")
             for n in r["stats"]["step_accepted"]]
    proposed = [n for r in rows if r.get("kind") == "speculative" and r.get("stats")
                for n in r["stats"]["step_proposed"]]
    top = max(steps + proposed + [1])
    bins = [b - 0.5 for b in range(top + 2)]
    ax2.hist(proposed, bins=bins, alpha=0.5, label="proposed")
    ax2.hist(steps, bins=bins, alpha=0.7, label="accepted")
    ax2.set_xticks(range(top + 1))
    ax2.set(xlabel="draft tokens per verification step", ylabel="steps", title="draft acceptance")
    ax2.legend(fontsize=8)
    report.save_figure(fig, path, note, top=0.9)


if __name__ == "__main__":
    report.main(build, __doc__)
