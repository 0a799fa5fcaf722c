"""Table 10: MAI (2B + 8B) against 8B-S, 8B-R, 2B-R and Full reasoning transfer: accuracy, route fractions,
mean tokens per model, latency per query and speedup over 8B-R.

    python experiments/10_mai.py                                   # paper: Qwen3-VL 2B + 8B, GPU, hub
    python experiments/10_mai.py --transfer sparse --sparse-layer 12 --delta 0.8
    python experiments/10_mai.py --preset cpu                      # tiny random models, synthetic data
    python experiments/10_mai.py --preset cpu-real                 # real Qwen2.5-Coder 0.5B + 1.5B, BBH + GSM8K
    python experiments/10_mai.py --verify reasoning                # only the simplified framework's MAI row

Each system answers every example on its own (latency per query at batch size 1, the paper's setting),
with nothing cached from another system (mai.evaluate.isolated: vLLM's caches are emptied at every system
boundary; within one MAI query the second stage still extends the first). MAI runs in both verification
variants the paper describes, as two rows: the two-stage answer of Section 5.1 (the small model answers
again from its KV cache, --verify answer) and the simplified framework (the answer read off the small
model's reasoning, --verify reasoning); --verify names one to run only it.
At scale (docs/scaling.md): --backend vllm serves both models with vLLM (--tensor-parallel N);
--order stage runs each cascade stage as one batch (throughput; a call's times are its batch's divided by
the batch size); --shard I/N runs one of N shards, merged by `python -m analysis.merge_shards`.

    python experiments/10_mai.py --backend vllm --order stage --shard 0/8     # one of 8 GPUs

Timing studies (random weights never agree, so the route fractions cannot come from the models): with
--force-routes simple=0.55,reasoning=0.15,transfer=0.30 each example's route is drawn from these fractions
(deterministically from its id, mai.forced), the cascade makes every real call of that route, and every
call of every system decodes exactly its limit (--simple-tokens, --think-tokens, --answer-tokens). With
--latency-profile RUN (an experiments/03 run of the same models on the same machine), the table puts the
latency model's prediction (analysis/latency_model.py) beside each measured latency.

    python experiments/10_mai.py --preset cpu --force-routes simple=0.55,reasoning=0.15,transfer=0.30 \\
        --latency-profile runs/03_stage_profiling/cpu --run-name cpu-forced

One untimed call of each model (a short Simple answer to the first example) comes before the timed rows,
so one-time costs (allocator, kernel selection, lazy initialisation) stay out of them.

Writes runs/10_mai/<run>/, and into its report/ (or --report-dir) paper_tables/table10_mai*.{md,tex} and
figures/table10_mai*.png; resumes.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import table10  # noqa: E402
from mai import MaiError, cli, experiment, model_specs, models  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.batch import (cascade_batch_system, model_batch_system, run_systems_stage_major,  # noqa: E402
                       transfer_batch_system)
from mai.cascade import VERIFY, Cascade  # noqa: E402
from mai.benchmarks import get_benchmark  # noqa: E402
from mai.evaluate import (cascade_system, check_example, isolated, model_system, request_for,  # noqa: E402
                          run_systems, transfer_system)
from mai.forced import ForcedLengths, forced_cascade_system, parse_fractions  # noqa: E402
from mai.results import row_key  # noqa: E402

EXPERIMENT = "10_mai"
SYSTEMS = ("large-S", "large-R", "small-R", "Full RT", "MAI")
# MAI's rows, one per verification variant, named as the paper names them.
MAI_LABELS = {"answer": "MAI two-stage answer (Sec. 5.1)", "reasoning": "MAI simplified (verify on reasoning)"}
PRESETS = {
    "paper": RECORDS["paper"].preset(None),
    "cpu": RECORDS["cpu"].preset(6),
    # The settings frozen on the dev split (mai.cli REAL_*), on 200 test questions a task, stage-major (accuracy
    # and routes; the batch-1 latency sample is its own run: --order example --limit 30 --run-name cpu-real-latency).
    # MAI transfers sparsely from the paper's relative depth (cli.REAL_SPARSE_LAYER, delta 0.8 as the paper); Full
    # RT is its own row. MAI's rows come first, so that a run cut short has the routes, then 1.5B-R, the one
    # baseline no other script computes: 1.5B-S, 0.5B-R and Full RT are Table 8's large-S, small-R and transfer
    # rows, and whichever of the two scripts runs a batch first, the other copies it (mai.reuse).
    "cpu-real": RECORDS["cpu-real"].preset(cli.REAL_LIMITS["table10"], sparse=True, stage=True,
                                           **RECORDS["cpu-real"].settings("transfer"),
                                           systems=["MAI", "large-R", "large-S", "Full RT", "small-R"],
                                           reuse_from="08_reasoning_transfer"),
}


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    cli.add_cascade_flags(p)
    cli.add_scale_flags(p)
    cli.add_reuse_flag(p)
    p.set_defaults(verify=None)  # Table 10 runs both variants unless --verify names one
    p.add_argument("--systems", type=cli.csv_list,
                   help=f"subset of {', '.join(SYSTEMS)}, run in this order (default: the preset's, else all)")
    g = p.add_argument_group("timing studies")
    g.add_argument("--force-routes", type=parse_fractions, metavar="simple=F,reasoning=F,transfer=F",
                   help="draw each example's MAI route from these fractions instead of letting the models "
                        "decide, and force every call's output length to its limit (latency only: accuracies "
                        "and routes of such a run are not MAI's)")
    g.add_argument("--latency-profile", nargs="+", metavar="RUN", help="experiments/03 run(s) of the same models on "
                   "this machine (several are pooled): the table gives the latency model's prediction beside each "
                   "measured latency")
    args = cli.parse(p, PRESETS, argv)
    args.models = [args.small, args.large]
    args.systems = args.systems or list(SYSTEMS)
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        raise MaiError(f"unknown system(s) {', '.join(sorted(unknown))}; choose from: {', '.join(SYSTEMS)}")
    variants = [args.verify] if args.verify else list(VERIFY)
    args.verify = variants[0]
    config = cli.cascade_config(args)
    args.verify = variants  # config.json records every variant run
    cli.check_scale(args)
    if args.force_routes and args.order == "stage":
        raise MaiError("--force-routes is a batch-1 latency study: run it with --order example")
    if args.latency_profile:
        args.latency_profile = [str(Path(p).resolve()) for p in args.latency_profile]
        for path in args.latency_profile:
            if not (Path(path) / "results.jsonl").exists():
                raise MaiError(f"--latency-profile {path}: not a run directory of experiments/03_stage_profiling.py "
                               "(no results.jsonl)")
    # The run directory first: a second process on it stops here, before any data loads.
    store, tracker = experiment.open_run(EXPERIMENT, args, cascade={**config.to_dict(), "verify": variants})
    examples = experiment.shard_examples(experiment.load_examples(args, store), args.shard)

    small, large = experiment.scale_generators(args, store, config)
    if args.force_routes:
        small, large = ForcedLengths(small), ForcedLengths(large)
    S, L = model_specs.model_label(args.small), model_specs.model_label(args.large)
    think, simple = args.think_tokens, args.simple_tokens

    def mai(verify):
        return Cascade(small, large, dataclasses.replace(config, verify=verify), S, L)

    # (row fields, one example at a time, a batch in stage order) per system.
    builders = {
        "large-S": lambda: [({"system": f"{L}-S", "kind": "large-S"},
                             model_system(large.generate, "large", "simple", think, simple),
                             model_batch_system(large, "large", "simple", think, simple))],
        "large-R": lambda: [({"system": f"{L}-R", "kind": "large-R"},
                             model_system(large.generate, "large", "think", think, simple),
                             model_batch_system(large, "large", "think", think, simple))],
        "small-R": lambda: [({"system": f"{S}-R", "kind": "small-R"},
                             model_system(small.generate, "small", "think", think, simple),
                             model_batch_system(small, "small", "think", think, simple))],
        "Full RT": lambda: [({"system": "Full RT", "kind": "Full RT"}, transfer_system(small, large, think, simple),
                             transfer_batch_system(small, large, think, simple))],
        "MAI": lambda: [({"system": MAI_LABELS[v], "kind": "MAI", "verify": v},
                         forced_cascade_system(mai(v), args.force_routes, args.seed, simple) if args.force_routes
                         else cascade_system(mai(v), simple),
                         cascade_batch_system(mai(v), simple)) for v in variants],
    }
    # Isolation: every system starts each example (or batch) with both engines' caches emptied.
    systems = [(fields, isolated(one, (small, large)), isolated(many, (small, large)))
               for s in args.systems for fields, one, many in builders[s]()]
    if examples and store.pending(row_key(ex.id, *fields.values()) for ex in examples for fields, _, _ in systems):
        warm_up(examples[0], small, large)
    if args.order == "stage":
        run_systems_stage_major(store, systems, examples, args.batch_size, desc="systems",
                                reuse_from=cli.reuse_dir(args))
    else:
        run_systems(store, [(fields, one) for fields, one, _ in systems], examples, desc="systems")
    store.write_json("memory.json", models.memory_report())

    outputs = table10.build(store.dir, args.report_dir)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)


def warm_up(example, *generators) -> None:
    """One short untimed Simple answer of each model, so one-time costs stay out of the timed rows."""
    bench = get_benchmark(example.benchmark)
    try:
        images = check_example(example)
    except ValueError:
        return  # the example's error row will say why; the first timed call then warms up instead
    for gen in generators:
        gen.generate(request_for(example, bench, images, "simple", 2, 2))


if __name__ == "__main__":
    cli.run(main)
