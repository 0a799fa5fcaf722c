"""Regenerate every table and figure of one preset, timing each script, then the claims table and figure.

    .venv/bin/python scripts/regenerate.py --preset cpu-real     # the real pair on the shipped BBH + GSM8K (setup.sh --real)
    .venv/bin/python scripts/regenerate.py --preset cpu          # random weights, synthetic data (the machinery)

Runs experiments 07, 01, 03, 08, 09, 10 and 12 in that order (01 reuses 07's rows; for cpu-real, Table 10's
batch-1 latency sample, 10_mai-latency, before Table 10 itself) with the preset's own settings, each as `python experiments/<script> --preset P --report-dir <repository>`, into runs/ and the repository's
paper_tables/ and figures/ (a script run without --report-dir writes them into its run's report/ instead); every script resumes, so a killed regeneration continues where it stopped. Each script's wall time
goes to runs/regenerate.<preset>.json (docs/measurements.md quotes it); `--only 10_mai,12_speculative_decoding` runs a
subset. Finished runs are reused: delete runs/<experiment>/<preset> to measure a script from scratch.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("07_prompt_modes", "01_tokens_vs_accuracy", "03_stage_profiling", "08_reasoning_transfer",
           "09_layer_ablation", "10_mai-latency", "10_mai", "12_speculative_decoding")
# Parts that are a script run with other flags: Table 10's batch-1 latency sample (cpu-real runs Table 10 in
# stage order, whose times are batch shares; analysis/table10.py reads this sibling run's latencies). Its own
# tables stay in its run's report/: Table 10's committed table is the merged one that 10_mai writes next.
VARIANTS = {"10_mai-latency": ("10_mai", lambda preset: ["--order", "example", "--limit", "30", "--threads", "2",
                                                         "--run-name", f"{preset}-latency"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-real", choices=["cpu-real", "cpu"])
    ap.add_argument("--only", help=f"comma-separated subset of: {', '.join(SCRIPTS)}")
    ap.add_argument("--wandb", default="disabled", choices=["auto", "online", "offline", "disabled"])
    args = ap.parse_args(argv)
    chosen = SCRIPTS if not args.only else tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in chosen if s not in SCRIPTS]
    if unknown:
        ap.exit(2, f"error: unknown script(s) {', '.join(unknown)}; choose from: {', '.join(SCRIPTS)}\n")
    record_path = ROOT / "runs" / f"regenerate.{args.preset}.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    record.setdefault("seconds", {})
    for script in chosen:
        if script in VARIANTS and args.preset != "cpu-real":
            continue
        base, extra = VARIANTS.get(script, (script, None))
        cmd = [sys.executable, str(ROOT / "experiments" / f"{base}.py"), "--preset", args.preset, "--wandb", args.wandb]
        # the committed tables: never a run's default; a variant's tables stay in its run's report/
        cmd += extra(args.preset) if extra else ["--report-dir", str(ROOT)]
        print(f"== {' '.join(cmd[1:])}", flush=True)
        start = time.perf_counter()
        rc = subprocess.call(cmd, cwd=ROOT)
        took = time.perf_counter() - start
        print(f"== {script}: {took:.0f} s (exit {rc})", flush=True)
        if rc != 0:
            return rc
        record["seconds"][script] = round(took, 1)
        record.update(machine=f"{platform.machine()}, {os.cpu_count()} cores", python=platform.python_version())
        record_path.parent.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps(record, indent=1) + "\n")
    if args.preset == "cpu-real" and (ROOT / "runs" / "10_mai" / args.preset / "results.jsonl").exists():
        rc = subprocess.call([sys.executable, "-m", "analysis.claims", "--preset", args.preset, "--readme",
                              "--report-dir", str(ROOT)], cwd=ROOT)
        if rc != 0:
            return rc
    total = sum(record["seconds"].values())
    print(f"== all scripts: {total:.0f} s ({total / 60:.1f} min) recorded in {record_path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
