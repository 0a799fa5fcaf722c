"""Stage order against example order: the MAI cascade over the same queries, wall time and answers.

    .venv/bin/python scripts/bench_order.py                  # CPU preset: tiny random models, 10 + 10 synthetic
    .venv/bin/python scripts/bench_order.py --limit 5 --transfer sparse --sparse-layer 2

--order example answers one query at a time (batch size 1, the paper's latency setting); --order stage
runs each cascade stage as one batch over the queries routed to it (mai.batch). Both run on the
transformers backend here, after one untimed warm-up query; images are decoded before either clock
starts. The two orders alternate --repeats times and the fastest pass of each is kept (the machine may
be shared: a pass slowed by someone else's load is not the order's cost). Prints both wall times, their
ratio and whether every trace (route, answer, every call's text and token counts) is identical in every
pass, and writes them with what produced them to --json (default runs/bench/order.<preset>.<transfer>.json):
docs/measurements.md quotes its ratios from there.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from mai import cli, experiment  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.batch import Query, run_cascade_stage_major  # noqa: E402
from mai.benchmarks import get_benchmark, load_benchmark  # noqa: E402

PRESETS = {"cpu": RECORDS["cpu"].preset(10)}


def signature(trace) -> tuple:
    """Everything an answer is made of, without times."""
    calls = tuple((c.role, c.mode, c.result["text"], c.result["input_tokens"], c.result["output_tokens"], c.answer)
                  for c in trace.calls)
    return trace.route, trace.prediction, trace.answer, trace.kept_tokens, calls


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    p.set_defaults(preset="cpu")
    cli.add_cascade_flags(p)
    p.add_argument("--repeats", type=int, default=2, help="passes of each order, alternating (default 2)")
    p.add_argument("--json", type=Path, help="where the numbers go (default runs/bench/order.<preset>.<transfer>.json)")
    args = cli.parse(p, PRESETS, argv)
    cascade = experiment.transformers_cascade(args)
    small, large, config = cascade.small, cascade.large, cascade.config
    queries = []
    for name in args.benchmarks:
        bench = get_benchmark(name)
        for ex in load_benchmark(name, args.limit, args.seed, args.data_files.get(name)):
            queries.append(Query(ex.question, ex.load_images(), bench.agreement, bench.post_prompt,
                                 min(bench.max_new_tokens, args.simple_tokens or bench.max_new_tokens)))
    q = queries[0]
    cascade.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens)  # warm-up, untimed

    passes = {"example": [], "stage": []}
    reference, same = None, []
    for _ in range(max(args.repeats, 1)):
        t0 = time.perf_counter()
        example = [cascade.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens) for q in queries]
        t1 = time.perf_counter()
        stage = run_cascade_stage_major(cascade, queries)
        t2 = time.perf_counter()
        passes["example"].append(t1 - t0)
        passes["stage"].append(t2 - t1)
        reference = reference or [signature(t) for t in example]
        same += [signature(t) == ref for run in (example, stage) for t, ref in zip(run, reference)]

    routes = {r: sum(t.route == r for t in example) for r in ("simple", "reasoning", "transfer")}
    best = {order: min(times) for order, times in passes.items()}
    ratio = best["example"] / best["stage"]
    produced = (f"{len(queries)} queries ({', '.join(args.benchmarks)}) on {small.loaded.label} + "
                f"{large.loaded.label}: RANDOM weights, SYNTHETIC data, {small.loaded.device}, {small.loaded.dtype}, "
                f"{torch.get_num_threads()} threads; transfer {config.transfer}, verify {config.verify}, think "
                f"{config.think_tokens} tokens; routes {routes}")
    print(produced)
    for order, label in (("example", "example order (batch size 1)"), ("stage", "stage order (one batch per stage)")):
        print(f"{label}: best {best[order]:.2f} s of {', '.join(f'{t:.2f}' for t in passes[order])}")
    print(f"stage order is {ratio:.2f}x faster; answers identical: {all(same)} "
          f"({sum(same)}/{len(same)} traces over {len(passes['stage'])} passes of each order)")
    result = dict(example_s=best["example"], stage_s=best["stage"], ratio=ratio, identical=all(same))
    out = args.json or cli.REPO_ROOT / "runs" / "bench" / f"order.{args.preset}.{config.transfer}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(result, script="scripts/bench_order.py", produced_by=produced, passes_s=passes,
                                   traces_identical=f"{sum(same)}/{len(same)}", load_average=_load()), indent=2) + "\n")
    print(f"written: {out}")
    return result


def _load() -> list[float] | None:
    """The machine's 1/5/15-minute load averages at the end (a ratio from a loaded machine says so)."""
    try:
        import os

        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


if __name__ == "__main__":
    cli.run(main)
