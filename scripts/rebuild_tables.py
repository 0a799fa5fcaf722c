#!/usr/bin/env python
"""Rebuild every committed cpu-real table and figure from the committed rows, without loading a model.

    .venv/bin/python scripts/rebuild_tables.py                 # into the repository's paper_tables/ and figures/
    .venv/bin/python scripts/rebuild_tables.py --report-dir /tmp/x

Each experiment's tables come from its run `runs/<experiment>/cpu-real` (the test split), or, where that run
does not exist yet, from the BIG-bench-era history run `cpu-real-bigbench` that wrote them before; then the
claims table (and the README's findings from it, with --readme), the Pareto figure (accuracy against batch-1
latency), the dev-split record and the throughput table.
tests/test_committed_tables.py checks that the committed files are what this writes. scripts/regenerate.py
runs the experiments themselves (hours); this only re-reads their rows (seconds).
"""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# experiment -> the analysis modules that build its tables (figure01 draws Table 7's rows as Figure 1)
BUILDERS = {"10_mai": ["table10"], "08_reasoning_transfer": ["table08"], "09_layer_ablation": ["table09"],
            "07_prompt_modes": ["table07", "figure01"], "12_speculative_decoding": ["table12"],
            "03_stage_profiling": ["table03"], "b5_serving_load": ["tableb5"]}


def source_run(runs: Path, experiment: str) -> Path | None:
    """The run an experiment's committed cpu-real tables come from (see the module doc), or None."""
    for name in ("cpu-real", "cpu-real-bigbench"):
        if (runs / experiment / name / "results.jsonl").exists():
            return runs / experiment / name
    return None


def rebuild(runs: Path, report_dir: Path, readme: Path | None = None) -> list[str]:
    """Write every table into report_dir (and the claims into `readme`, when given); returns the runs read."""
    from analysis import claims, dev_settings, pareto, throughput

    read = []
    for experiment, modules in BUILDERS.items():
        run = source_run(runs, experiment)
        if run is None:
            continue
        for module in modules:
            importlib.import_module(f"analysis.{module}").build(run, report_dir)
        read.append(str(run))
    if (runs / "10_mai" / "cpu-real" / "results.jsonl").exists():
        out = claims.build(runs, "cpu-real", report_dir)
        if readme is not None:
            claims.update_readme(readme, out["readme"])
        pareto.build(runs, "cpu-real", report_dir)
    dev_settings.build(runs, report_dir)
    dev_settings.build_simple(runs, report_dir)
    if (runs / "bench" / "batch.hf.json").exists():
        throughput.build(runs / "bench", report_dir)
    return read


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", default=str(ROOT / "runs"), help="the runs directory (default: the repository's)")
    ap.add_argument("--report-dir", default=str(ROOT), help="where paper_tables/ and figures/ go (default: the "
                    "repository)")
    ap.add_argument("--readme", action="store_true", help="also replace the README's findings (the claims table's)")
    args = ap.parse_args(argv)
    for run in rebuild(Path(args.runs), Path(args.report_dir), ROOT / "README.md" if args.readme else None):
        print(f"rebuilt from {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
