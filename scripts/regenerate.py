"""Regenerate every table and figure of one preset, timing each script, then the claims table and figure.

    .venv/bin/python scripts/regenerate.py --preset cpu-real     # the real pair on the shipped BBH + GSM8K (setup.sh --real)
    .venv/bin/python scripts/regenerate.py --preset cpu          # random weights, synthetic data (the machinery)

Each part is `python experiments/<script> --preset P --report-dir <repository>`, into runs/ and the repository's
paper_tables/ and figures/ (a script run without --report-dir writes them into its run's report/ instead); every
script resumes, so a killed regeneration continues where it stopped. --preset cpu runs experiments 07, 01, 03, 08,
09, 10 and 12 one after another (01 reuses 07's rows). --preset cpu-real runs in two phases (PHASES): first the
timing studies alone on the machine (03's stage profile, Table 10's batch-1 latency sample 10_mai-latency, Table
12's speculative decoding), then the stage-major runs in two lanes at once, one torch thread each
(mai.cli.REAL_BATCH_THREADS), so both cores work: 08 then 09 in one lane, 10 then 07 and 01 in the other. Tables 8
and 10 share their baseline batches (mai.reuse): whichever lane computes one first, the other copies it. A lane's
scripts write their output to runs/regenerate.<preset>.<script>.log. Each script's wall time, each phase's and
the total go to runs/regenerate.<preset>.json (docs/measurements.md quotes it); `--only 10_mai,09_layer_ablation`
runs a subset. Finished runs are reused: delete runs/<experiment>/<preset> to measure a script from scratch.
`--run-name NAME` writes every part's rows to runs/<experiment>/NAME (the latency sample to NAME-latency) and its
record to runs/regenerate.NAME.json, leaving the committed tables alone (they read runs/<experiment>/<preset>):
how a new set of test rows grows beside the set the tables show until it is complete. After each part, and at
the end, it prints the wall time its rows' own UTC timestamps span (first call's start to last call's end, over
the rows that carry them), so that a regeneration's time can be read off the committed rows themselves.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("07_prompt_modes", "01_tokens_vs_accuracy", "03_stage_profiling", "08_reasoning_transfer",
           "09_layer_ablation", "10_mai-latency", "10_mai", "12_speculative_decoding")
# Parts that are a script run with other flags: Table 10's batch-1 latency sample (cpu-real runs Table 10 in
# stage order, whose times are batch shares; analysis/table10.py reads this sibling run's latencies). Its own
# tables stay in its run's report/: Table 10's committed table is the merged one that 10_mai writes next.
# (script, run name suffix, its flags)
VARIANTS = {"10_mai-latency": ("10_mai", "latency", ["--order", "example", "--limit", "30", "--threads", "2"])}
# Phases run one after another; a phase's lanes run at once, each lane's scripts in order. cpu-real: what is
# timed at batch 1 runs alone (two threads); the stage-major runs share the cores, one thread each. 10_mai-latency
# precedes 10_mai, whose table reads it; 07 precedes 01, which reuses its rows.
# The stage-major parts decode eagerly: their batched calls do on any --decode (mai.compiled_decode is batch 1
# only), and the runs begun before --decode existed resume only under the same setting.
EAGER = {"cpu-real": ("08_reasoning_transfer", "09_layer_ablation", "10_mai", "07_prompt_modes",
                      "01_tokens_vs_accuracy")}
PHASES = {
    "cpu-real": [[["03_stage_profiling", "10_mai-latency", "12_speculative_decoding"]],
                 [["08_reasoning_transfer", "09_layer_ablation"], ["10_mai", "07_prompt_modes", "01_tokens_vs_accuracy"]]],
    "cpu": [[[s for s in SCRIPTS if s not in VARIANTS]]],
}


def run_name(script: str, name: str) -> tuple[str, str]:
    """(experiment script, run name) of a part, for the set named `name` (the preset's own: the preset)."""
    base, suffix, _ = VARIANTS.get(script, (script, None, None))
    return base, f"{name}-{suffix}" if suffix else name


def command(script: str, preset: str, wandb: str, name: str | None = None) -> list[str]:
    name = name or preset
    base, run = run_name(script, name)
    cmd = [sys.executable, str(ROOT / "experiments" / f"{base}.py"), "--preset", preset, "--wandb", wandb]
    if script in EAGER.get(preset, ()):
        cmd += ["--decode", "eager"]
    if script in VARIANTS:  # a variant's tables stay in its run's report/
        return cmd + VARIANTS[script][2] + ["--run-name", run]
    if name != preset:  # a set growing beside the committed one: its tables stay in its runs' report/
        return cmd + ["--run-name", run]
    return cmd + ["--report-dir", str(ROOT)]  # the committed tables: never a run's default


def run_dir(script: str, name: str) -> Path:
    base, run = run_name(script, name)
    return ROOT / "runs" / base / run


def row_times(run: Path) -> tuple[list[str], list[str]]:
    """Every timestamped row's (start, end) in a run, by the rows' own UTC timestamps (rows written before they
    carried timestamps have none): the row's own span, else its calls' (a cascade's trace, a transfer's calls)."""
    starts, ends = [], []
    if not (run / "results.jsonl").exists():
        return starts, ends
    for line in (run / "results.jsonl").read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        calls = [c.get("result", {}) for c in row.get("calls") or row.get("trace") or []]
        started = row.get("started") or min((c["started"] for c in calls if c.get("started")), default=None)
        ended = row.get("ended") or max((c["ended"] for c in calls if c.get("ended")), default=None)
        if started and ended:
            starts.append(started)
            ends.append(ended)
    return starts, ends


def rows_span(run: Path) -> tuple[float, int, str, str, float] | None:
    """(seconds from the first row's start to the last row's end, rows counted, that start, that end, busy
    seconds) by the rows' own timestamps (row_times), or None. Busy seconds cover the union of the rows'
    intervals: a run resumed in a later session does not count the hours between its sessions, which the span
    does."""
    import datetime

    starts, ends = row_times(run)
    if not starts:
        return None
    span = datetime.datetime.fromisoformat(max(ends)) - datetime.datetime.fromisoformat(min(starts))
    return span.total_seconds(), len(starts), min(starts), max(ends), busy_seconds(starts, ends)


def busy_seconds(starts: list[str], ends: list[str]) -> float:
    """Seconds covered by the union of the intervals [start, end] (ISO UTC timestamps)."""
    import datetime

    busy, reach = 0.0, None
    for start, end in sorted(zip(map(datetime.datetime.fromisoformat, starts),
                                 map(datetime.datetime.fromisoformat, ends))):
        if reach is None or start > reach:
            busy, reach = busy + (end - start).total_seconds(), end
        elif end > reach:
            busy, reach = busy + (end - reach).total_seconds(), end
    return busy


def run_lane(scripts: list[str], args, record: dict, log: bool, failures: list) -> None:
    """One lane: its scripts in order, each timed; the first failure ends the lane. A script's seconds add up
    over the invocations that resumed its run (a run longer than a session), and start from zero when its run
    directory has no rows yet."""
    for script in scripts:
        if not (run_dir(script, args.run_name) / "results.jsonl").exists():
            record["seconds"].pop(script, None)
            record["invocations"].pop(script, None)
        cmd = command(script, args.preset, args.wandb, args.run_name)
        log_path = ROOT / "runs" / f"regenerate.{args.run_name}.{script}.log"
        print(f"== {time.strftime('%H:%M:%S')} start {' '.join(cmd[1:])}"
              + (f" (output: {log_path.relative_to(ROOT)})" if log else ""), flush=True)
        start = time.perf_counter()
        if log:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(log_path, "w") as out:
                rc = subprocess.call(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        else:
            rc = subprocess.call(cmd, cwd=ROOT)
        took = time.perf_counter() - start
        print(f"== {time.strftime('%H:%M:%S')} {script}: {took:.0f} s (exit {rc})", flush=True)
        if rc != 0:
            failures.append((script, rc))
            return
        record["seconds"][script] = round(record["seconds"].get(script, 0) + took, 1)
        record["invocations"][script] = record["invocations"].get(script, 0) + 1
        span = rows_span(run_dir(script, args.run_name))
        if span:
            record.setdefault("rows_span_seconds", {})[script] = round(span[0], 1)
            record.setdefault("rows_busy_seconds", {})[script] = round(span[4], 1)
            print(f"== {script}: its {span[1]} timestamped rows span {span[0]:.0f} s, {span[4]:.0f} s of it busy",
                  flush=True)


def rebuild_tables() -> int:
    """Every table again from the rows now all there (Table 10 reads the latency sample, the claims read them
    all), the README's claims, and the throughput table from scripts/bench_batch.py's measurements."""
    return subprocess.call([sys.executable, str(Path(__file__).resolve().parent / "rebuild_tables.py"), "--readme",
                            "--runs", str(ROOT / "runs"), "--report-dir", str(ROOT)], cwd=ROOT)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-real", choices=["cpu-real", "cpu"])
    ap.add_argument("--only", help=f"comma-separated subset of: {', '.join(SCRIPTS)}")
    ap.add_argument("--wandb", default="disabled", choices=["auto", "online", "offline", "disabled"])
    ap.add_argument("--run-name", help="the set's run name (default: the preset's, whose runs the committed tables "
                    "read); another name grows a set beside it")
    args = ap.parse_args(argv)
    args.run_name = args.run_name or args.preset
    chosen = SCRIPTS if not args.only else tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in chosen if s not in SCRIPTS]
    if unknown:
        ap.exit(2, f"error: unknown script(s) {', '.join(unknown)}; choose from: {', '.join(SCRIPTS)}\n")
    record_path = ROOT / "runs" / f"regenerate.{args.run_name}.json"
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    record.setdefault("seconds", {})
    record.setdefault("phase_seconds", {})
    record.setdefault("invocations", {})
    for number, phase in enumerate(PHASES[args.preset], 1):
        lanes = [[s for s in lane if s in chosen] for lane in phase]
        lanes = [lane for lane in lanes if lane]
        if not lanes:
            continue
        failures: list = []
        # a phase that resumes runs with rows adds to the time recorded before; one that starts from nothing resets it
        resumed = any((run_dir(s, args.run_name) / "results.jsonl").exists() for lane in lanes for s in lane)
        start = time.perf_counter()
        threads = [threading.Thread(target=run_lane, args=(lane, args, record, len(lanes) > 1, failures))
                   for lane in lanes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = round(time.perf_counter() - start, 1)
        earlier = record["phase_seconds"].get(str(number), {}).get("seconds", 0) if resumed else 0
        record["phase_seconds"][str(number)] = dict(lanes=lanes, seconds=round(earlier + took, 1))
        record.update(machine=f"{platform.machine()}, {os.cpu_count()} cores", python=platform.python_version(),
                      phases={str(i): p for i, p in enumerate(PHASES[args.preset], 1)})
        record_path.parent.mkdir(parents=True, exist_ok=True)
        record_path.write_text(json.dumps(record, indent=1) + "\n")
        if failures:
            return failures[0][1]
    if args.preset == "cpu-real" and args.run_name == args.preset:
        rc = rebuild_tables()
        if rc != 0:
            return rc
    total = sum(p["seconds"] for p in record["phase_seconds"].values())
    print(f"== all phases: {total:.0f} s ({total / 3600:.2f} h) wall; per script: "
          + ", ".join(f"{k} {v / 60:.0f} min" for k, v in record["seconds"].items())
          + f"; recorded in {record_path.relative_to(ROOT)}")
    spans = {s: rows_span(run_dir(s, args.run_name)) for s in chosen}
    spans = {s: v for s, v in spans.items() if v}
    if spans:
        first, last = min(v[2] for v in spans.values()), max(v[3] for v in spans.values())
        times = [row_times(run_dir(s, args.run_name)) for s in spans]
        busy = busy_seconds([t for st, _ in times for t in st], [t for _, en in times for t in en])
        record["rows_busy_seconds_all"] = round(busy, 1)
        record_path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"== by the rows' own timestamps: {', '.join(f'{s} {v[0] / 60:.0f} min' for s, v in spans.items())}; "
              f"first row started {first}, last ended {last}; busy (the union of every row's interval, lanes "
              f"overlapping, sessions' gaps left out) {busy / 3600:.2f} h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
