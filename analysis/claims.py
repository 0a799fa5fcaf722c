"""The paper's claims beside what our runs measured: one row per claim, one column per benchmark.

    python -m analysis.claims --preset cpu-real          # reads runs/{10,08,09,12}_*/cpu-real
    python -m analysis.claims --preset cpu-real --readme # and replaces the README's copy of the table

Each claim is read from the run of the experiment that measures it (Table 10: routes, accuracy of MAI
against the large model's Simple answer and Full RT, speedup over the large model reasoning; Table 8:
reasoning transfer against the large model's Simple answer; Table 9's attention-mass run: the share of
reasoning tokens holding 80% of the attention, App. B.7; Table 12: speculative decoding). A fraction is
printed with its 95% Wilson interval over the examples it was measured on, because the CPU runs are small:
an interval that straddles the paper's bound means the run cannot tell. "holds" is decided on the point
estimate by the rule in the claim's row, and says on how many benchmarks; a claim that does not hold is
written as not holding, with its numbers. Nothing here is tuned: the rules are the paper's words, made
numeric where the paper gives a number and stated where it does not ("mildly", "comparable").
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

from analysis import paper_numbers, report, table10, table12

NAME = "claims"
MILD_PP = 5.0  # "degrades only mildly" / "comparable": within this many accuracy points (our reading)
B7_BAND = (0.15, 0.25)  # "about 20%" of the reasoning tokens (our reading of App. B.7's "about")
RUNS = {"10": "10_mai", "08": "08_reasoning_transfer", "09": "09_layer_ablation", "12": "12_speculative_decoding"}


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion k/n (k may be fractional: a mean of 0/1 scores x n)."""
    if n <= 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def pct(p: float | None, n: int | None = None) -> str:
    """'62% [41-79], n=18' (the interval only where n is known)."""
    if p is None or p != p:
        return "-"
    if not n:
        return f"{100 * p:.0f}%"
    lo, hi = wilson(p * n, n)
    return f"{100 * p:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}], n={n}"


def _verdict(flags: list[bool]) -> str:
    if not flags:
        return "not measured"
    held = sum(flags)
    word = "holds" if held == len(flags) else "does not hold" if held == 0 else "holds partly"
    return f"{word} ({held}/{len(flags)} benchmarks)"


def _load(runs: Path, key: str, run_name: str):
    path = runs / RUNS[key] / run_name
    if not (path / "results.jsonl").exists():
        return None
    return report.load_run(path)


def table10_claims(loaded, benches: list[str]) -> list[dict]:
    config, rows, _ = loaded
    df = table10.summarize(rows)
    mai = df[(df.kind == "MAI") & (df.verify.fillna("answer") == "answer")]
    out = []
    bounds = paper_numbers.TABLE10_ROUTES

    def per_bench(frame):
        return {b: frame[frame.benchmark == b].iloc[0] for b in benches if len(frame[frame.benchmark == b])}

    rows_mai = per_bench(mai)
    n = {b: int(r.n - r.errors) for b, r in rows_mai.items()}
    for route, paper, test, words in (
            ("simple", bounds["simple_agreement_min"], lambda v, b: v >= b, "at least"),
            ("reasoning", bounds["after_reasoning_max"], lambda v, b: v <= b, "up to"),
            ("transfer", bounds["transfer_max"], lambda v, b: v < b, "under")):
        what = {"simple": "agree on the Simple answers (mutual verification)",
                "reasoning": "agree after the small model's reasoning (second stage)",
                "transfer": "reach reasoning transfer"}[route]
        values = {b: float(r[f"route_{route}"]) for b, r in rows_mai.items()}
        out.append(dict(claim=f"{words} {100 * paper:.0f}% of queries {what} (Table 10)",
                        paper=f"{words} {100 * paper:.0f}%",
                        **{b: pct(v, n[b]) for b, v in values.items()},
                        here=_verdict([test(v, paper) for v in values.values()])))
    # MAI at least as accurate as the large model's Simple answer, and comparable to Full RT.
    cells, flags = {}, []
    for b in benches:
        part = df[df.benchmark == b]
        acc = {k: part[part.kind == k].accuracy for k in ("large-S", "Full RT")}
        m = part[(part.kind == "MAI") & (part.verify.fillna("answer") == "answer")].accuracy
        if not len(m) or not all(len(a) for a in acc.values()):
            continue
        m, ls, rt = float(m.iloc[0]), float(acc["large-S"].iloc[0]), float(acc["Full RT"].iloc[0])
        cells[b] = f"MAI {m:.0f} / {table10_label(part, 'large-S')} {ls:.0f} / Full RT {rt:.0f}"
        flags.append(m >= ls and abs(m - rt) <= MILD_PP)
    out.append(dict(claim=f"MAI at least as accurate as the large model's Simple answer, comparable to Full RT "
                          f"(within {MILD_PP:.0f} points) (Table 10, Sec. 6)",
                    paper=f"MAI {paper_numbers.TABLE10_CHARTQA['MAI']} vs Full RT "
                          f"{paper_numbers.TABLE10_CHARTQA['Full RT']} (ChartQA)",
                    **cells, here=_verdict(flags)))
    # Speedup of MAI over the large model reasoning.
    cells, flags = {}, []
    for b, r in rows_mai.items():
        if r.speedup_vs_R is not None and r.speedup_vs_R == r.speedup_vs_R:
            cells[b] = f"{float(r.speedup_vs_R):.2f}x"
            flags.append(float(r.speedup_vs_R) > 1)
    device = (config.get("provenance") or {}).get("gpu") or "CPU, transformers, batch 1"
    out.append(dict(claim=f"MAI faster than the large model reasoning (Table 12; ours: {device})",
                    paper=f"{paper_numbers.TABLE12['mai_vllm_speedup_over_8b_r']:.2f}x (vLLM, H100)",
                    **cells, here=_verdict(flags)))
    return out


def table10_label(part: pd.DataFrame, kind: str) -> str:
    return str(part[part.kind == kind].system.iloc[0])


def table08_claim(loaded, benches: list[str]) -> dict:
    _, rows, _ = loaded
    df = report.summarize(rows, by=("benchmark", "system", "kind"))
    cells, gains = {}, []
    for b in benches:
        part = df[df.benchmark == b]
        base, moved = part[part.kind == "large-S"], part[part.kind == "transfer"]
        if not len(base) or not len(moved):
            continue
        gain = float(moved.accuracy.iloc[0]) - float(base.accuracy.iloc[0])
        cells[b] = f"{gain:+.0f} points ({float(base.accuracy.iloc[0]):.0f} -> {float(moved.accuracy.iloc[0]):.0f})"
        gains.append(gain)
    better = sum(g > 0 for g in gains)
    holds = bool(gains) and better > len(gains) / 2 and min(gains) >= -MILD_PP
    verdict = ("not measured" if not gains else
               f"{'holds' if holds else 'does not hold'} (better on {better}/{len(gains)} benchmarks, "
               f"worst {min(gains):+.0f} points)")
    return dict(claim=f"the small model's reasoning prepended to the large model's Simple prompt beats the large "
                      f"model's Simple answer on most tasks, and loses at most mildly ({MILD_PP:.0f} points) "
                      f"elsewhere (Table 8)",
                paper="better on 4 of 6 tasks", **cells, here=verdict)


def table09_claim(loaded, benches: list[str]) -> dict:
    config, rows, _ = loaded
    ok = [r for r in rows if not r.get("error") and r.get("fractions")]
    delta = config.get("delta", 0.8)
    cells, flags = {}, []
    for b in benches:
        mine = [r for r in ok if r.get("benchmark") == b]
        if not mine:
            continue
        per_layer = {}
        for r in mine:
            for layer, f in r["fractions"].items():
                per_layer.setdefault(int(layer), []).append(f)
        means = [sum(v) / len(v) for v in per_layer.values()]
        overall = sum(means) / len(means)
        cells[b] = (f"{100 * overall:.0f}% (layers {100 * min(means):.0f}-{100 * max(means):.0f}%), "
                    f"n={len(mine)}")
        flags.append(B7_BAND[0] <= overall <= B7_BAND[1])
    paper = paper_numbers.APPENDIX_B7["fraction_of_tokens_for_80pct_mass"]
    return dict(claim=f"about {100 * paper:.0f}% of the reasoning tokens hold {100 * delta:.0f}% of the attention "
                      f"mass, across layers (App. B.7; 'about' read as {100 * B7_BAND[0]:.0f}-{100 * B7_BAND[1]:.0f}%)",
                paper=f"top {100 * paper:.0f}% hold ~80%", **cells, here=_verdict(flags))


def table12_claim(loaded, benches: list[str]) -> dict:
    _, rows, _ = loaded
    df = table12.summarize(rows)
    spec = df[df.kind == "speculative"]
    cells, flags = {}, []
    for b in benches:
        r = spec[spec.benchmark == b]
        if not len(r) or r.latency_ratio.iloc[0] is None:
            continue
        r = r.iloc[0]
        rejection = "-" if r["rejection_%"] is None else f"{float(r['rejection_%']):.0f}%"
        cells[b] = f"{float(r.latency_ratio):.2f}x the target's latency, rejection {rejection}"
        flags.append(float(r.latency_ratio) > 1)
    return dict(claim="token-level speculative decoding (small drafts for large) is slower than the large model "
                      "decoding alone, with a high draft rejection (Table 12)",
                paper=f"{paper_numbers.TABLE12['spec_decode_slowdown']:.2f}x latency, "
                      f"{100 * paper_numbers.TABLE12['draft_rejection_rate']:.0f}% rejection (ChartQA)",
                **cells, here=_verdict(flags))


def build(runs: Path, run_name: str, report_dir) -> dict:
    loaded = {key: _load(Path(runs), key, run_name) for key in RUNS}
    if loaded["10"] is None:
        raise SystemExit(f"error: no Table 10 run at {Path(runs) / RUNS['10'] / run_name}: run "
                         f"experiments/10_mai.py --preset {run_name} first")
    config, rows10, described = loaded["10"]
    benches = list(dict.fromkeys(r["benchmark"] for r in rows10))
    records = table10_claims(loaded["10"], benches)
    if loaded["08"] is not None:
        records.insert(3, table08_claim(loaded["08"], benches))
    if loaded["09"] is not None:
        records.append(table09_claim(loaded["09"], benches))
    if loaded["12"] is not None:
        records.append(table12_claim(loaded["12"], benches))
    df = pd.DataFrame.from_records(records, columns=["claim", "paper", *benches, "here"]).fillna("-")
    note = (report.provenance_note(config, described, rows10).split(" Accuracy is")[0]
            + " Fractions with their 95% Wilson interval over the examples measured; a claim 'holds' on a benchmark"
              " when the point estimate meets the paper's bound (an interval across the bound cannot tell). The"
              " paper's numbers are Qwen3-VL 2B/8B on vision benchmarks (H100); ours are the runs named in"
              f" analysis/claims.py ({', '.join(f'runs/{v}/{run_name}' for v in RUNS.values())}).")
    tables = report.write_table(df, report_dir, NAME, config, note, "The paper's claims beside our measurements")
    return dict(tables=tables, markdown=tables[0].read_text(), frame=df)


README_MARKS = ("<!-- claims table: python -m analysis.claims --readme -->", "<!-- end of claims table -->")


def update_readme(readme: Path, markdown: str) -> None:
    """Put the table (without its heading) between the README's two marks, so the README's copy is rebuilt
    from the runs like every other table, never typed."""
    text = readme.read_text()
    start, end = README_MARKS
    if start not in text or end not in text:
        raise SystemExit(f"error: {readme} lacks the marks {start} ... {end}")
    body = markdown.split("\n", 2)[2].strip()  # drop the '# caption' line and the blank after it
    head, rest = text.split(start, 1)
    text = head + start + "\n" + body + "\n" + end + rest.split(end, 1)[1]
    readme.write_text(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-real", help="the run name of every experiment read (default cpu-real)")
    ap.add_argument("--runs", default="runs", help="runs directory (default: runs)")
    ap.add_argument("--report-dir", help="where paper_tables/ goes (default: RUNS/claims/PRESET; the repository's "
                    "own: --report-dir .)")
    ap.add_argument("--readme", action="store_true", help="also replace the repository README's copy of the table")
    args = ap.parse_args(argv)
    out = build(Path(args.runs), args.preset, args.report_dir or Path(args.runs) / "claims" / args.preset)
    if args.readme:
        update_readme(Path(__file__).resolve().parent.parent / "README.md", out["markdown"])
    print(out["markdown"])


if __name__ == "__main__":
    main()
