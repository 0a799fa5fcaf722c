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

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import latency_model, paper_numbers, report  # noqa: E402
from mai import MaiError  # noqa: E402
from mai.cascade import ROUTES  # noqa: E402

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
    # Route fractions: MAI only.
    for route in ROUTES:
        df[f"route_{route}"] = None
    for i, r in df[df.kind == "MAI"].iterrows():
        ok = [x for x in rows if x["benchmark"] == r.benchmark and x["system"] == r.system]
        for route in ROUTES:
            df.at[i, f"route_{route}"] = sum(x.get("route") == route for x in ok) / len(ok) if ok else None
    # Speedup over the large model with its reasoning prompt (the paper's reference), per benchmark.
    df["speedup_vs_R"] = None
    for _, part in df.groupby("benchmark"):
        ref = part[part.kind == "large-R"]
        if len(ref) and ref.latency_s.iloc[0]:
            df.loc[part.index, "speedup_vs_R"] = ref.latency_s.iloc[0] / part.latency_s
    return df.drop(columns=["verify"])


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    note = report.provenance_note(config, described)
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
    df = summarize(rows)
    if "chartqa" in set(df.benchmark):
        note += " paper_accuracy: the paper reports one MAI accuracy on ChartQA; it is printed beside both MAI rows."
        df["paper_accuracy"] = [paper_numbers.TABLE10_CHARTQA.get("MAI" if k == "MAI" else s) if b == "chartqa"
                                else None for b, s, k in zip(df.benchmark, df.system, df.kind)]
    df = df.drop(columns=["kind"])
    tables = report.write_table(df, report_dir, NAME, config, note, caption)
    fig = report.figure_path(report_dir, NAME, config)
    _plot(df, fig, note)
    summary = {f"{b}/excluded_examples": n for b, n in excluded.items()}
    for _, r in df.iterrows():
        for col in ("accuracy", "latency_s", "predicted_s", "speedup_vs_R", "cached_tokens",
                    *[f"route_{x}" for x in ROUTES]):
            if col in r and r[col] is not None and r[col] == r[col]:
                summary[f"{r.benchmark}/{r.system}/{col}"] = float(r[col])
    return dict(tables=tables, figures=[fig], summary=summary, markdown=tables[0].read_text())


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


def scale_note(config: dict) -> str:
    """How the run was served, when not the paper's way (transformers, one query at a time)."""
    note = ""
    if config.get("backend", "hf") != "hf":
        note += (f" Backend {config['backend']} (tensor parallel {config.get('tensor_parallel', 1)}); peak memory "
                 "counts this process only, not the vLLM engines' reserved share of the GPU.")
    if config.get("order", "example") == "stage":
        note += (" Stage order: each call's times are its batch's divided by the batch size (machine time per "
                 "query, a throughput measure), not the batch-1 latency of the paper.")
    if config.get("merged_shards"):
        note += f" Merged from {config['merged_shards']} shards."
    return note


def _plot(df: pd.DataFrame, path: Path, note: str) -> None:
    """Latency against accuracy per system (left), MAI's route fractions per benchmark (right)."""
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for system, part in df.groupby("system"):
        ax.scatter(part.latency_s, part.accuracy.fillna(0), label=system, s=50)
    ax.set(xlabel="mean latency per query (s)", ylabel="accuracy (%)", title="systems")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    mai = df[df.route_simple.notna()]  # MAI's rows, one per verification variant
    bars = [f"{b}\n{s.removeprefix('MAI ')}" for b, s in zip(mai.benchmark, mai.system)]
    bottom = [0.0] * len(mai)
    for route in ROUTES:
        values = mai[f"route_{route}"].fillna(0).tolist()
        ax2.bar(bars, values, bottom=bottom, label=route)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax2.set(ylabel="fraction of queries", title="MAI routes", ylim=(0, 1))
    ax2.tick_params(axis="x", labelsize=6)
    ax2.legend(fontsize=8)
    fig.suptitle(note, fontsize=7, wrap=True)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--report-dir", default=str(Path(__file__).resolve().parent.parent))
    a = ap.parse_args()
    print(build(a.run_dir, a.report_dir)["markdown"])
