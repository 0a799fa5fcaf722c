"""Table 12: token-level speculative decoding (transformers assisted generation, a 2B draft for the 8B
target) against the 8B decoding alone and against MAI, on ChartQA: latency per query, the draft's
acceptance and rejection rates, accuracy.

    python experiments/12_speculative_decoding.py                  # paper: 2B draft, 8B target, ChartQA
    python experiments/12_speculative_decoding.py --preset cpu     # tiny random models, synthetic charts
    python experiments/12_speculative_decoding.py --preset cpu-real   # real 0.5B drafts for the real 1.5B

For each example, in turn: the target alone (greedy, --mode, default the reasoning prompt: 8B-R); the
target with the draft's proposals (the same greedy settings and max_new_tokens; each row records whether its
text equals the target's: always in fp32, not always in bf16, where verifying several tokens a forward rounds
ties differently); MAI with the draft as the small model and the target as the large one (full reasoning
transfer). One untimed warm-up of each comes first.

The draft sees the image (mai.speculative explains why transformers 5.24 would not show it);
--blind-draft runs the library as it is.

Writes runs/12_speculative_decoding/<run>/, and into its report/ (or --report-dir)
paper_tables/table12_speculative*.{md,tex} and figures/table12_speculative*.png. Running the same command again resumes.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import table12  # noqa: E402
from mai import MaiError, cli, experiment, models  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.cascade import Cascade, CascadeConfig  # noqa: E402
from mai.benchmarks import get_benchmark  # noqa: E402
from mai.evaluate import cascade_system, check_example, request_for, run_systems  # noqa: E402
from mai.generation import HFGenerator  # noqa: E402
from mai.results import row_key  # noqa: E402
from mai.speculative import SpeculativeGenerator  # noqa: E402

EXPERIMENT = "12_speculative_decoding"
MODE_TAG = {"simple": "S", "think": "R"}
PRESETS = {
    "paper": RECORDS["paper"].preset(None, pair=False, models=(cli.PAPER_MODELS[0], cli.PAPER_MODELS[2]),
                                     benchmarks=("chartqa",), mode="think"),
    "cpu": RECORDS["cpu"].preset(4, pair=False, benchmarks=("synth-chartqa",), think_tokens=24, mode="think"),
    # GSM8K's arithmetic stands where the paper's ChartQA reasoning does; the 0.5B drafts for the 1.5B (one tokenizer).
    "cpu-real": RECORDS["cpu-real"].preset(cli.REAL_LIMITS["table12"], pair=False, benchmarks=("gsm8k",),
                                           mode="think"),
}


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    p.add_argument("--draft", help="the draft (small) model (default: the preset's, or the first of --models)")
    p.add_argument("--target", help="the target (large) model (default: the preset's, or the last of --models)")
    p.add_argument("--mode", choices=["simple", "think"], help="the target's prompt (default think: 8B-R)")
    p.add_argument("--think-tokens", type=int, help="max new tokens with the Think prompt, for the target and "
                   "for MAI's small model (paper: 1024)")
    p.add_argument("--simple-tokens", type=int, help="cap on lmms-eval's max new tokens for the Simple prompt")
    p.add_argument("--num-assistant-tokens", type=int,
                   help="draft tokens proposed per step at most (default: transformers' own, 20)")
    p.add_argument("--blind-draft", action="store_true",
                   help="run transformers' assisted generation as it is: the draft never sees the image")
    args = cli.parse(p, PRESETS, argv)
    # Speculative decoding runs eagerly (transformers' assisted generation); so does its baseline, the target
    # alone, so that the speedup compares one decode path with itself, whatever the preset's --decode.
    args.decode = "eager"
    if not (args.draft and args.target) and len(args.models) != 2:
        raise MaiError("give --draft and --target, or --models DRAFT,TARGET")
    args.draft, args.target = args.draft or args.models[0], args.target or args.models[-1]
    args.models = [args.draft, args.target]
    cascade_config = CascadeConfig(think_tokens=args.think_tokens, transfer="full")
    # The run directory first: a second process on it stops here, before any data loads.
    store, tracker = experiment.open_run(EXPERIMENT, args, cascade=cascade_config.to_dict())
    examples = experiment.load_examples(args, store)

    draft_model = experiment.load(args.draft, args, store)
    target_model = experiment.load(args.target, args, store)
    draft, target = HFGenerator(draft_model, args.seed), HFGenerator(target_model, args.seed)
    speculative = SpeculativeGenerator(target_model, draft_model, args.seed, args.num_assistant_tokens,
                                       draft_sees_image=not args.blind_draft)
    D, T, tag = draft_model.label, target_model.label, MODE_TAG[args.mode]

    # The target's text per example, for checking the speculative one (rows already done count too).
    target_text = {r["example_id"]: r["prediction"] for r in store.rows()
                   if r.get("kind") == "target" and not r.get("error")}

    def remember(row):
        if row.get("kind") == "target" and not row.get("error"):
            target_text[row["example_id"]] = row["prediction"]

    def alone(example, bench, images):
        return target.generate(request_for(example, bench, images, args.mode, args.think_tokens,
                                           args.simple_tokens)).summary()

    def with_draft(example, bench, images):
        out = speculative.generate(request_for(example, bench, images, args.mode, args.think_tokens,
                                               args.simple_tokens)).summary()
        stats = out["stats"]
        for key in ("draft_proposed", "draft_accepted", "verify_steps", "acceptance_rate", "rejection_rate",
                    "accepted_per_step", "draft_seconds"):
            out[key] = stats[key]
        plain = target_text.get(example.id)
        out["same_as_target"] = None if plain is None else out["text"] == plain
        return out

    systems = [({"system": f"{T}-{tag}", "kind": "target"}, alone),
               ({"system": f"{T}-{tag} + {D} draft", "kind": "speculative"}, with_draft),
               ({"system": "MAI", "kind": "MAI"},
                cascade_system(Cascade(draft, target, cascade_config, D, T), args.simple_tokens))]
    if store.pending(row_key(ex.id, *fields.values()) for ex in examples for fields, _ in systems):
        _warm_up(examples[0], target, speculative, draft, args.mode)
    run_systems(store, systems, examples, desc="examples", on_row=remember)
    store.write_json("memory.json", models.memory_report())

    outputs = table12.build(store.dir, args.report_dir)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)


def _warm_up(example, target, speculative, draft, mode) -> None:
    """One short untimed call of each path, so one-time costs (allocator, kernels) stay out of the rows."""
    bench = get_benchmark(example.benchmark)
    try:
        images = check_example(example)
    except ValueError:
        return
    for gen in (target, speculative, draft):
        gen.generate(request_for(example, bench, images, mode, 2, 2))


if __name__ == "__main__":
    cli.run(main)
