"""Harness overhead: the cascade's wall time against the sum of its model calls' own times (CPU preset).

    python experiments/00_overhead.py                 # tiny random models, synthetic data, CPU
    python experiments/00_overhead.py --limit 20 --transfer sparse --sparse-layer 2

What the harness adds (answer extraction, matching, request building, trace bookkeeping) must stay under
5% of the time spent in the models, or latency comparisons between MAI and single-model baselines would
measure our glue. This is the benchmark's own check: it prints the ratio measured in this run, writes it
with every query's times to --json (default runs/bench/overhead.<preset>.json), and exits with status 1
when the ratio is --max-ratio (1.05) or more.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm.auto import tqdm  # noqa: E402

from mai import cli, experiment  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.benchmarks import get_benchmark, load_benchmark  # noqa: E402

PRESETS = {"cpu": RECORDS["cpu"].preset(5, think_tokens=16)}
MAX_RATIO = 1.05


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    p.set_defaults(preset="cpu")
    cli.add_cascade_flags(p)
    p.add_argument("--max-ratio", type=float, default=MAX_RATIO, help="fail (exit 1) at this ratio or above")
    p.add_argument("--json", type=Path, help="where the numbers go (default runs/bench/overhead.<preset>.json)")
    args = cli.parse(p, PRESETS, argv)
    cascade = experiment.transformers_cascade(args)
    small, large = cascade.small, cascade.large
    examples = [ex for name in args.benchmarks for ex in load_benchmark(name, args.limit, args.seed)]
    bench0 = get_benchmark(examples[0].benchmark)  # one untimed query: one-time costs are not the harness's
    cascade.answer(examples[0].question, examples[0].load_images(), bench0.agreement, bench0.post_prompt, 2)
    queries = []
    for ex in tqdm(examples, desc="cascade"):
        bench = get_benchmark(ex.benchmark)
        images = ex.load_images()
        trace = cascade.answer(ex.question, images, bench.agreement, bench.post_prompt,
                               min(bench.max_new_tokens, args.simple_tokens))
        queries.append(dict(example_id=ex.id, route=trace.route, wall_s=trace.wall_seconds,
                            calls_s=trace.totals()["latency"], calls=len(trace.calls)))
    wall, calls = sum(q["wall_s"] for q in queries), sum(q["calls_s"] for q in queries)
    ratio = wall / calls
    ok = ratio < args.max_ratio
    produced = (f"{len(queries)} queries on {small.loaded.label} + {large.loaded.label} (RANDOM weights, SYNTHETIC "
                f"data, {small.loaded.device}), verify {cascade.config.verify}, transfer {cascade.config.transfer}")
    print(f"{produced}: cascade wall {wall:.3f} s, model calls {calls:.3f} s, harness overhead ratio {ratio:.4f} "
          f"({'under' if ok else 'OVER'} the {args.max_ratio} bound)")
    out = args.json or cli.REPO_ROOT / "runs" / "bench" / f"overhead.{args.preset}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(script="experiments/00_overhead.py", produced_by=produced, ratio=ratio,
                                   max_ratio=args.max_ratio, ok=ok, wall_s=wall, calls_s=calls, queries=queries),
                              indent=2) + "\n")
    print(f"written: {out}")
    if not ok:
        raise SystemExit(1)
    return ratio


if __name__ == "__main__":
    cli.run(main)
