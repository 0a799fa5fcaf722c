"""Table 10 from a 10_mai run: accuracy, route fractions, tokens per model, latency and speedup over L-R.

    python -m analysis.table10 runs/10_mai/cpu

A run with forced routes (10_mai --force-routes) says so in its caption and note; a run with a latency
profile (10_mai --latency-profile) gets the latency model's prediction beside each measured latency
(predicted_s, call by call from the same calls' token counts) and, with forced routes, the model's MAI
latency and speedup at exactly the forced fractions.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from analysis import bias, latency_model, paper_numbers, report, style
from mai import MaiError
from mai.benchmarks import get_benchmark
from mai.cascade import ROUTES

NAME = "table10_mai"
_ORDER = ("large-S", "large-R", "small-R", "Full RT", "MAI")  # the systems of experiments/10_mai.py
_VERIFY = ("answer", "reasoning")  # MAI's rows: two-stage answer (Sec. 5.1), then the simplified framework


def same_examples(rows: list[dict]) -> tuple[list[dict], dict[str, int]]:
    """The rows of the examples every system answered without error, and per benchmark how many examples
    were excluded: an example that failed (or is missing) in one system is left out of every system's
    numbers, so each system's means are over the same examples."""
    systems: dict[str, set] = {}
    answered: dict[tuple, set] = {}
    for r in rows:
        systems.setdefault(r["benchmark"], set()).add(r["system"])
        if not r.get("error"):
            answered.setdefault((r["benchmark"], r["example_id"]), set()).add(r["system"])
    everywhere = {key for key, done in answered.items() if done == systems[key[0]]}
    kept = [r for r in rows if (r["benchmark"], r["example_id"]) in everywhere]
    excluded = {b: len({r["example_id"] for r in rows if r["benchmark"] == b}) - sum(k[0] == b for k in everywhere)
                for b in systems}
    return kept, excluded


def summarize(rows: list[dict]) -> pd.DataFrame:
    """One line per (benchmark, system) over the examples every system answered (same_examples)."""
    rows, _ = same_examples(rows)
    predicted = any("predicted" in r for r in rows)
    df = report.summarize(rows, by=("benchmark", "system", "kind", "verify"),
                          means=(("small_tokens", "small_output_tokens"), ("large_tokens", "large_output_tokens"),
                                 ("cached_tokens", "cached_tokens"), ("latency_s", "latency"),
                                 *((("predicted_s", "predicted"),) if predicted else ())),
                          order=lambda key: (key[0], _ORDER.index(key[2]) if key[2] in _ORDER else len(_ORDER),
                                             _VERIFY.index(key[3]) if key[3] in _VERIFY else -1, key[1]))
    # Route fractions, MAI only, each beside the accuracy of the queries that took it: an agreement is
    # counted whether it is right or wrong, so a route's share alone does not say it answered well.
    for route in ROUTES:
        df[f"route_{route}"] = None
        df[f"route_{route}_acc"] = None
    for i, r in df[df.kind == "MAI"].iterrows():
        ok = [x for x in rows if x["benchmark"] == r.benchmark and x["system"] == r.system and not x.get("error")]
        scores = get_benchmark(r.benchmark).row_scores(ok) if ok else []
        for route in ROUTES:
            took = [s for x, s in zip(ok, scores) if x.get("route") == route]
            df.at[i, f"route_{route}"] = len(took) / len(ok) if ok else None
            df.at[i, f"route_{route}_acc"] = 100 * sum(took) / len(took) if took else None
    # Speedup over the large model with its reasoning prompt (the paper's reference), per benchmark.
    df["speedup_vs_R"] = None
    for _, part in df.groupby("benchmark"):
        ref = part[part.kind == "large-R"]
        if len(ref) and ref.latency_s.iloc[0]:
            df.loc[part.index, "speedup_vs_R"] = ref.latency_s.iloc[0] / part.latency_s
    return df


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described, rows)
    memory_path = Path(run_dir) / "memory.json"
    if memory_path.exists():
        mem = json.loads(memory_path.read_text())
        note += " Peak memory with both models: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(mem.items())) + "."
    note += scale_note(config)
    _, excluded = same_examples(rows)
    if excluded:
        note += (" Every system over the same examples: " + ", ".join(f"{b} {n} excluded"
                                                                       for b, n in sorted(excluded.items()))
                 + " (an example that failed in any system is left out of all).")
    note += (" cached_tokens: prompt tokens per query served from a KV cache instead of a prefill; caches are "
             "emptied between systems, so all of it is reuse inside one query (MAI's second stage extends its "
             "first stage; on vLLM a later call of a query may also reuse an earlier call's prefix).")
    caption = "Table 10: MAI against single-model baselines and Full reasoning transfer"
    agree = (config.get("cascade") or {}).get("agree")
    if agree:  # the matcher decides every route (mai.answers; --agree)
        caption += f" (agreement: {agree})"
    forced = config.get("force_routes")
    if forced:
        routes = ", ".join(f"{r} {forced[r]:.2f}" for r in ROUTES)
        caption += f" (routes forced: {routes})"
        note = (f"Routes forced ({routes}; drawn per example), every output length forced to its limit: a "
                f"latency study, accuracies and routes are not MAI's decisions. " + note)
    prediction = predict(config, rows)
    if prediction:
        rows, text = prediction
        note += " " + text
    df = with_constant(summarize(rows), rows, config)
    note += " " + ROUTES_NOTE
    sample = latency_sample(Path(run_dir))
    if sample is not None:
        df, text = sample_latency(df, *sample)
        note += " " + text
        if config.get("order") == "stage":
            note += " " + batch_invariance_note(rows, sample[0], config.get("batch_size"))
    if "chartqa" in set(df.benchmark):
        note += " paper_accuracy: the paper reports one MAI accuracy on ChartQA; it is printed beside both MAI rows."
        df["paper_accuracy"] = [paper_numbers.TABLE10_CHARTQA.get("MAI" if k == "MAI" else s) if b == "chartqa"
                                else None for b, s, k in zip(df.benchmark, df.system, df.kind)]
    table = df.drop(columns=["kind", "verify"])
    tables = report.write_table(table, report_dir, NAME, config, note, caption)
    df = df.assign(label=[system_label(s, k, v) for s, k, v in zip(df.system, df.kind, df.verify)],
                   role=[style.system_role(k, v) for k, v in zip(df.kind, df.verify)],
                   key=[report.system_key(k, v) for k, v in zip(df.kind, df.verify)])
    fig = _plot(df, report.figure_path(report_dir, NAME, config), config, described, note)
    summary = {f"{b}/excluded_examples": n for b, n in excluded.items()}
    summary.update(report.stable_summary(df, df.key, (
        "accuracy", "small_tokens", "large_tokens", "cached_tokens", "latency_s", "predicted_s", "speedup_vs_R",
        *[f"route_{x}" for x in ROUTES])))
    bars = df.assign(bar=df.benchmark + " · " + df.label)
    mai = df[df.kind == "MAI"]
    routes = pd.DataFrame([dict(bar=f"{r.benchmark} · {r.label} · {x}", percent=100 * float(r[f"route_{x}"]))
                           for _, r in mai.iterrows() for x in ROUTES if r[f"route_{x}"] is not None])
    charts = [report.chart("table10_accuracy", "bar", bars[["bar", "accuracy"]],
                           "Table 10: accuracy (%) per benchmark and system", label="bar", value="accuracy"),
              report.chart("table10_speedup", "bar", bars[["bar", "speedup_vs_R"]],
                           "Table 10: speedup over the large model with reasoning", label="bar", value="speedup_vs_R"),
              report.chart("table10_latency_accuracy", "scatter", bars[["bar", "latency_s", "accuracy"]],
                           "Table 10: accuracy (%) against latency (s)", x="latency_s", y="accuracy"),
              report.chart("table10", "table", table, "Table 10")]
    if len(routes):
        charts.insert(2, report.chart("table10_routes", "bar", routes, "Table 10: MAI routes (% of queries)",
                                      label="bar", value="percent"))
    return dict(tables=tables, figures=[fig], summary=summary, charts=charts, markdown=tables[0].read_text())


ROUTES_NOTE = ("route_X: the share of MAI's queries that stopped at route X; route_X_acc: the accuracy (%) of those "
               "queries. constant: a side of an agreement MAI counts whose answers are "
               f"{100 * bias.CONSTANT:.0f}% or more one answer (its majority answer and share; analysis/bias.py): "
               "its agreements track how often the other side gives that answer, not the question.")


def with_constant(df: pd.DataFrame, rows: list[dict], config: dict) -> pd.DataFrame:
    """MAI's lines with the constant sides of the agreements each counts ("0.5B-S 'no' 100%"), else None."""
    rows, _ = same_examples(rows)
    flags = []
    for b, s, k in zip(df.benchmark, df.system, df.kind):
        mine = [r for r in rows if r["benchmark"] == b and r["system"] == s] if k == "MAI" else []
        sides = {side.who: side.majority for route in bias.agreement_sides(mine, config).values() for side in route}
        constant = [f"{who} '{m.answer}' {100 * m.share:.0f}%" for who, m in sides.items() if m.constant]
        flags.append("; ".join(constant) or None)
    at = list(df.columns).index(f"route_{ROUTES[-1]}_acc") + 1
    df = df.copy()
    df.insert(at, "constant", flags)
    return df


def system_label(system: str, kind: str, verify) -> str:
    """A figure's short name for a system: '8B-S', 'Full RT', 'MAI two-stage', 'MAI simplified'."""
    if kind == "MAI":
        return "MAI simplified" if verify == "reasoning" else "MAI two-stage"
    return system


def _forced_note(costs, labels, q, forced, verify, config, ok, large_r) -> str:
    """The model's MAI latency at exactly the forced fractions for one verification variant, beside the
    measurement of that variant's rows."""
    p = latency_model.predict_mai(costs[labels["small"]], costs[labels["large"]], q, forced, verify,
                                  config.get("transfer", "full"))
    mai_rows = [r for r in ok if r.get("kind") == "MAI" and (r.get("verify") or "answer") == verify]
    mai = [r["latency"] for r in mai_rows]
    text = (f" MAI verify={verify}: at the forced fractions the model predicts {p['mai_s']:.3f} s per query and "
            f"{labels['large']}-R {p['large_r_s']:.3f} s (speedup {p['speedup']:.2f}x)")
    if mai and large_r:
        realised = ", ".join(f"{x} {sum(r.get('route') == x for r in mai_rows) / len(mai):.2f}" for x in ROUTES)
        m, lr = sum(mai) / len(mai), sum(large_r) / len(large_r)
        text += f"; measured {m:.3f} s (routes realised: {realised}), {labels['large']}-R {lr:.3f} s " \
                f"(speedup {lr / m:.2f}x)"
        # The draw realises the fractions only on average: each route's measured mean, weighted by the forced
        # fraction, is the measurement at exactly those fractions.
        by_route = {x: [r["latency"] for r in mai_rows if r.get("route") == x] for x in ROUTES}
        if all(by_route[x] for x in ROUTES if forced[x] > 0):
            at = sum(forced[x] * sum(by_route[x]) / len(by_route[x]) for x in ROUTES if forced[x] > 0)
            text += f"; measured at the forced fractions (route means reweighted) {at:.3f} s (speedup {lr / at:.2f}x)"
    return text + "."


def predict(config: dict, rows: list[dict]) -> tuple[list[dict], str] | None:
    """With a latency profile in the config: the rows with their predicted latency, and a note on it."""
    paths = config.get("latency_profile") or []
    paths = [paths] if isinstance(paths, str) else paths
    if not paths or not all(Path(p).exists() for p in paths):
        return None
    costs = latency_model.profile(*paths)
    labels = latency_model.run_labels(config)
    latency_model.check_models(costs, labels)
    predicted = {r["key"]: r["predicted"] for r in latency_model.predict_rows(rows, costs, labels)}
    rows = [{**r, "predicted": predicted[r["key"]]} if r.get("key") in predicted else r for r in rows]
    text = (f"predicted_s: the latency model (analysis/latency_model.py) fitted on the profile "
            f"{' + '.join(Path(p).name for p in paths)}, call by call over each row's calls.")
    forced = config.get("force_routes")
    if forced:
        ok = [r for r in rows if not r.get("error")]
        try:
            q = latency_model.query_from_rows(ok, labels)
        except MaiError as err:
            return rows, text + f" No prediction at the forced fractions: {err}."
        verifies = sorted({r.get("verify") or "answer" for r in ok if r.get("kind") == "MAI"})
        large_r = [r["latency"] for r in ok if r.get("kind") == "large-R"]
        for verify in verifies:
            text += _forced_note(costs, labels, q, forced, verify, config, ok, large_r)
    return rows, text


LATENCY_SUFFIX = "-latency"  # the batch-1 latency sample of a stage-major run: runs/10_mai/<run>-latency


def latency_sample(run_dir: Path) -> tuple[list[dict], dict] | None:
    """The rows and config of the run's batch-1 latency sample (a sibling run named <run>-latency, run with
    --order example on the first --limit questions of the same ones), when it exists."""
    sibling = run_dir.parent / (run_dir.name + LATENCY_SUFFIX)
    if not (sibling / "results.jsonl").exists():
        return None
    config, rows, _ = report.load_run(sibling)
    if config.get("order", "example") != "example":
        raise MaiError(f"{sibling}: a latency sample must run one query at a time (--order example)")
    config["run_dir"] = f"{run_dir.parent.name}/{sibling.name}"
    return rows, config


def sample_latency(df: pd.DataFrame, rows: list[dict], config: dict) -> tuple[pd.DataFrame, str]:
    """Table 10's latency columns from the batch-1 sample instead of the stage-major batch shares: mean,
    median and 90th percentile per (benchmark, system), and the speedup over the large model reasoning by
    means and by medians (one slow query moves a mean, not a median)."""
    rows, _ = same_examples(rows)
    ok = pd.DataFrame([r for r in rows if not r.get("error")])
    df = df.copy()
    for column in ("latency_n", "latency_s", "latency_median_s", "latency_p90_s", "speedup_vs_R",
                   "speedup_vs_R_median"):
        df[column] = None
    if ok.empty:
        return df, "Latency: the batch-1 sample has no rows yet."
    stats = ok.groupby(["benchmark", "system"]).latency.agg(["count", "mean", "median", lambda s: s.quantile(0.9)])
    stats.columns = ["n", "mean", "median", "p90"]
    for i, r in df.iterrows():
        if (r.benchmark, r.system) in stats.index:
            s = stats.loc[(r.benchmark, r.system)]
            df.loc[i, ["latency_n", "latency_s", "latency_median_s", "latency_p90_s"]] = [
                int(s.n), s["mean"], s["median"], s.p90]
    for _, part in df.groupby("benchmark"):
        ref = part[part.kind == "large-R"]
        if len(ref) and ref.latency_s.iloc[0]:
            df.loc[part.index, "speedup_vs_R"] = ref.latency_s.iloc[0] / part.latency_s
            df.loc[part.index, "speedup_vs_R_median"] = ref.latency_median_s.iloc[0] / part.latency_median_s
    text = (f"Latency (latency_s the mean, with median and p90) and speedups from the batch-1 sample "
            f"runs/{config['run_dir']} ({config.get('limit')} questions a task, one query at a "
            f"time, the paper's setting; latency_n its rows), not from this run's batch shares; speedup_vs_R by "
            f"means, speedup_vs_R_median by medians.")
    return df, text


def paired_with_batched(batched: list[dict], single: list[dict]):
    """(batch-1 row, stage-major row) for each query of the batch-1 sample that both runs answered without error."""
    by_key = {(r["example_id"], r["system"]): r for r in batched if not r.get("error")}
    for r in single:
        other = by_key.get((r["example_id"], r["system"]))
        if not r.get("error") and other is not None:
            yield r, other


def batch_invariance(batched: list[dict], single: list[dict]) -> dict[str, tuple[int, int, int]]:
    """system -> (queries whose output text is the same, whose scored answer is the same, queries compared):
    each query of the batch-1 sample against the same query of the stage-major run. Greedy decoding in
    batches should give batch-1's outputs; where it does not, padding and batch shape changed the arithmetic
    enough to flip a near tie, and a long reasoning has many chances to (its answer may still agree)."""
    out: dict[str, list[int]] = {}
    for r, other in paired_with_batched(batched, single):
        counts = out.setdefault(r["system"], [0, 0, 0])
        counts[0] += r.get("prediction") == other.get("prediction")
        counts[1] += r.get("answer") == other.get("answer")
        counts[2] += 1
    return {system: tuple(c) for system, c in out.items()}


def batch_invariance_note(batched: list[dict], single: list[dict], batch_size) -> str:
    counts = batch_invariance(batched, single)
    if not counts:
        return "Batched against batch-1 outputs: no query in both runs yet."
    text, answer, n = (sum(c[i] for c in counts.values()) for i in range(3))
    return (f"Batched against batch-1 outputs: on the {n} queries in both runs, the batches of {batch_size} gave "
            f"the batch-1 sample's text on {text} and its answer on {answer} ("
            + ", ".join(f"{system} {c[0]}/{c[1]}/{c[2]}" for system, c in counts.items())
            + ": text/answer/queries). A difference is expected where the batch's padding and shapes change "
              "the bf16 arithmetic and greedy decoding meets a near tie; a long reasoning meets more of them "
              "(scripts/check_batch_ties.py measures the logit gap where each pair parts).")


def scale_note(config: dict) -> str:
    """How the run was served, when not the paper's way (transformers, one query at a time)."""
    note = ""
    if config.get("backend", "hf") != "hf":
        note += (f" Backend {config['backend']} (tensor parallel {config.get('tensor_parallel', 1)}); peak memory "
                 "counts this process only, not the vLLM engines' reserved share of the GPU.")
    if config.get("merged_shards"):
        note += f" Merged from {config['merged_shards']} shards."
    return note


@style.themed
def _plot(df: pd.DataFrame, path: Path, config: dict, described: dict, note: str) -> Path:
    """Top: accuracy against latency per system, one panel per benchmark, each point labelled with its
    speedup over the large model with reasoning. Bottom: MAI's routes per benchmark and variant."""
    benches = list(dict.fromkeys(df.benchmark))
    mai = df[df.kind == "MAI"]
    ncols = max(1, min(len(benches), 3))  # a shard can hold no rows yet: an empty figure, not an error
    nrows = max(1, -(-len(benches) // ncols))
    fig = plt.figure(figsize=(3.3 * ncols + 1.8, 2.8 * nrows + 0.35 * len(mai) + 1.6), layout="constrained")
    fig.get_layout_engine().set(rect=style.FOOTER_RECT)
    grid = fig.add_gridspec(nrows + 1, ncols, height_ratios=[2.8] * nrows + [0.35 * len(mai) + 0.9])
    order = style.legend_order(df.label, df.role)
    scatter_axes = []
    for i, bench in enumerate(benches):
        ax = fig.add_subplot(grid[i // ncols, i % ncols])
        part = df[df.benchmark == bench].set_index("label")
        for label in order:
            if label in part.index and part.latency_s[label] is not None:
                r = part.loc[label]
                ax.scatter(r.latency_s, r.accuracy if r.accuracy is not None else float("nan"), s=40,
                           color=style.color(r.role), label=label, edgecolor="white", linewidth=0.5, zorder=3)
        style.percent_axis(ax)
        ax.set(title=bench, xlabel="mean latency per query (s)")
        latencies = part.latency_s.dropna().astype(float)
        if len(latencies) and latencies.min() > 0 and latencies.max() / latencies.min() > 20:
            style.log_axis(ax)
        scatter_axes.append((ax, part))
    ax = fig.add_subplot(grid[nrows, :])
    names = [f"{b} · {label}" for b, label in zip(mai.benchmark, mai.label)]
    left = [0.0] * len(mai)
    for route in ROUTES:
        values = [100 * float(v) if v is not None else 0.0 for v in mai[f"route_{route}"]]
        ax.barh(names, values, left=left, height=0.65, color=style.ROUTE_COLORS[route],
                label=f"route: {style.ROUTE_NAMES[route]}")
        left = [a + v for a, v in zip(left, values)]
    ax.invert_yaxis()
    ax.set(xlim=(0, 100), xlabel="queries (%)", title="MAI routes")
    ax.tick_params(axis="y", labelsize=7)
    style.outside_legend(fig)
    for ax, part in scatter_axes:  # speedup labels last: the legend and the layout are settled
        ok = part[part.latency_s.notna() & part.speedup_vs_R.notna() & (part.kind != "large-R")]
        style.place_labels(ax, list(zip(ok.latency_s.astype(float), ok.accuracy.astype(float).fillna(0))),
                           [f"{float(v):.2f}x" for v in ok.speedup_vs_R], [style.color(r) for r in ok.role])
    fig.suptitle("MAI against single models and Full reasoning transfer (Table 10); labels: speedup over "
                 "the large model with reasoning", fontsize=10)
    return style.save(fig, path, config, described, note)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--report-dir", default=str(Path(__file__).resolve().parent.parent))
    a = ap.parse_args()
    print(build(a.run_dir, a.report_dir)["markdown"])
