"""App. B.5 on our hardware, from an experiments/b5_serving_load.py run: MAI and the large model (Simple, Think)
served over HTTP under load: latency, time to the answer, throughput, routes, peak memory, load average.

    python -m analysis.tableb5 runs/b5_serving_load/cpu-real

Speedup over large-R: the large model with the Think prompt served the same way at the same request rate,
divided by the system's (mean latency, and p50). Memory: the server process and its engine-core children
(vLLM runs each engine's scheduler, KV cache and model in a child process); PSS counts a page shared by
several processes once in total, RSS once per process, and the VmHWM sum adds each process's own peak (an upper
bound of the tree's peak, which need not be simultaneous).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import report, style

NAME = "tableB5_serving"
_ORDER = ("mai", "large-S", "large-R")
_ROLE = {"mai": "MAI answer", "large-S": "large-S", "large-R": "large-R"}
CAN_CANNOT = ("What this can say: how the served cascade behaves when vLLM batches concurrent queries (whether "
              "agreement on Simple answers still saves the large model's decoding under load), what two resident "
              "engines and their caches cost in host memory, and where this machine saturates. What it cannot "
              "say about a GPU: CPU decoding is compute-bound at small batch, a GPU's is memory-bandwidth-bound, so "
              "batching gains, the prefill/decode balance and the saturation rate differ; latencies and throughputs "
              "do not transfer in absolute or relative terms; KV cache here is host memory sized per engine "
              "(--kv-cache-gib), not a share of GPU memory (gpu_memory_utilization).")


def _rate_value(rate: str) -> float:
    return float("inf") if rate == "inf" else float(rate)


def summarize(rows: list[dict]) -> pd.DataFrame:
    out = []
    for r in sorted(rows, key=lambda r: (_rate_value(r["rate"]), _ORDER.index(r["system"])
                                         if r["system"] in _ORDER else len(_ORDER))):
        fractions = r.get("route_fractions") or {}
        out.append(dict(
            rate=r["rate"], system=r["system"], done=f"{r['completed']}/{r['num_prompts']}",
            req_per_s=r["request_throughput"], out_tok_per_s=r["output_throughput"],
            latency_mean_s=r["latency_mean_s"], latency_p50_s=r["latency_p50_s"], latency_p99_s=r["latency_p99_s"],
            answer_p50_s=r["answer_p50_s"], queue_mean_s=r.get("queue_wait_mean_s"),
            routes_pct=" / ".join(f"{k} {100 * v:.0f}" for k, v in sorted(fractions.items())) or None,
            pss_peak_gib=r["tree_pss_peak_gib"], rss_peak_gib=r["tree_rss_peak_gib"],
            vmhwm_sum_gib=r["sum_vmhwm_gib"], load_avg=r["load_avg_mean"]))
    df = pd.DataFrame(out)
    df["speedup_vs_large_R_mean"] = None
    df["speedup_vs_large_R_p50"] = None
    for rate, part in df.groupby("rate"):
        ref = part[part.system == "large-R"]
        if len(ref):
            df.loc[part.index, "speedup_vs_large_R_mean"] = ref.latency_mean_s.iloc[0] / part.latency_mean_s
            df.loc[part.index, "speedup_vs_large_R_p50"] = ref.latency_p50_s.iloc[0] / part.latency_p50_s
    return df


def build(run_dir, report_dir) -> dict:
    config, rows, described = report.load_run(run_dir)
    rows = [r for r in rows if not r.get("error")]
    df = summarize(rows)
    prov = config.get("provenance", {})
    loads = [r["load_avg_mean"] for r in rows]
    vllm = prov.get("packages", {}).get("vllm")
    note = (f"{report.weights_note(described)[0]}; questions: {config.get('benchmark')} (first "
            f"{config.get('num_prompts')}), text only; vLLM {vllm} CPU engine, both models in one server process "
            f"(two engine-core children), {config.get('concurrency')} worker threads, KV cache "
            f"{config.get('kv_cache_gib')} GiB (small, large); load generator: {config.get('load_generator')}; "
            f"{prov.get('cpu_count')} CPU cores shared with other jobs (load average during the rows "
            f"{min(loads, default=0):.1f}-{max(loads, default=0):.1f}); commit {str(prov.get('git_commit'))[:10]}. "
            "Latency: client-side, request "
            "sent to answer received; answer_p50: the load generator's time to first token, which is the time to the "
            "answer (one chunk when the cascade ends). rate inf: every request at once. " + CAN_CANNOT)
    tables = report.write_table(df, report_dir, NAME, config, note,
                                "App. B.5 on our hardware: MAI and the large model served over HTTP under load "
                                "(latency s, throughput, routes %, peak memory GiB)")
    fig = _plot(df, report.figure_path(report_dir, NAME, config), config, described, note)
    summary = {f"{r.system}/rate{r.rate}/{col}": float(r[col]) for _, r in df.iterrows()
               for col in ("latency_p50_s", "latency_p99_s", "req_per_s", "out_tok_per_s", "pss_peak_gib",
                           "speedup_vs_large_R_mean") if r[col] is not None and r[col] == r[col]}
    charts = [report.chart("tableB5_latency_throughput", "scatter", df[["req_per_s", "latency_p50_s", "system"]],
                           "App. B.5: p50 latency (s) against throughput (requests/s)", x="req_per_s",
                           y="latency_p50_s"),
              report.chart("tableB5", "table", df, "App. B.5 serving load")]
    return dict(tables=tables, figures=[fig], summary=summary, charts=charts, markdown=tables[0].read_text())


@style.themed
def _plot(df: pd.DataFrame, path: Path, config: dict, described: dict, note: str) -> Path:
    """Left: p50 latency (markers; bars to p99) against throughput, one line per system over the request rates.
    Right: the server tree's peak memory (PSS) per system."""
    fig, axes = style.figure(1, 2, width=4.0, height=3.2)
    systems = [s for s in _ORDER if s in set(df.system)]
    fig.set_size_inches(8.0 + style.legend_room(systems), 3.4)
    ax = axes[0][0]
    for system in systems:
        part = df[df.system == system].sort_values("req_per_s")
        colour = style.color(_ROLE[system])
        ax.errorbar(part.req_per_s.astype(float), part.latency_p50_s.astype(float),
                    yerr=[[0] * len(part), (part.latency_p99_s - part.latency_p50_s).astype(float)],
                    marker="o", color=colour, label=system, capsize=3)
    ax.set(xlabel="throughput (requests/s)", ylabel="latency per request (s): p50, bar to p99",
           title="latency against throughput")
    ax = axes[0][1]
    peak = df.groupby("system").pss_peak_gib.max().reindex(systems)
    ax.bar(range(len(systems)), peak.values, color=[style.color(_ROLE[s]) for s in systems])
    ax.set_xticks(range(len(systems)), systems)
    ax.set(ylabel="server + engines, peak PSS (GiB)", title="memory of the served pair")
    style.outside_legend(fig)
    fig.suptitle("MAI served under load against the large model (App. B.5, our hardware)", fontsize=10)
    return style.save(fig, path, config, described, note, data=dict(rows=df.astype(object).where(df.notna(), None)
                                                                      .to_dict("records")))


if __name__ == "__main__":
    report.main(build, __doc__)
