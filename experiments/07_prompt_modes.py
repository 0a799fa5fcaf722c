"""Table 7: accuracy, mean output tokens and latency of Qwen3-VL 2B/4B/8B with the Simple (S) and the
Think (R) prompt, on ChartQA, POPE, InfoVQA, RealWorldQA and MMBench.

    python experiments/07_prompt_modes.py                  # the paper's setting (GPU, hub access)
    python experiments/07_prompt_modes.py --preset cpu     # tiny random models, synthetic data, CPU
    python experiments/07_prompt_modes.py --preset cpu-real   # real Qwen2.5-Coder 0.5B/1.5B, shipped BBH + GSM8K, CPU

Writes runs/07_prompt_modes/<run>/{config.json,results.jsonl}, and into its report/ (or --report-dir)
paper_tables/table7_prompt_modes*.{md,tex} and figures/table7_prompt_modes*.png. Running the same command again resumes.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import table07  # noqa: E402
from mai import cli, experiment, model_specs, models  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.batch import model_batch_system, run_systems_stage_major  # noqa: E402
from mai.evaluate import evaluate_model, prompt_system  # noqa: E402
from mai.generation import HFGenerator  # noqa: E402
from mai.results import row_key  # noqa: E402

EXPERIMENT = "07_prompt_modes"
PRESETS = {
    "paper": RECORDS["paper"].preset(None, pair=False),
    "cpu": RECORDS["cpu"].preset(12, pair=False, think_tokens=48, simple_tokens=16),  # longer answers than Table 10's
    # The settings frozen on the dev split (mai.cli REAL_*), stage-major on the test split, on Table 10's questions:
    # three of its four rows are Table 10's 1.5B-S, 0.5B-R and 1.5B-R, copied once that run has them (mai.reuse).
    "cpu-real": RECORDS["cpu-real"].preset(cli.REAL_LIMITS["table7"], pair=False, stage=True, reuse_from="10_mai"),
}


def main(argv=None, doc=__doc__):
    p = cli.parser(doc, PRESETS)
    p.add_argument("--modes", type=cli.csv_list, default=["simple", "think"], help="prompt modes (simple,think)")
    p.add_argument("--think-tokens", type=int, help="max new tokens with the Think prompt (paper: 1024)")
    p.add_argument("--simple-tokens", type=int, help="cap on lmms-eval's max new tokens for the Simple prompt")
    p.add_argument("--order", choices=cli.ORDERS,
                   help="example: one question at a time, batch size 1 (latency, the paper's setting; default); "
                        "stage: each (model, mode) over the questions in batches of --batch-size (throughput: "
                        "latencies are batch shares)")
    p.add_argument("--batch-size", type=int, help="--order stage: questions per batch (default: the preset's, else 16)")
    cli.add_reuse_flag(p)
    args = cli.parse(p, PRESETS, argv)
    args.batch_size = args.batch_size or 16
    # The run directory first: a second process on it stops here, before any data loads.
    store, tracker = experiment.open_run(EXPERIMENT, args)
    examples = experiment.load_examples(args, store)
    for spec in args.models:
        if not store.pending(row_key(ex.id, model_specs.model_label(spec), mode) for ex in examples for mode in args.modes):
            continue  # finished in an earlier invocation: no need to load it
        model = experiment.load(spec, args, store)
        generator = HFGenerator(model, args.seed, decode=args.decode)
        if args.order == "stage":
            systems = [({"model": model.label, "mode": mode},
                        prompt_system(generator.generate, mode, args.think_tokens, args.simple_tokens),
                        model_batch_system(generator, None, mode, args.think_tokens, args.simple_tokens))
                       for mode in args.modes]
            run_systems_stage_major(store, systems, examples, args.batch_size, desc=model.label,
                                    reuse_from=cli.reuse_dir(args))
        else:
            evaluate_model(store, generator.generate, model.label, examples, args.modes, args.think_tokens,
                           args.simple_tokens)
        models.free(model)
    outputs = table07.build(store.dir, args.report_dir)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)
    return args


if __name__ == "__main__":
    cli.run(main)
