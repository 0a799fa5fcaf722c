"""Harness overhead: the cascade's wall time against the sum of its model calls' own times (CPU preset).

    python experiments/00_overhead.py                 # tiny random models, synthetic data, CPU
    python experiments/00_overhead.py --limit 20 --transfer sparse --sparse-layer 2

What the harness adds (answer extraction, matching, request building, trace bookkeeping) must stay under
5% of the time spent in the models, or latency comparisons between MAI and single-model baselines would
measure our glue. Prints the ratio measured in this run; writes nothing else.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm.auto import tqdm  # noqa: E402

from mai import cli  # noqa: E402
from mai.data import get_benchmark, load_benchmark  # noqa: E402

PRESETS = {"cpu": cli.Preset(cli.CPU_MODELS, cli.CPU_BENCHMARKS, limit=5,
                             extra=dict(small="tiny-small", large="tiny-large", think_tokens=16, simple_tokens=8,
                                        max_pixels=128 * 128))}


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    p.set_defaults(preset="cpu")
    cli.add_cascade_flags(p)
    args = cli.parse(p, PRESETS, argv)
    cascade = cli.transformers_cascade(args)
    small, large = cascade.small, cascade.large
    examples = [ex for name in args.benchmarks for ex in load_benchmark(name, args.limit, args.seed)]
    wall = calls = 0.0
    for ex in tqdm(examples, desc="cascade"):
        bench = get_benchmark(ex.benchmark)
        images = ex.load_images()
        trace = cascade.answer(ex.question, images, bench.metric, bench.post_prompt,
                               min(bench.max_new_tokens, args.simple_tokens))
        wall += trace.wall_seconds
        calls += trace.totals()["latency"]
    ratio = wall / calls
    print(f"{len(examples)} queries on {small.loaded.label} + {large.loaded.label} (random weights, synthetic data, "
          f"{small.loaded.device}): cascade wall {wall:.3f} s, model calls {calls:.3f} s, "
          f"harness overhead ratio {ratio:.4f} ({'under' if ratio < 1.05 else 'OVER'} the 1.05 bound)")
    return ratio


if __name__ == "__main__":
    cli.run(main)
