"""The flags every experiment shares, defined once, and the one-line handling of user mistakes.

--preset paper (the default) runs the paper's setting: hub checkpoints and lmms-eval datasets.
--preset cpu runs tiny random-weight models on synthetic data in minutes on a laptop CPU: it checks
the machinery end to end; its numbers are not the paper's.
An experiment gives each preset its defaults; any flag the user passes wins over them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import traceback
from pathlib import Path
from typing import Callable

from mai import MaiError

PAPER_MODELS = ("Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-8B-Instruct")
PAPER_BENCHMARKS = ("chartqa", "pope", "infovqa", "realworldqa", "mmbench")
CPU_MODELS = ("tiny-small", "tiny-large")
CPU_BENCHMARKS = ("synth-chartqa", "synth-pope")
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Preset:
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    limit: int | None
    extra: dict = dataclasses.field(default_factory=dict)  # experiment-specific flag defaults


def csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _data_files(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep:
            raise MaiError(f"--data-files wants BENCHMARK=PATH (a parquet file or glob), got '{item}'")
        out[name] = path
    return out


def parser(doc: str, presets: dict[str, Preset]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(presets), default="paper",
                   help="paper: hub checkpoints and datasets (default); cpu: tiny random models, synthetic "
                        "data, minutes on a CPU (numbers are NOT the paper's)")
    p.add_argument("--models", type=csv_list, help="comma-separated hub ids, local checkpoint paths or "
                   "random-weight architectures (tiny-small, tiny-large, qwen3-vl-2b/4b/8b)")
    p.add_argument("--benchmarks", type=csv_list, help="comma-separated: chartqa, pope, infovqa, realworldqa, "
                   "mmbench, synth-chartqa, synth-pope")
    p.add_argument("--limit", type=int, help="examples per benchmark (a deterministic subsample)")
    p.add_argument("--data-files", action="append", metavar="BENCHMARK=PATH",
                   help="read a benchmark from local parquet files in the hub schema instead of the hub")
    p.add_argument("--out", default="runs", help="runs directory (default: runs)")
    p.add_argument("--run-name", help="run directory name (default: the preset); the same name resumes")
    p.add_argument("--wandb", default="auto", choices=["auto", "online", "offline", "disabled"],
                   help="auto: online if logged in, else offline (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    p.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), bf16, fp16, fp32")
    p.add_argument("--attn", default="sdpa", help="attention implementation: sdpa, eager, flash_attention_2")
    p.add_argument("--max-pixels", type=int, help="image processor's max_pixels (default: lmms-eval's)")
    p.add_argument("--report-dir", default=str(REPO_ROOT),
                   help="where paper_tables/ and figures/ are written (default: the repository)")
    return p


def parse(p: argparse.ArgumentParser, presets: dict[str, Preset], argv=None) -> argparse.Namespace:
    """Parse, then fill every flag the user left out from the chosen preset."""
    args = p.parse_args(argv)
    preset = presets[args.preset]
    args.models = args.models or list(preset.models)
    args.benchmarks = args.benchmarks or list(preset.benchmarks)
    if args.limit is None:
        args.limit = preset.limit
    for key, value in preset.extra.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.run_name = args.run_name or args.preset
    args.data_files = _data_files(args.data_files)
    if args.limit is not None and args.limit <= 0:
        raise MaiError("--limit must be a positive number of examples")
    return args


def run(main: Callable[[], object]) -> None:
    """Call an experiment's main(): a user mistake becomes one line, not a traceback, and exit status 2
    (a flag) or 1 (the machine: a file, a directory, another process)."""
    try:
        main()
    except MaiError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(err.exit_status)
    except KeyboardInterrupt:
        print("interrupted: finished rows are saved; run the same command again to resume", file=sys.stderr)
        sys.exit(130)
    except Exception:
        traceback.print_exc()
        sys.exit(1)


def open_run(experiment: str, args: argparse.Namespace, **extra):
    """The run directory (config.json with provenance) and its W&B run, for one experiment invocation."""
    from mai.results import RunStore, provenance
    from mai.tracking import Tracker

    config = {k: v for k, v in vars(args).items() if k not in ("out", "run_name", "wandb", "report_dir")}
    config.update(extra, experiment=experiment, provenance=provenance(args.device))
    store = RunStore(args.out, experiment, args.run_name, config)
    tracker = Tracker(args.wandb, store.dir, name=f"{experiment}/{args.run_name}", group=experiment,
                      config=config)
    return store, tracker


def pixel_kwargs(args: argparse.Namespace) -> dict:
    """Image-size flags for load_model; the lower bound follows a max below lmms-eval's minimum."""
    from mai.models import MIN_PIXELS

    if not getattr(args, "max_pixels", None):
        return {}
    return dict(max_pixels=args.max_pixels, min_pixels=min(MIN_PIXELS, args.max_pixels))


def add_cascade_flags(p: argparse.ArgumentParser) -> None:
    """Flags of the MAI cascade, shared by every script that runs it."""
    g = p.add_argument_group("MAI cascade")
    g.add_argument("--small", help="the small model (default: the preset's)")
    g.add_argument("--large", help="the large model (default: the preset's)")
    g.add_argument("--think-tokens", type=int, help="max new tokens of the small model's reasoning")
    g.add_argument("--simple-tokens", type=int, help="cap on lmms-eval's max new tokens for the Simple prompt")
    g.add_argument("--answer-tokens", type=int, default=16, help="max new tokens of the second-stage answer")
    g.add_argument("--verify", default="answer", choices=["answer", "reasoning"],
                   help="verify with the two-stage answer (default) or with the answer read off the reasoning")
    g.add_argument("--transfer", default="full", choices=["full", "sparse"], help="reasoning transfer")
    g.add_argument("--sparse-layer", type=int, help="layer whose attention ranks the reasoning (sparse)")
    g.add_argument("--delta", type=float, default=0.8, help="cumulative attention mass kept (sparse)")
    g.add_argument("--heads", default="mean", choices=["mean", "max"], help="head aggregation (sparse)")
    g.add_argument("--sink", default="keep", choices=["keep", "drop_first", "renormalize"],
                   help="attention-sink handling (sparse)")
    g.add_argument("--query", default="answer", choices=["answer", "reasoning_end"],
                   help="whose attention ranks the reasoning: the answer position (default) or the last "
                        "reasoning token")


def cascade_config(args: argparse.Namespace):
    from mai.attention import SparseOptions
    from mai.cascade import CascadeConfig

    sparse = None
    if args.transfer == "sparse":
        if args.sparse_layer is None:
            raise MaiError("--transfer sparse needs --sparse-layer L (the paper uses L10-L14 of the 2B)")
        if not 0 < args.delta <= 1:
            raise MaiError(f"--delta must lie in (0, 1], got {args.delta}")
        sparse = SparseOptions(layer=args.sparse_layer, delta=args.delta, heads=args.heads, sink=args.sink)
    return CascadeConfig(think_tokens=args.think_tokens, answer_tokens=args.answer_tokens, verify=args.verify,
                         transfer=args.transfer, sparse=sparse, query=args.query)


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


def check_sparse_layer(config, small_model) -> None:
    """The sparse-transfer layer exists in the small model (a LoadedModel, or its number of layers)."""
    if config.sparse is None:
        return
    n_layers = small_model if isinstance(small_model, int) else small_model.model.config.text_config.num_hidden_layers
    if not 0 <= config.sparse.layer < n_layers:
        raise MaiError(f"--sparse-layer {config.sparse.layer} is outside the small model's layers "
                       f"0..{n_layers - 1}")


def transformers_cascade(args: argparse.Namespace, store=None):
    """The MAI cascade over the --small and --large models on the transformers backend, from the flags."""
    from mai.cascade import Cascade
    from mai.generation import HFGenerator

    config = cascade_config(args)
    small = HFGenerator(load(args.small, args, store), args.seed)
    large = HFGenerator(load(args.large, args, store), args.seed)
    check_sparse_layer(config, small.loaded)
    return Cascade(small, large, config, small.loaded.label, large.loaded.label)


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


# -- serving at scale: backend, execution order, tensor parallelism, shards ------------------------------

BACKENDS = ("hf", "vllm")
ORDERS = ("example", "stage")


def add_scale_flags(p: argparse.ArgumentParser) -> None:
    """Flags for running at scale: which backend, which execution order, how many GPUs, which shard."""
    g = p.add_argument_group("running at scale")
    g.add_argument("--backend", choices=BACKENDS, default="hf",
                   help="hf: transformers (default); vllm: vLLM, CUDA only (pip install -r requirements-gpu.txt)")
    g.add_argument("--order", choices=ORDERS, default="example",
                   help="example: one query at a time, batch size 1 (latency: the paper's setting, default); "
                        "stage: each cascade stage runs as one batch over the examples routed to it (throughput)")
    g.add_argument("--batch-size", type=int,
                   help="--order stage: examples per stage-major batch, rows written after each "
                        "(default: 8 with hf, 256 with vllm)")
    g.add_argument("--tensor-parallel", type=int, default=1,
                   help="vllm: GPUs per model, vLLM's tensor parallelism (default 1)")
    g.add_argument("--shard", help="I/N: run only the I-th (0-based) of N deterministic shards of the examples, "
                   "in run <run-name>-shardIofN; merge them with python -m analysis.merge_shards")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.85,
                   help="vllm: fraction of GPU memory for both models together, half each (default 0.85)")
    g.add_argument("--max-model-len", type=int, default=16384, help="vllm: longest prompt + output (default 16384)")
    g.add_argument("--vllm-eager", action="store_true",
                   help="vllm: no CUDA graphs or compilation (starts faster, decodes slower)")


def parse_shard(text: str | None) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N; None -> (0, 1)."""
    if text is None:
        return 0, 1
    i, sep, n = str(text).partition("/")
    if not (sep and i.strip().isdigit() and n.strip().isdigit() and 0 <= int(i) < int(n)):
        raise MaiError(f"--shard wants I/N with 0 <= I < N (e.g. 0/4 for the first of four), got '{text}'")
    return int(i), int(n)


def shard_examples(examples: list, shard: str | None) -> list:
    """The examples of one shard: every N-th example from the I-th, of the deterministic example list
    (benchmarks in order, each subsampled with --limit and --seed), so the N shards partition it."""
    i, n = parse_shard(shard)
    return list(examples)[i::n]


def check_scale(args: argparse.Namespace) -> None:
    """Validate the scale flags (before anything is loaded or written): vLLM present when asked for, a
    well-formed shard, whose run name gets a -shardIofN suffix, and the order's default batch size."""
    if args.tensor_parallel < 1:
        raise MaiError("--tensor-parallel must be at least 1")
    if args.backend == "vllm":
        from mai.vllm_backend import require_vllm

        require_vllm()
        if not 0 < args.gpu_memory_utilization <= 1:
            raise MaiError(f"--gpu-memory-utilization must lie in (0, 1], got {args.gpu_memory_utilization}")
    elif args.tensor_parallel != 1:
        raise MaiError("--tensor-parallel is vLLM's: add --backend vllm "
                       "(the hf backend runs each model on one device)")
    if args.batch_size is None:
        args.batch_size = 256 if args.backend == "vllm" else 8
    if args.batch_size < 1:
        raise MaiError("--batch-size must be at least 1")
    i, n = parse_shard(args.shard)
    if args.shard is not None:
        args.shard = f"{i}/{n}"
        args.run_name = f"{args.run_name}-shard{i}of{n}"


def scale_generators(args: argparse.Namespace, store=None, config=None) -> tuple:
    """The small and the large model's generators on the chosen backend, recorded in models.json; with
    a sparse-transfer config, its layer is checked against the small model's."""
    if args.backend == "hf":
        from mai.generation import HFGenerator

        small_model, large_model = load(args.small, args, store), load(args.large, args, store)
        if config is not None:
            check_sparse_layer(config, small_model)
        return HFGenerator(small_model, args.seed), HFGenerator(large_model, args.seed)

    from mai.vllm_backend import VLLMGenerator

    if config is not None and config.sparse is not None:
        check_sparse_layer(config, _text_layers(args.small))
    generators = []
    for spec in (args.small, args.large):
        gen = VLLMGenerator(spec, tensor_parallel_size=args.tensor_parallel, dtype=args.dtype, seed=args.seed,
                            gpu_memory_utilization=args.gpu_memory_utilization / 2,
                            max_model_len=args.max_model_len, enforce_eager=args.vllm_eager,
                            hf_device=args.device, **pixel_kwargs(args))
        record_model(store, gen.label, gen.describe())
        generators.append(gen)
    return tuple(generators)


def _text_layers(spec: str) -> int:
    """Decoder layers of a model, from its config alone (no weights)."""
    from mai.models import ARCHITECTURES, architecture_config

    if spec in ARCHITECTURES:
        return architecture_config(spec).text_config.num_hidden_layers
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(spec)
    return getattr(config, "text_config", config).num_hidden_layers
