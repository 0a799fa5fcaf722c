"""Table 10: MAI (2B + 8B) against 8B-S, 8B-R, 2B-R and Full reasoning transfer: accuracy, route fractions,
mean tokens per model, latency per query and speedup over 8B-R.

    python experiments/10_mai.py                                   # paper: Qwen3-VL 2B + 8B, GPU, hub
    python experiments/10_mai.py --transfer sparse --sparse-layer 12 --delta 0.8
    python experiments/10_mai.py --preset cpu                      # tiny random models, synthetic data

Each system answers every example on its own (latency per query at batch size 1, the paper's setting).
At scale (README, "Running at scale"): --backend vllm serves both models with vLLM (--tensor-parallel N);
--order stage runs each cascade stage as one batch (throughput; a call's times are its batch's divided by
the batch size); --shard I/N runs one of N shards, merged by `python -m analysis.merge_shards`.

    python experiments/10_mai.py --backend vllm --order stage --shard 0/8     # one of 8 GPUs

Writes runs/10_mai/<run>/, paper_tables/table10_mai*.{md,tex} and figures/table10_mai*.png; resumes.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import table10  # noqa: E402
from mai import MaiError, cli, models  # noqa: E402
from mai.batch import (cascade_batch_system, model_batch_system, run_systems_stage_major,  # noqa: E402
                       transfer_batch_system)
from mai.cascade import Cascade  # noqa: E402
from mai.data import load_benchmark  # noqa: E402
from mai.evaluate import cascade_system, model_system, run_systems, transfer_system  # noqa: E402

EXPERIMENT = "10_mai"
SYSTEMS = ("large-S", "large-R", "small-R", "Full RT", "MAI")
PRESETS = {
    "paper": cli.Preset(cli.PAPER_MODELS, cli.PAPER_BENCHMARKS, limit=None,
                        extra=dict(small=cli.PAPER_MODELS[0], large=cli.PAPER_MODELS[2], think_tokens=1024)),
    "cpu": cli.Preset(cli.CPU_MODELS, cli.CPU_BENCHMARKS, limit=6,
                      extra=dict(small="tiny-small", large="tiny-large", think_tokens=32, simple_tokens=8,
                                 max_pixels=128 * 128)),
}


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    cli.add_cascade_flags(p)
    cli.add_scale_flags(p)
    p.add_argument("--systems", type=cli.csv_list, default=list(SYSTEMS), help=f"subset of {', '.join(SYSTEMS)}")
    args = cli.parse(p, PRESETS, argv)
    args.models = [args.small, args.large]
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        raise MaiError(f"unknown system(s) {', '.join(sorted(unknown))}; choose from: {', '.join(SYSTEMS)}")
    config = cli.cascade_config(args)
    cli.check_scale(args)
    # The run directory first: a second process on it stops here, before any data loads.
    store, tracker = cli.open_run(EXPERIMENT, args, cascade=config.to_dict())
    examples = cli.shard_examples([ex for name in args.benchmarks
                                   for ex in load_benchmark(name, args.limit, args.seed, args.data_files.get(name))],
                                  args.shard)

    small, large = cli.scale_generators(args, store, config)
    S, L = models.model_label(args.small), models.model_label(args.large)
    think, simple = args.think_tokens, args.simple_tokens
    builders = {
        "large-S": lambda: model_system(large.generate, "large", "simple", think, simple),
        "large-R": lambda: model_system(large.generate, "large", "think", think, simple),
        "small-R": lambda: model_system(small.generate, "small", "think", think, simple),
        "Full RT": lambda: transfer_system(small, large, think, simple),
        "MAI": lambda: cascade_system(Cascade(small, large, config, S, L), simple),
    }
    names = {"large-S": f"{L}-S", "large-R": f"{L}-R", "small-R": f"{S}-R", "Full RT": "Full RT", "MAI": "MAI"}
    systems = [({"system": names[s], "kind": s}, builders[s]()) for s in args.systems]
    if args.order == "stage":
        batched = {
            "large-S": lambda: model_batch_system(large, "large", "simple", think, simple),
            "large-R": lambda: model_batch_system(large, "large", "think", think, simple),
            "small-R": lambda: model_batch_system(small, "small", "think", think, simple),
            "Full RT": lambda: transfer_batch_system(small, large, think, simple),
            "MAI": lambda: cascade_batch_system(Cascade(small, large, config, S, L), simple),
        }
        systems = [(fields, one, batched[fields["kind"]]()) for fields, one in systems]
        run_systems_stage_major(store, systems, examples, args.batch_size, desc="systems")
    else:
        run_systems(store, systems, examples, desc="systems")
    store.write_json("memory.json", models.memory_report())

    outputs = table10.build(store.dir, args.report_dir)
    cli.finish(store, tracker, outputs)


if __name__ == "__main__":
    cli.run(main)
