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


def summarize(runs_dir: Path) -> pd.DataFrame:
    lines = []
    for run in sorted((runs_dir / "07_prompt_modes").glob("dev-*")):
        if not (run / "results.jsonl").exists():
            continue
        config, rows, _ = report.load_run(run)
        if config.get("split") != "dev":
            raise SystemExit(f"error: {run} is not a dev-split run (split {config.get('split')!r})")
        style, budget = config.get("think_prompt", "instruction"), config.get("think_tokens")
        ok = [r for r in rows if not r.get("error")]
        for (bench_name, model), group in pd.DataFrame(ok).groupby(["benchmark", "model"], sort=False):
            bench = get_benchmark(bench_name)
            think = [r for r in ok if r["benchmark"] == bench_name and r["model"] == model and r["mode"] == "think"]
            simple = [r for r in ok if r["benchmark"] == bench_name and r["model"] == model and r["mode"] == "simple"]
            line = dict(model=model, think_prompt=style, benchmark=bench_name, n=len(think) or len(simple),
                        think_tokens=budget)
            if simple:
                line["S_accuracy"] = report.accuracy(simple)
            if think:
                answered = [_answered(bench, r["prediction"], r["question"]) for r in think]
                line.update(R_accuracy=report.accuracy(think),
                            R_answered_cue=100.0 * sum(a for a, _ in answered) / len(think),
                            R_answered_lm_eval_strict=100.0 * sum(b for _, b in answered) / len(think),
                            R_hit_budget=100.0 * sum(r["output_tokens"] >= budget for r in think) / len(think),
                            R_tokens=sum(r["output_tokens"] for r in think) / len(think))
            lines.append(line)
    if not lines:
        raise SystemExit(f"error: no dev-split runs under {runs_dir / '07_prompt_modes'} (dev-<model>-<style>)")
    df = pd.DataFrame(lines)
    # Simple answers do not depend on the Think prompt: each model's S column comes from the run that made them.
    s = df.dropna(subset=["S_accuracy"]).set_index(["model", "benchmark"]).S_accuracy
    df["S_accuracy"] = [s.get((m, b)) for m, b in zip(df.model, df.benchmark)]
    df["R_minus_S"] = df.R_accuracy - df.S_accuracy
    order = {b: report.benchmark_rank(b) for b in df.benchmark}
    return df.sort_values(["model", "benchmark", "think_prompt"], key=lambda c: c.map(order) if c.name == "benchmark"
                          else c).reset_index(drop=True)


def build(runs_dir, report_dir) -> dict:
    df = summarize(Path(runs_dir))
    first = sorted((Path(runs_dir) / "07_prompt_modes").glob("dev-*"))[0]
    config, rows, described = report.load_run(first)
    note = ("Dev split only (mai.benchmarks._vendored: 50 seeded questions a BBH task, 50 of GSM8K's train file; "
            f"these runs read the first --limit of them). {report.provenance_note(config, described, rows)} "
            "R_answered_cue: the reasoning names an answer after 'The answer is' (what MAI's verify-on-reasoning "
            "reads); R_answered_lm_eval_strict: lm-eval's bbh/cot_zeroshot strict-match finds one; R_hit_budget: "
            "the reasoning used all --think-tokens.")
    tables = report.write_table(df, report_dir, NAME, config, note,
                                "Dev-split settings: Simple (S) vs reasoning (R) accuracy (%) per Think prompt, how "
                                "often the reasoning ends in an answer, and its length")
    return dict(tables=tables, frame=df, markdown=tables[0].read_text())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default="runs", help="runs directory (default: runs)")
    ap.add_argument("--report-dir", default=".", help="where paper_tables/ goes (default: the repository)")
    args = ap.parse_args(argv)
    print(build(args.runs, args.report_dir)["markdown"])


if __name__ == "__main__":
    main()
