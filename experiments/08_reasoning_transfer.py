"""Table 8: reasoning transfer. 2B-R, 4B-S, 8B-S, and 8B-S with the 2B's reasoning prepended to its Simple
prompt, on the benchmarks (the paper: transfer beats 8B-S on 4 of 6 tasks). With --sparse-layer L a second
transfer row prepends only the reasoning tokens holding --delta of the small model's attention at layer L (the
sparse transfer MAI uses; the cpu-real preset runs both, on Table 10's questions).

    python experiments/08_reasoning_transfer.py                  # paper: Qwen3-VL 2B, 4B, 8B; GPU, hub
    python experiments/08_reasoning_transfer.py --preset cpu     # tiny random models, synthetic data
    python experiments/08_reasoning_transfer.py --preset cpu-real   # real 0.5B -> 1.5B, shipped BBH + GSM8K

Writes runs/08_reasoning_transfer/<run>/, and into its report/ (or --report-dir)
paper_tables/table8_reasoning_transfer*.{md,tex} and figures/table8_reasoning_transfer*.png; resumes.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import table08  # noqa: E402
from mai import MaiError, cli, experiment  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.batch import (model_batch_system, run_systems_stage_major, sparse_transfer_batch_system,  # noqa: E402
                       transfer_batch_system)
from mai.cascade import Cascade  # noqa: E402
from mai.evaluate import (SpanVariants, model_system, run_systems, sparse_transfer_system,  # noqa: E402
                          transfer_system)

EXPERIMENT = "08_reasoning_transfer"
PRESETS = {
    "paper": RECORDS["paper"].preset(None, mid=cli.PAPER_MODELS[1]),
    "cpu": RECORDS["cpu"].preset(6, mid=""),
    # No middle model: the real pair is two sizes of one family. Full and sparse transfer, on the questions and with
    # the settings of Table 10 (mai.cli REAL_*), stage-major; Table 10's run computes the same 1.5B-S, 0.5B-R and
    # full-transfer batches, and whichever script runs one first, the other copies it (mai.reuse).
    "cpu-real": RECORDS["cpu-real"].preset(cli.REAL_LIMITS["table8"], sparse=True, stage=True, mid="",
                                           **RECORDS["cpu-real"].settings("spans"), reuse_from="10_mai"),
}


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    p.add_argument("--small", help="the model whose reasoning is transferred (default: the preset's)")
    p.add_argument("--mid", help="a middle-size model answered with the Simple prompt ('' to skip)")
    p.add_argument("--large", help="the model that receives the reasoning (default: the preset's)")
    p.add_argument("--think-tokens", type=int, help="max new tokens of the small model's reasoning")
    p.add_argument("--simple-tokens", type=int, help="cap on lmms-eval's max new tokens for the Simple prompt")
    g = p.add_argument_group("sparse transfer (a second transfer row)")
    g.add_argument("--sparse-layer", type=int, help="the small model's layer whose attention ranks the reasoning "
                   "(default: the preset's; none: full transfer only, the paper's Table 8)")
    g.add_argument("--delta", type=float, help="cumulative attention mass kept (default: the preset's, else 0.8)")
    g.add_argument("--spans", type=cli.csv_list, help="the sparse row's spans: token (the paper's selection), number "
                   "(ours: a kept token of a number keeps the whole number); a row each, all from one reasoning and "
                   "capture per question (default: the preset's, else token)")
    p.add_argument("--order", choices=cli.ORDERS, help="example: one question at a time (default); stage: each "
                   "system over the questions in batches of --batch-size (throughput: times are batch shares)")
    p.add_argument("--batch-size", type=int, help="--order stage: questions per batch (default: the preset's, else 16)")
    cli.add_reuse_flag(p)
    args = cli.parse(p, PRESETS, argv)
    args.delta, args.batch_size = args.delta or 0.8, args.batch_size or 16
    args.spans = args.spans or ["token"]
    if "token" not in args.spans or set(args.spans) - {"token", "number"}:
        raise MaiError(f"--spans takes token (always) and number, got {','.join(args.spans)}")
    args.models = [m for m in (args.small, args.mid, args.large) if m]
    # The run directory first: a second process on it stops here, before any data loads.
    store, tracker = experiment.open_run(EXPERIMENT, args)
    examples = experiment.load_examples(args, store)

    small = experiment.generator(args.small, args, store)
    large = experiment.generator(args.large, args, store)
    S, L = small.loaded.label, large.loaded.label
    think, simple = args.think_tokens, args.simple_tokens
    # (row fields, one example at a time, a batch in stage order) per system
    systems = [({"system": f"{S}-R", "kind": "small-R"}, model_system(small.generate, "small", "think", think, simple),
                model_batch_system(small, "small", "think", think, simple))]
    if args.mid:  # loaded only for its own rows: three models need not share memory
        mid = experiment.generator(args.mid, args, store)
        run_systems(store, [({"system": f"{mid.loaded.label}-S", "kind": "mid-S"},
                             model_system(mid.generate, "large", "simple", think, simple))], examples, desc="mid")
        del mid
    systems += [({"system": f"{L}-S", "kind": "large-S"}, model_system(large.generate, "large", "simple", think, simple),
                 model_batch_system(large, "large", "simple", think, simple)),
                ({"system": f"{L}-S + {S} reasoning", "kind": "transfer"}, transfer_system(small, large, think, simple),
                 transfer_batch_system(small, large, think, simple))]
    if args.sparse_layer is not None:
        args.transfer, args.verify, args.answer_tokens, args.heads, args.sink, args.query = (
            "sparse", "answer", 16, "mean", "keep", "answer")  # MAI's sparse selection, at the answer position
        config = cli.cascade_config(args)
        cli.check_sparse_layer(config, small.loaded)
        cascade = Cascade(small, large, config, S, L)
        others = SpanVariants(tuple(s for s in args.spans if s != "token"))
        systems.append(({"system": f"{L}-S + {S} sparse reasoning", "kind": "sparse transfer"},
                        sparse_transfer_system(cascade, think, simple, others),
                        sparse_transfer_batch_system(cascade, think, simple, others)))
        for span in others.spans:  # after the token row, whose reasoning and capture they read
            systems.append(({"system": f"{L}-S + {S} sparse reasoning ({span}s)", "kind": f"sparse transfer ({span})"},
                            sparse_transfer_system(cascade, think, simple, others, span),
                            sparse_transfer_batch_system(cascade, think, simple, others, span)))
    if args.order == "stage":
        run_systems_stage_major(store, systems, examples, args.batch_size, desc="systems",
                                reuse_from=cli.reuse_dir(args))
    else:
        run_systems(store, [(fields, one) for fields, one, _ in systems], examples, desc="systems")

    outputs = table08.build(store.dir, args.report_dir)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)


if __name__ == "__main__":
    cli.run(main)
