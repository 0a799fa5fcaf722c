"""What an experiment script does with its parsed flags (mai.cli): read its examples, open its run
directory, load its models on the chosen backend, build the cascade, and say at the end where everything
went. The flags themselves, their presets and checks are mai.cli's.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from mai import cli, prompts
from mai.cli import cascade_config, check_sparse_layer, parse_shard, text_layers

# Where a run's tables and figures go unless --report-dir says otherwise: <out>/<experiment>/<run-name>/report/.
REPORT = "report"


def load_examples(args: argparse.Namespace, store=None) -> list:
    """Every example of the run's benchmarks (--limit, --seed, --data-files); then the run's config.json
    records where each benchmark was read from (lmms-lab/* or lmms-lab-encoder/*, a parquet file, synthetic)."""
    from mai.benchmarks import dataset_sources, load_benchmark

    examples = [ex for name in args.benchmarks
                for ex in load_benchmark(name, args.limit, args.seed, args.data_files.get(name),
                                         getattr(args, "split", None))]
    style_examples(examples, getattr(args, "think_prompt", None), getattr(args, "simple_prompt", None),
                   args.benchmarks)
    if store is not None:
        sources = dataset_sources()
        store.update_config(datasets={b: sources.get(b) for b in args.benchmarks})
    return examples


def style_examples(examples: list, think_prompt: str | None, simple_prompt: str | None, benchmarks) -> list:
    """Each example's Think and Simple prompt text in the run's styles (--think-prompt; --simple-prompt, per
    benchmark), and the styles in its meta, so its rows carry the settings that produced them. An example built
    outside load_examples (scripts/bench_soak.py's references to the served answers) goes through here too, or
    it would be asked with the default styles whatever the run's."""
    from mai.benchmarks import get_benchmark

    think = think_prompt or "instruction"
    simple = cli.simple_prompt_styles(simple_prompt, benchmarks) if simple_prompt else {}
    for ex in examples:
        ex.think_prompt, ex.simple_prompt = prompts.styled(ex.question, get_benchmark(ex.benchmark), think,
                                                           simple.get(ex.benchmark))
        if think != "instruction":
            ex.meta["think_prompt"] = think
        if simple:
            ex.meta["simple_prompt"] = simple[ex.benchmark]
    return examples


def open_run(experiment: str, args: argparse.Namespace, **extra):
    """The run directory (config.json with provenance) and its W&B run, for one experiment invocation."""
    from mai.results import RunStore, provenance
    from mai.tracking import Tracker

    from mai import images, metrics
    from mai.benchmarks import BENCHMARKS, get_benchmark

    config = {k: v for k, v in vars(args).items() if k not in ("out", "run_name", "wandb", "report_dir")}
    config.update(extra, experiment=experiment, provenance=provenance(args.device))
    # What the scores and images mean: the lmms-eval commit scored against, the image-size policy's pixel
    # bounds, and where each benchmark was read from (lmms-lab/* or lmms-lab-encoder/*).
    config["scoring"] = dict(lmms_eval=f"{metrics.LMMS_EVAL_REPO}@{metrics.LMMS_EVAL_COMMIT}",
                             **{b.name: b.scoring for b in BENCHMARKS.values() if b.scoring})
    if getattr(args, "agree", None):  # the cascade's agreement rule of each benchmark (mai.answers)
        config["agreement"] = {name: get_benchmark(name).agreement.summary for name in args.benchmarks}
    config["image_pixels"] = list(images.policy_bounds(getattr(args, "image_policy", images.DEFAULT_POLICY),
                                                       getattr(args, "max_pixels", None)))
    # Where each benchmark was read from is known only once it is loaded: load_examples adds "datasets".
    store = RunStore(args.out, experiment, args.run_name, config)
    if getattr(args, "report_dir", None) is None:  # the run's own report/, never the committed tables
        args.report_dir = str(store.dir / REPORT)
    tracker = Tracker(args.wandb, store.dir, name=f"{experiment}/{args.run_name}", group=experiment,
                      config=config)
    return store, tracker


def pixel_kwargs(args: argparse.Namespace) -> dict:
    """Image-size flags for load_model: the --image-policy's bounds (mai.images), capped by
    --max-pixels (the lower bound follows a cap below it); {} for the default policy uncapped."""
    from mai import images

    policy = getattr(args, "image_policy", None) or images.DEFAULT_POLICY
    if policy == images.DEFAULT_POLICY and not getattr(args, "max_pixels", None):
        return {}
    lo, hi = images.policy_bounds(policy, getattr(args, "max_pixels", None))
    return dict(min_pixels=lo, max_pixels=hi)


def load(spec: str, args: argparse.Namespace, store=None):
    """load_model with the run's flags; records what the model is in the run's models.json."""
    from mai.models import load_model

    model = load_model(spec, device=args.device, dtype=args.dtype, attn_implementation=args.attn,
                       seed=args.seed, **pixel_kwargs(args))
    record_model(store, model.label, model.describe())
    return model


def record_model(store, label: str, description: dict) -> None:
    """Add one model to the run's models.json, keeping the models an earlier invocation recorded."""
    if store is None:
        return
    path = store.dir / "models.json"
    described = json.loads(path.read_text()) if path.exists() else {}
    described[label] = description
    store.write_json("models.json", described)


def generator(spec: str, args: argparse.Namespace, store=None):
    """The transformers backend's generator of one model, as the flags load and decode it (--decode)."""
    from mai.generation import HFGenerator

    return HFGenerator(load(spec, args, store), args.seed, decode=decode_of(args))


def decode_of(args: argparse.Namespace) -> str:
    """--decode, or eager for an entry point without the flag (the server's settings, read by bench_soak.py)."""
    return getattr(args, "decode", None) or "eager"


def transformers_cascade(args: argparse.Namespace, store=None):
    """The MAI cascade over the --small and --large models on the transformers backend, from the flags."""
    from mai.cascade import Cascade

    config = cascade_config(args)
    small, large = generator(args.small, args, store), generator(args.large, args, store)
    check_sparse_layer(config, small.loaded)
    return Cascade(small, large, config, small.loaded.label, large.loaded.label)


def scale_generators(args: argparse.Namespace, store=None, config=None) -> tuple:
    """The small and the large model's generators on the chosen backend, recorded in models.json; with
    a sparse-transfer config, its layer is checked against the small model's."""
    if args.backend == "hf":
        from mai.generation import HFGenerator

        small_model, large_model = load(args.small, args, store), load(args.large, args, store)
        if config is not None:
            check_sparse_layer(config, small_model)
        return (HFGenerator(small_model, args.seed, decode=decode_of(args)),
                HFGenerator(large_model, args.seed, decode=decode_of(args)))

    from mai.vllm_backend import VLLMGenerator, start_engines

    n_layers = text_layers(args.small) if config is not None and config.sparse is not None else None
    if n_layers is not None:
        check_sparse_layer(config, n_layers)
    generators = [VLLMGenerator(spec, tensor_parallel_size=args.tensor_parallel, dtype=args.dtype, seed=args.seed,
                                gpu_memory_utilization=args.gpu_memory_utilization / 2,
                                max_model_len=args.max_model_len, enforce_eager=args.vllm_eager,
                                hf_device=args.device, start_engine=False, **pixel_kwargs(args))
                  for spec in (args.small, args.large)]
    start_engines(generators)  # on vLLM's CPU backend both memory shares are fixed before either engine starts
    for gen in generators:
        record_model(store, gen.label, gen.describe())
    return tuple(generators)


def shard_examples(examples: list, shard: str | None) -> list:
    """The examples of one shard: every N-th example from the I-th, of the deterministic example list
    (benchmarks in order, each subsampled with --limit and --seed), so the N shards partition it."""
    i, n = parse_shard(shard)
    return list(examples)[i::n]


def finish(store, tracker, outputs: dict) -> None:
    """Log a run's rows, summary and figures to W&B, close it, and print where everything went."""
    tracker.log_table("results", store.rows())
    tracker.summary(outputs["summary"])
    for fig in outputs["figures"]:
        tracker.log_image(Path(fig).stem, fig)
    tracker.finish()
    print("\n" + outputs["markdown"])
    print(f"\nrun: {store.dir}\ntables: {', '.join(map(str, outputs['tables']))}\n"
          f"figures: {', '.join(map(str, outputs['figures']))}")
