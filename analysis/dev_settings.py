"""The dev-split record of the cpu-real preset's settings: what was compared, on which questions, and what it
measured. Reads every 07_prompt_modes run named dev-<model>-<think prompt> (experiments/07_prompt_modes.py
--split dev --think-prompt STYLE ...) and writes paper_tables/dev_settings.cpu-real.{md,tex}: per model,
Think prompt and benchmark, the Simple (S) and reasoning (R) accuracy, how often a reasoning ends in an
answer (our cue reading, which MAI's verify-on-reasoning uses, and lm-eval's cot strict-match "The answer is
X"), how often it ran into the reasoning budget, and its mean length.

    python -m analysis.dev_settings                    # runs/07_prompt_modes/dev-*
    python -m analysis.dev_settings --runs runs --report-dir .

Only dev questions are read here (a run of another split is refused): the test split is never looked at to
choose a setting.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from analysis import report
from mai.benchmarks import get_benchmark
from mai.benchmarks._bbh import FALLBACK, cot_strict
from mai.metrics import lmms_eval_response

NAME = "dev_settings"


def _answered(bench, prediction: str, question: str) -> tuple[bool, bool]:
    """(our cue reading finds an answer, lm-eval's cot strict-match finds one)."""
    ours = bool(bench.matcher(question).read(prediction, reasoning=True))
    return ours, cot_strict(lmms_eval_response(prediction)) != FALLBACK


def dev_runs(runs_dir: Path, simple: bool = False) -> list[tuple[dict, list[dict], dict]]:
    """Each dev-split run of experiments/07 as report.load_run reads it, read once: the Think prompt's
    (runs/07_prompt_modes/dev-<model>-<think prompt>), or with ``simple`` the Simple prompt's
    (dev-<model>-simple-<style>: Simple rows only, at the probe cap SIMPLE_PROBE_CAP)."""
    runs = []
    for run in sorted((Path(runs_dir) / "07_prompt_modes").glob("dev-*")):
        if ("-simple-" in run.name) != simple:
            continue
        if (run / "results.jsonl").exists():
            runs.append(report.load_run(run))
            if runs[-1][0].get("split") != "dev":
                raise SystemExit(f"error: {run} is not a dev-split run (split {runs[-1][0].get('split')!r})")
    if not runs:
        raise SystemExit(f"error: no dev-split runs under {Path(runs_dir) / '07_prompt_modes'} (dev-<model>-<style>)")
    return runs


def summarize(runs: list) -> pd.DataFrame:
    lines = []
    for config, rows, _ in runs:
        style, budget = config.get("think_prompt", "instruction"), config.get("think_tokens")
        ok = [r for r in rows if not r.get("error")]
        for (bench_name, model), group in pd.DataFrame(ok).groupby(["benchmark", "model"], sort=False):
            bench = get_benchmark(bench_name)
            think = [r for r in ok if r["benchmark"] == bench_name and r["model"] == model and r["mode"] == "think"]
            simple = [r for r in ok if r["benchmark"] == bench_name and r["model"] == model and r["mode"] == "simple"]
            line = dict(model=model, think_prompt=style, benchmark=bench_name, n=len(think) or len(simple),
                        think_tokens=budget)
            if simple:
                cap = config.get("simple_tokens") or bench.max_new_tokens
                line.update(S_accuracy=report.accuracy(simple),
                            S_hit_cap=100.0 * sum(r["output_tokens"] >= min(cap, bench.max_new_tokens)
                                                  for r in simple) / len(simple))
            if think:
                answered = [_answered(bench, r["prediction"], r["question"]) for r in think]
                line.update(R_accuracy=report.accuracy(think),
                            R_answered_cue=100.0 * sum(a for a, _ in answered) / len(think),
                            R_answered_lm_eval_strict=100.0 * sum(b for _, b in answered) / len(think),
                            R_hit_budget=100.0 * sum(r["output_tokens"] >= budget for r in think) / len(think),
                            R_tokens=sum(r["output_tokens"] for r in think) / len(think),
                            R_tokens_p90=float(pd.Series([r["output_tokens"] for r in think]).quantile(0.9)))
            lines.append(line)
    df = pd.DataFrame(lines)
    # Simple answers do not depend on the Think prompt: each model's S column comes from the run that made them.
    for column in ("S_accuracy", "S_hit_cap"):
        s = df.dropna(subset=[column]).set_index(["model", "benchmark"])[column]
        df[column] = [s.get((m, b)) for m, b in zip(df.model, df.benchmark)]
    df["R_minus_S"] = df.R_accuracy - df.S_accuracy
    order = {b: report.benchmark_rank(b) for b in df.benchmark}
    return df.sort_values(["model", "benchmark", "think_prompt"], key=lambda c: c.map(order) if c.name == "benchmark"
                          else c).reset_index(drop=True)


# -- the Simple prompt (issue 37): a style per benchmark that both models answer briefly, and one cap ------------
# The rule below was written and committed before any dev row of the new Simple styles was read.
SIMPLE_PROBE_CAP = 64  # the dev runs' --simple-tokens: long enough to see how long an unhurried answer is
CAPS = (8, 16, 24, 32, 48, 64)  # the Simple caps considered
# % of a model's answers that are readable, at least: MAI's agreement reading finds the answer the scorer reads
# (_readable; the rule as first committed read "finds an answer", which counts any text for yes/no tasks, whose
# reading is the cleaned answer itself: mended before the choice was made, the thresholds unchanged).
READABLE = 90.0
AT_CAP = 5.0  # % of a model's answers that run into the cap, at most
CONSTANT = 90.0  # a model whose answers are this % one answer is flagged constant (not disqualified)


def _stopped(row: dict) -> bool:
    """Whether a Simple answer ended by itself (rows before issue 37 lack "stopped": below the probe cap, it did)."""
    return row.get("stopped", row["output_tokens"] < SIMPLE_PROBE_CAP)


def _readable(bench, prediction: str, question: str) -> str:
    """MAI's agreement reading of an answer when it is the answer the scorer reads (lm-eval's flexible-extract),
    else "": "A: yes" is scored yes but compared as "a: yes", so it would not agree with a plain "yes"."""
    from mai.benchmarks.gsm8k import flexible

    response = lmms_eval_response(prediction)
    extracted = (bench.reference_extract(response, question, None) if hasattr(bench, "reference_extract")
                 else flexible(response))
    if extracted == FALLBACK:
        return ""
    match = bench.matcher(question)
    read = match.read(prediction)
    return read if read and read == match.read(extracted) else ""


def _simple_line(bench, rows: list[dict]) -> dict:
    """One model's Simple rows on one benchmark: accuracy, readable share, cap-hit share at the probe cap,
    the majority answer's share, mean prompt and answer length, and each answer's natural length."""
    reads = [_readable(bench, r["prediction"], r["question"]) for r in rows]
    counts = pd.Series([a for a in reads if a]).value_counts()
    return dict(n=len(rows), S_accuracy=report.accuracy(rows),
                S_readable=100.0 * sum(bool(a) for a in reads) / len(rows),
                S_hit_probe_cap=100.0 * sum(not _stopped(r) for r in rows) / len(rows),
                S_majority=100.0 * (counts.iloc[0] if len(counts) else 0) / len(rows),
                S_majority_answer=counts.index[0] if len(counts) else "",
                S_input_tokens=sum(r["input_tokens"] for r in rows) / len(rows),
                S_tokens=sum(r["output_tokens"] for r in rows) / len(rows),
                S_tokens_max=max(r["output_tokens"] for r in rows))


def summarize_simple(runs: list) -> tuple[pd.DataFrame, dict]:
    """Per Simple style, model and benchmark: _simple_line; and (style, model, benchmark) -> the natural
    lengths (output tokens, a stop token included; None where the answer ran into the probe cap)."""
    lines, lengths = [], {}
    for config, rows, _ in runs:
        ok = [r for r in rows if not r.get("error") and r.get("mode") == "simple"]
        for (bench_name, model), group in pd.DataFrame(ok).groupby(["benchmark", "model"], sort=False):
            style = (group.iloc[0].get("meta") or {}).get("simple_prompt", "post-prompt")
            picked = [r for r in ok if r["benchmark"] == bench_name and r["model"] == model]
            lines.append(dict(simple_prompt=style, model=model, benchmark=bench_name,
                              **_simple_line(get_benchmark(bench_name), picked)))
            lengths[(style, model, bench_name)] = [r["output_tokens"] if _stopped(r) else None for r in picked]
    df = pd.DataFrame(lines)
    df["constant"] = df.S_majority >= CONSTANT
    order = {b: report.benchmark_rank(b) for b in df.benchmark}
    df = df.sort_values(["benchmark", "simple_prompt", "model"],
                        key=lambda c: c.map(order) if c.name == "benchmark" else c).reset_index(drop=True)
    return df, lengths


def decide_simple(df: pd.DataFrame, lengths: dict) -> dict:
    """The Simple prompt per benchmark and the Simple cap, by rules fixed before the dev rows were read:
    - a style is eligible on a benchmark when, for BOTH models, MAI's agreement reading finds an answer in at
      least READABLE% of the dev answers and at most AT_CAP% run into the probe cap;
    - per benchmark, the eligible style with the best mean dev accuracy of the two models, then the shorter
      prompt (mean input tokens); where none is eligible, the style whose worse model hits the cap least, then
      the better readable share, then the accuracy, and the benchmark is named as failing the rule;
    - the cap: the smallest of CAPS at which at most AT_CAP% of every model's chosen-style answers on every
      benchmark would be cut (an answer is cut at cap C when its natural length, stop token included, is over
      C; one that hit the probe cap is cut at every C), else the largest.
    A constant model (CONSTANT% one answer) is flagged in the table, not disqualified: the prompt cannot make a
    model know the answer, and the flag is what the tables downstream show."""
    styles, failing, why = {}, [], []
    for bench_name, group in df.groupby("benchmark", sort=False):
        per = group.groupby("simple_prompt").agg(readable=("S_readable", "min"), at_cap=("S_hit_probe_cap", "max"),
                                                 accuracy=("S_accuracy", "mean"), prompt=("S_input_tokens", "mean"),
                                                 models=("model", "nunique"))
        per["eligible"] = (per.readable >= READABLE) & (per.at_cap <= AT_CAP) & (per.models == df.model.nunique())
        if per.eligible.any():
            ranked = per[per.eligible].sort_values(["accuracy", "prompt"], ascending=[False, True])
        else:
            failing.append(bench_name)
            ranked = per.sort_values(["at_cap", "readable", "accuracy"], ascending=[True, False, False])
        styles[bench_name] = ranked.index[0]
        why.append(f"{bench_name}: {ranked.index[0]} (" + "; ".join(
            f"{s}: readable {r.readable:.0f}%, at cap {r.at_cap:.0f}%, accuracy {r.accuracy:.1f}"
            f"{'' if r.eligible else ', not eligible'}" for s, r in per.sort_values("accuracy", ascending=False)
            .iterrows()) + ")")

    def cut(cap: int) -> float:
        worst = 0.0
        for (style, _, bench_name), natural in lengths.items():
            if styles.get(bench_name) == style and natural:
                worst = max(worst, 100.0 * sum(n is None or n > cap for n in natural) / len(natural))
        return worst

    cap = next((c for c in CAPS if cut(c) <= AT_CAP), CAPS[-1])
    return dict(simple_prompt=",".join(f"{b}={s}" for b, s in styles.items()), styles=styles, simple_tokens=cap,
                failing=failing, why="; ".join(why) + f". Cap {cap}: at most {cut(cap):.0f}% of any model's "
                f"chosen-style dev answers on a benchmark would be cut there"
                + (f" ({CAPS[CAPS.index(cap) - 1]} would cut {cut(CAPS[CAPS.index(cap) - 1]):.0f}%)"
                   if cap != CAPS[0] else "") + "."
                + (f" No style met the rule on {', '.join(failing)}." if failing else ""))


BUDGETS = (256, 384)  # the reasoning budgets considered: the earlier preset's, and the one the dev runs decoded to
WITHIN = 0.95  # a budget must let this share of the chosen prompt's reasonings finish


def decide(df: pd.DataFrame, lengths: dict[str, list[int]]) -> dict:
    """The settings the dev rows choose, by rules fixed before the test split was read (issue 28's bar for a
    small model that reasons):
    - Think prompt: of the styles whose small-model reasonings end in an answer MAI can read (R_answered_cue) on
      most questions (over half) of every task, the one whose reasoning gains most over the Simple answer on the
      arithmetic task (gsm8k, where reasoning should matter most), then the larger mean R - S over tasks, then
      the shorter reasoning; a style that answers without reasoning gains nothing there;
    - reasoning budget: the smallest of BUDGETS within which WITHIN of the chosen style's reasonings (both
      models) finished, else the largest."""
    small = df[df.model == df.model.iloc[0]].dropna(subset=["R_answered_cue"])
    by_style = small.groupby("think_prompt").agg(answered=("R_answered_cue", "mean"), least=("R_answered_cue", "min"),
                                                 gain=("R_minus_S", "mean"), tokens=("R_tokens", "mean"))
    arithmetic = small[small.benchmark == "gsm8k"].set_index("think_prompt").R_minus_S
    by_style["arithmetic_gain"] = [arithmetic.get(s, float("-inf")) for s in by_style.index]
    by_style["eligible"] = by_style.least > 50
    ranked = by_style.sort_values(["eligible", "arithmetic_gain", "gain", "tokens"],
                                  ascending=[False, False, False, True])
    style = ranked.index[0]
    chosen = lengths.get(style, [])
    budget = next((b for b in BUDGETS if chosen and sum(n < b for n in chosen) >= WITHIN * len(chosen)), BUDGETS[-1])
    return dict(think_prompt=style, think_tokens=budget,
                why=f"Think prompt {style}: " + "; ".join(
                    f"{s} answered {r.answered:.0f}% (least {r.least:.0f}% on a task), R-S {r.arithmetic_gain:+.1f} "
                    f"points on gsm8k and {r.gain:+.1f} on average, {r.tokens:.0f} tokens"
                    for s, r in ranked.iterrows()) + f" (mean over tasks, {df.model.iloc[0]}). Budget {budget}: "
                    + ", ".join(f"{100 * sum(n < b for n in chosen) / max(1, len(chosen)):.0f}% of {style}'s "
                                f"reasonings finish within {b}" for b in BUDGETS) + ".")


def reasoning_lengths(runs: list) -> dict[str, list[int]]:
    """Think prompt style -> the output tokens of every dev reasoning (both models) made with it."""
    out: dict[str, list[int]] = {}
    for config, rows, _ in runs:
        out.setdefault(config.get("think_prompt", "instruction"), []).extend(
            r["output_tokens"] for r in rows if r.get("mode") == "think" and not r.get("error"))
    return out


SIMPLE_NAME = "dev_settings_simple"


def build_simple(runs_dir, report_dir) -> dict:
    """The Simple prompt's dev table (paper_tables/dev_settings_simple.<preset>.*) and what decide_simple chose."""
    runs = dev_runs(runs_dir, simple=True)
    df, lengths = summarize_simple(runs)
    chosen = decide_simple(df, lengths)
    config, rows, _ = runs[0]
    described = {label: d for _, _, run_described in runs for label, d in run_described.items()}  # both models
    rows = [r for _, run_rows, _ in runs for r in run_rows]
    note = ("Dev split only (mai.benchmarks._vendored: 50 seeded questions a BBH task, 50 of GSM8K's train file). "
            f"{report.provenance_note(config, described, rows)} Every style ran at the probe cap "
            f"{SIMPLE_PROBE_CAP} (--simple-tokens). S_readable: MAI's agreement reading finds the answer the scorer "
            "reads (lm-eval's flexible-extract; _readable); "
            "S_hit_probe_cap: the answer ran into the probe cap; S_majority: the most common answer's share (its "
            f"answer beside it; constant: at least {CONSTANT:.0f}%); S_input_tokens: the prompt's mean length. "
            f"Chosen by the rules of analysis/dev_settings.decide_simple: {chosen['why']}")
    tables = report.write_table(df, report_dir, SIMPLE_NAME, config, note,
                                "Dev-split settings: the Simple prompt per style, model and task: accuracy (%), "
                                "readable and cap-hit shares, the majority answer's share, lengths")
    return dict(tables=tables, frame=df, chosen=chosen, markdown=tables[0].read_text())


def build(runs_dir, report_dir) -> dict:
    runs = dev_runs(runs_dir)
    df = summarize(runs)
    chosen = decide(df, reasoning_lengths(runs))
    config, rows, described = runs[0]
    note = ("Dev split only (mai.benchmarks._vendored: 50 seeded questions a BBH task, 50 of GSM8K's train file; "
            f"these runs read the first --limit of them). {report.provenance_note(config, described, rows)} "
            "S_hit_cap: the Simple answer used all of its cap (--simple-tokens). R_answered_cue: the reasoning "
            "names an answer after 'The answer is' or in a \\boxed{} (what MAI's verify-on-reasoning reads); R_answered_lm_eval_strict: lm-eval's bbh/cot_zeroshot strict-match finds one; R_hit_budget: "
            "the reasoning used all --think-tokens; R_tokens_p90: the 90th percentile of its length. Chosen by the rules "
            f"of analysis/dev_settings.decide: {chosen['why']}")
    tables = report.write_table(df, report_dir, NAME, config, note,
                                "Dev-split settings: Simple (S) vs reasoning (R) accuracy (%) per Think prompt, how "
                                "often the reasoning ends in an answer, and its length")
    return dict(tables=tables, frame=df, chosen=chosen, markdown=tables[0].read_text())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="runs", help="runs directory (default: runs)")
    ap.add_argument("--report-dir", default=".", help="where paper_tables/ goes (default: the repository)")
    args = ap.parse_args(argv)
    print(build(args.runs, args.report_dir)["markdown"])
    print(build_simple(args.runs, args.report_dir)["markdown"])


if __name__ == "__main__":
    main()
