"""Accuracy against batch-1 latency for every system measured, one panel per task, with the Pareto frontier
(issue 37, part 5): what MAI's speed costs in accuracy beside what the single models and the other
multi-agent systems pay.

    python -m analysis.pareto --preset cpu-real --report-dir .    # figures/pareto.cpu-real.{png,pdf,json}

A point is a system on a task: its accuracy with Wilson's 95% interval (analysis.claims.wilson) against its
mean latency per query at batch size 1 with a percentile bootstrap interval of that mean over the queries
(analysis.claims.bootstrap, the claims' seed). Where each comes from:

- Table 10's systems (the large and small model with Simple (S) or reasoning (R) prompts, Full RT, MAI in both
  verification variants with the run's transfer): accuracy over the run's questions (runs/10_mai/<preset>);
  latency from its batch-1 sample (runs/10_mai/<preset>-latency, analysis.table10.latency_sample) when the run
  itself went in stage-major batches, whose times are batch shares, not latencies;
- Table 12's systems (the target reasoning alone, speculative decoding, MAI with that run's transfer):
  accuracy and latency over its own questions, one query at a time (drawn as squares: another sample);
- a model and prompt measured only in stage-major batches (Table 7's, e.g. the small model's Simple answer):
  its accuracy as a dotted line across the panel, no point: the two kinds of time are never mixed.

The frontier joins the points no other point beats on both axes (lower or equal latency and higher or equal
accuracy, one of them strictly), read on the estimates; the intervals show how far apart they really are.
"""
from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from matplotlib.lines import Line2D

from analysis import report, style
from analysis.claims import RUNS, bootstrap, transfer_words, wilson
from analysis.table07 import MODE_TAG
from analysis.table10 import latency_sample, same_examples, system_label
from mai.benchmarks import get_benchmark

NAME = "pareto"
SOURCES = {"10": "o", "12": "s"}  # marker per run a point's numbers come from
FRONTIER = "the frontier (outlined points)"


@dataclass
class Point:
    """One system on one task: accuracy (%) and its interval over acc_n questions, mean batch-1 latency (s)
    and its interval over lat_n queries (None: not measured one query at a time)."""
    bench: str
    label: str
    role: str
    source: str  # "10" or "12": the run (analysis.claims.RUNS)
    acc: float
    acc_lo: float
    acc_hi: float
    acc_n: int
    lat: float | None = None
    lat_lo: float | None = None
    lat_hi: float | None = None
    lat_n: int = 0
    frontier: bool = False


def frontier(points: list[tuple[float, float]]) -> list[int]:
    """The indices of the (latency, accuracy) points no other point dominates (no slower and no less accurate,
    better on one), in order of latency: the Pareto frontier of faster-and-more-accurate."""
    keep = []
    for i, (lat, acc) in enumerate(points):
        beaten = any(l2 <= lat and a2 >= acc and (l2 < lat or a2 > acc) for j, (l2, a2) in enumerate(points) if j != i)
        if not beaten:
            keep.append(i)
    return sorted(keep, key=lambda i: (points[i][0], points[i][1]))


def _accuracy(rows: list[dict]) -> tuple[float, float, float, int]:
    bench = get_benchmark(rows[0]["benchmark"])
    scores = bench.row_scores(rows)
    lo, hi = wilson(sum(scores), len(scores))
    return 100 * float(np.mean(scores)), 100 * lo, 100 * hi, len(scores)


def _latency(rows: list[dict]) -> tuple[float, float, float, int] | None:
    times = [float(r["latency"]) for r in rows if r.get("latency") is not None]
    if not times:
        return None
    lo, hi = bootstrap(lambda a: a.mean(axis=1), times)
    return float(np.mean(times)), lo, hi, len(times)


def _with_latency(point: Point, rows: list[dict]) -> Point:
    found = _latency(rows) if rows else None
    if found:
        point.lat, point.lat_lo, point.lat_hi, point.lat_n = found
    return point


def table10_points(run_dir: Path) -> tuple[list[Point], dict]:
    config, rows, described = report.load_run(run_dir)
    rows, _ = same_examples(rows)
    timed = rows if config.get("order", "example") == "example" else None
    if timed is None:
        sample = latency_sample(run_dir)
        timed = same_examples(sample[0])[0] if sample else []
    transfer = transfer_words(config).split(" (")[0]
    points = []
    keys = dict.fromkeys((r["benchmark"], r["system"], r.get("kind"), r.get("verify")) for r in rows)
    for bench, system, kind, verify in keys:
        mine = [r for r in rows if r["benchmark"] == bench and r["system"] == system]
        label = system_label(system, kind, verify) + (f", {transfer}" if kind == "MAI" else "")
        point = Point(bench, label, style.system_role(kind, verify), "10", *_accuracy(mine))
        points.append(_with_latency(point, [r for r in timed if r["benchmark"] == bench and r["system"] == system]))
    return points, dict(config=config, described=described, rows=rows)


def table07_lines(run_dir: Path, measured: set[tuple[str, str]]) -> list[Point]:
    """The models and prompts of a Table 7 run that no run measured one query at a time (their label not among
    `measured` (bench, label)): accuracy only."""
    config, rows, described = report.load_run(run_dir)
    rows = [r for r in rows if not r.get("error")]
    roles = style.model_roles([r["model"] for r in rows], described)
    out = []
    for bench, model, mode in dict.fromkeys((r["benchmark"], r["model"], r["mode"]) for r in rows):
        tag = MODE_TAG.get(mode, mode)
        label = f"{style.short_model(model)}-{tag}"
        if (bench, label) in measured:
            continue
        mine = [r for r in rows if (r["benchmark"], r["model"], r["mode"]) == (bench, model, mode)]
        out.append(Point(bench, label, f"{roles[model]}-{tag}", "07", *_accuracy(mine)))
    return out


def table12_points(run_dir: Path) -> list[Point]:
    config, rows, _ = report.load_run(run_dir)
    rows, _ = same_examples(rows)
    transfer = transfer_words(config).split(" (")[0]
    verify = (config.get("cascade") or {}).get("verify") or "answer"
    points = []
    for bench, system, kind in dict.fromkeys((r["benchmark"], r["system"], r.get("kind")) for r in rows):
        mine = [r for r in rows if r["benchmark"] == bench and r["system"] == system]
        if kind == "MAI":
            label = f"{system_label(system, kind, verify)}, {transfer} (Table 12)"
        elif kind == "speculative":
            label = f"speculative decoding ({system})"
        else:
            label = f"{system} (Table 12)"
        role = "large-R" if kind == "target" and system.endswith("-R") else style.system_role(kind, verify)
        points.append(_with_latency(Point(bench, label, role, "12", *_accuracy(mine)), mine))
    return points


def collect(runs: Path, run_name: str) -> tuple[list[Point], dict]:
    """Every system's point (or accuracy-only line) on every task of the preset's runs."""
    t10 = Path(runs) / RUNS["10"] / run_name
    if not (t10 / "results.jsonl").exists():
        raise SystemExit(f"error: no Table 10 run at {t10}")
    points, context = table10_points(t10)
    t12 = Path(runs) / RUNS["12"] / run_name
    if (t12 / "results.jsonl").exists():
        points += table12_points(t12)
    t07 = Path(runs) / RUNS["07"] / run_name
    if (t07 / "results.jsonl").exists():
        measured = {(p.bench, p.label) for p in points}
        points += table07_lines(t07, measured)
    benches = sorted({p.bench for p in points}, key=report.benchmark_rank)
    for bench in benches:
        timed = [p for p in points if p.bench == bench and p.lat is not None]
        for i in frontier([(p.lat, p.acc) for p in timed]):
            timed[i].frontier = True
    return points, dict(context, benches=benches)


def build(runs: Path, run_name: str, report_dir) -> dict:
    points, context = collect(runs, run_name)
    config, described = context["config"], context["described"]
    note = (report.provenance_note(config, described, context["rows"]).split(" Accuracy is")[0]
            + " Accuracy (%) with Wilson's 95% interval over each run's questions; mean latency per query at batch "
              "size 1 with a percentile bootstrap interval of the mean (analysis/pareto.py). Table 10's systems: "
              "accuracy over its run, latency over its batch-1 sample; Table 12's (squares): both over its own "
              "questions. A system measured only in stage-major batches has no batch-1 latency: a dotted line at "
              "its accuracy, no point. The frontier joins the points no other is both faster and more accurate "
              "than, on the estimates.")
    path = plot(points, context["benches"], report.figure_path(report_dir, NAME, config), config, described, note)
    return dict(figures=[path], points=points)


@style.themed
def plot(points: list[Point], benches: list[str], path: Path, config: dict, described: dict, note: str) -> Path:
    """One panel per task: each timed system as a point with both intervals, the frontier as a staircase,
    the untimed systems' accuracy as dotted lines."""
    ncols = min(2, max(1, len(benches)))
    nrows = max(1, -(-len(benches) // ncols))
    fig, axes = style.figure(nrows, ncols, width=4.2, height=3.3)
    flat = axes.ravel()
    for ax in flat[len(benches):]:
        fig.delaxes(ax)
    rank = {r: i for i, r in enumerate(style.SYSTEM_COLORS)}
    # One legend entry a system, drawn plainly: the outline marks a frontier point in its panel only.
    entries: dict[str, Line2D] = {}
    for ax, bench in zip(flat, benches):
        mine = sorted((p for p in points if p.bench == bench), key=lambda p: (rank.get(p.role, len(rank)), p.label))
        timed = [p for p in mine if p.lat is not None]
        for p in timed:
            xerr = [[p.lat - p.lat_lo], [p.lat_hi - p.lat]] if p.lat_lo == p.lat_lo else None
            ax.errorbar(p.lat, p.acc, xerr=xerr, yerr=[[p.acc - p.acc_lo], [p.acc_hi - p.acc]],
                        fmt=SOURCES.get(p.source, "o"), ms=5.5, capsize=2, elinewidth=0.8, color=style.color(p.role),
                        markeredgecolor="white" if not p.frontier else "black", markeredgewidth=0.8, zorder=3,
                        label=p.label)
            entries.setdefault(p.label, Line2D([], [], ls="none", marker=SOURCES.get(p.source, "o"), ms=5.5,
                                               color=style.color(p.role), markeredgecolor="white"))
        front = sorted((p for p in timed if p.frontier), key=lambda p: p.lat)
        if front:
            ax.plot([p.lat for p in front], [p.acc for p in front], drawstyle="steps-post", color="0.2", lw=1,
                    ls="--", zorder=2)
            entries.setdefault(FRONTIER, Line2D([], [], color="0.2", lw=1, ls="--", marker="o", ms=5.5,
                                                markerfacecolor="white", markeredgecolor="black"))
        for p in mine:
            if p.lat is None:
                ax.axhline(p.acc, color=style.color(p.role), ls=":", lw=1.4, zorder=1)
                entries.setdefault(f"{p.label}: no batch-1 latency (its accuracy)",
                                   Line2D([], [], color=style.color(p.role), ls=":", lw=1.4))
        style.percent_axis(ax)
        if timed:
            style.log_axis(ax, "x")
        ax.set(title=bench, xlabel="mean latency per query at batch 1 (s)")
    order = sorted(entries, key=lambda label: label != FRONTIER)  # the frontier first, then as drawn
    title = "system (circle: Table 10 run,\nsquare: Table 12 run)"
    # The legend sits beside the panels: the figure widens by what it needs, the panels keep their width.
    fig.set_size_inches(4.2 * ncols + style.legend_room([*order, title]), 3.3 * nrows + 0.6)
    style.outside_legend(fig, [entries[x] for x in order], order, title=title)
    fig.suptitle("Accuracy against batch-1 latency, 95% intervals, per task", fontsize=10)
    data = dict(points=[asdict(p) for p in points],
                frontier={b: [p.label for p in sorted((p for p in points if p.bench == b and p.frontier),
                                                      key=lambda p: p.lat)] for b in benches},
                no_batch1_latency={b: [p.label for p in points if p.bench == b and p.lat is None] for b in benches})
    return style.save(fig, path, config, described, note, data=data)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-real", help="the run name of every experiment read (default cpu-real)")
    ap.add_argument("--runs", default="runs", help="runs directory (default: runs)")
    ap.add_argument("--report-dir", help="where figures/ goes (default: RUNS/claims/PRESET; the repository's: .)")
    args = ap.parse_args(argv)
    out = build(Path(args.runs), args.preset, args.report_dir or Path(args.runs) / "claims" / args.preset)
    print(out["figures"][0])


if __name__ == "__main__":
    main()
