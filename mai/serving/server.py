"""Serve MAI, or one of Table 10's baselines, behind an OpenAI-compatible endpoint on 127.0.0.1.

    python -m mai serve --preset cpu                  # tiny random Qwen3-VL pair on a CPU, port 8000
    python -m mai serve --preset cpu-real --port 8001 # real Qwen2.5-Coder 0.5B + 1.5B, text only
    python -m mai serve --preset paper --system large-R --api-key KEY --host 0.0.0.0
    python -m mai serve --preset cpu --backend vllm --max-concurrency 8   # in .venv-vllm

Endpoints: POST /v1/chat/completions, GET /v1/models, GET /health, GET /metrics. The answer is the served
system's, exactly as experiments/10_mai.py computes it for the same question (same preset and backend);
the response carries OpenAI's fields, usage summed over both models' calls, and "mai": {system, route,
trace}. A stream request gets the whole answer as one chunk when the cascade ends (MAI's answer is known
only then). Up to --max-concurrency queries are active at once: on the transformers backend they take turns,
a prefill chunk or a decoded token at a time, least served first (mai.serving.turns); on vLLM they run at once
and the engines batch their stages, chunked prefill interleaving a long prompt with the others' decode steps.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from mai import MaiEnvironmentError, MaiError, cli, experiment, prompts
from mai.presets import RECORDS

# Each preset's record (mai.presets), as experiments/10_mai.py reads it, so that a served answer is Table 10's for the
# same question: the pair, MAI's cascade and transfer, and the real pair's dtype and threads (tests/test_real_smoke.py
# serves committed Table 10 questions and compares every call's prompt length and the route with the rows).
PRESETS = {name: record.served() for name, record in RECORDS.items()}
# The context each preset serves by default (--max-model-len): what its hardware answers within the default
# --request-timeout (600 s), not the checkpoint's whole context (docs/serving-limits.md has the measurements).
# None: the checkpoint's (the paper preset runs on a GPU). Never more than the checkpoint's own.
PRESET_CONTEXT = {"paper": None, "cpu": 32768, "cpu-text": 32768, "cpu-real": 16384}
# vLLM's engines size their KV caches for one request this long: the default on vllm unless the preset's is less.
VLLM_CONTEXT = 16384
CHECKPOINT = "checkpoint"  # --max-model-len checkpoint: the checkpoint's own context
# --max-concurrency's default: active queries (interleaved on transformers, batched by vLLM's engines).
CONCURRENCY = 8
BACKENDS = ("transformers", "vllm")


def parser() -> argparse.ArgumentParser:
    from mai.serving.system import SYSTEMS

    p = cli._Parser(prog="python -m mai serve", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="paper",
                   help="paper: Qwen3-VL 2B + 8B from the hub; cpu: tiny random-weight Qwen3-VL models; cpu-text: "
                        "tiny random-weight text models; cpu-real: Qwen2.5-Coder 0.5B + 1.5B Instruct, real weights, "
                        "text only (each as experiments/10_mai.py's preset)")
    p.add_argument("--system", choices=SYSTEMS, default="mai",
                   help="mai (default; --verify answer: two-stage, reasoning: simplified; --transfer full|sparse), "
                        "or a Table 10 baseline: large-S, large-R, small-S, small-R (model, Simple or Think "
                        "prompt), full-RT (the small model's reasoning handed whole to the large model)")
    p.add_argument("--served-model-name", help="the model name clients send (default: the --system)")
    p.add_argument("--benchmark", default="chartqa",
                   help="whose post-prompt, Simple cap and answer agreement rule to use (default: chartqa)")
    g = p.add_argument_group("server")
    g.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    g.add_argument("--port", type=int, default=8000)
    g.add_argument("--api-key", nargs="+", default=cli.csv_list(os.environ.get("MAI_API_KEY") or "") or None,
                   help="require 'Authorization: Bearer KEY' on /v1/* with one of these keys, as vLLM's --api-key "
                        "(default: $MAI_API_KEY, comma-separated, else none); with several, each key may hold its "
                        "share of --max-queue waiting queries and keys are served in turn")
    g.add_argument("--backend", choices=BACKENDS, default="transformers",
                   help="transformers: the active queries take turns, a prefill chunk or a token at a time "
                        "(default); vllm: both models on vLLM's engine, the active queries batched")
    g.add_argument("--max-concurrency", type=int,
                   help=f"active queries: their cascades run at once (vllm) or in turns (transformers) (default "
                        f"{CONCURRENCY})")
    g.add_argument("--max-active-tokens", type=int,
                   help="a query longer than one prefill chunk becomes active only while the active queries' "
                        "sizes (largest stage, prompt + new tokens) and its own fit this many tokens; shorter ones "
                        "whenever a thread is free (default: --max-model-len, one longest query)")
    g.add_argument("--max-queue", type=int, default=64,
                   help="queries that may wait for a worker; past it 429 (default 64)")
    g.add_argument("--request-timeout", type=float, default=600.0,
                   help="seconds from arrival after which a query is cancelled and answered 504 (default 600); a "
                        "running query stops within one layer's forward over one prefill chunk on transformers, "
                        "one engine step on vllm")
    g.add_argument("--prefill-chunk", type=int, default=2048,
                   help="transformers: a text prompt longer than this is prefilled in chunks of this many tokens, "
                        "so that a cancelled query stops within one layer's forward over one chunk (default 2048, "
                        "vLLM's chunk; 0: one forward pass, stopped within one layer over the whole prompt)")
    g.add_argument("--max-body-bytes", type=int,
                   help="largest request body accepted, else 413 before it is parsed (default: --max-images "
                        "base64 images of --max-image-bytes, plus 1 MiB)")
    g.add_argument("--max-model-len", type=model_len,
                   help="context of each served model: a request whose prompt (after the chat template, images "
                        "as their tokens) plus the tokens any stage may generate does not fit is refused 400 "
                        "before it is queued (default: the preset's, what its hardware answers within the "
                        "default --request-timeout: cpu 32768, cpu-text 32768, cpu-real 16384, paper the "
                        "checkpoint's; never above the checkpoint's max_position_embeddings; on vllm at most "
                        f"{VLLM_CONTEXT}; '{CHECKPOINT}': the checkpoint's own)")
    g.add_argument("--max-image-bytes", type=int, default=10 * 1024 * 1024,
                   help="largest encoded image accepted (default 10 MiB)")
    g.add_argument("--max-image-pixels", type=int, default=16384 * 32 ** 2,
                   help="largest image accepted, width x height (default 16,777,216)")
    g.add_argument("--max-images", type=int, default=1,
                   help="images accepted in one request; vLLM's engines are started with this limit too "
                        "(default 1, as every benchmark's question)")
    g.add_argument("--allow-image-dir", help="serve file:// image URLs under this directory (default: none)")
    g.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    m = p.add_argument_group("models")
    m.add_argument("--device", default="auto")
    m.add_argument("--dtype", help="auto (the default unless the preset names one), bf16, fp16, fp32")
    m.add_argument("--threads", type=int, help="torch CPU threads (default: the preset's, else torch's own)")
    m.add_argument("--attn", default="sdpa")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--max-pixels", type=int, help="cap on the image-size policy's max_pixels")
    v = p.add_argument_group("vllm backend")
    v.add_argument("--gpu-memory-utilization", type=float, default=0.85,
                   help="fraction of GPU memory for both models together (default 0.85)")
    v.add_argument("--tensor-parallel", type=int, default=1)
    v.add_argument("--vllm-eager", action="store_true")
    v.add_argument("--max-num-batched-tokens", type=int, default=VLLM_BATCHED_TOKENS,
                   help="vLLM's chunked prefill: tokens per engine step, decode first, then prefill chunks "
                        f"(default {VLLM_BATCHED_TOKENS}: a step with a long prompt's chunk stays short on a CPU)")
    v.add_argument("--long-prefill-token-threshold", type=int, default=VLLM_LONG_PREFILL,
                   help="vLLM: a prompt longer than this is long, and prefills at most this many tokens per step "
                        f"(default {VLLM_LONG_PREFILL})")
    v.add_argument("--kv-cache-gib", type=gib_pair, metavar="SMALL,LARGE",
                   help="on a CPU: each engine's KV cache in GiB (default: one longest request or 1 GiB each, "
                        "within half the available memory, as the experiments' engines)")
    cli.add_cascade_flags(p)
    g = p.add_argument_group("prompts")
    g.add_argument("--think-prompt", choices=list(prompts.THINK_STYLES),
                   help="the Think prompt, as the experiments' flag (default: the preset's, else instruction)")
    g.add_argument("--simple-prompt", type=cli.simple_prompt_arg, metavar="STYLE|BENCHMARK=STYLE,...",
                   help="the Simple prompt, as the experiments' flag (default: the preset's, else post-prompt)")
    return p


# vLLM's chunked-prefill budget per engine step on its CPU engine (vllm/config/scheduler.py): tokens of one step
# (decode tokens first), and the most a long prompt prefills per step. Small, so that the decode steps of short
# queries batched with a long prompt's chunk stay short (docs/serving.md says what was measured).
VLLM_BATCHED_TOKENS = 512
VLLM_LONG_PREFILL = 256


def model_len(text: str):
    """--max-model-len: a number of tokens, or 'checkpoint'."""
    if text == CHECKPOINT:
        return CHECKPOINT
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a number of tokens or '{CHECKPOINT}', got '{text}'") from None


def gib_pair(text: str) -> list[float]:
    """'0.25,1' -> [0.25, 1.0]: the small and the large engine's KV cache, GiB."""
    try:
        values = [float(t) for t in cli.csv_list(text)]
    except ValueError:
        values = []
    if len(values) != 2 or not all(v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"wants SMALL,LARGE in GiB, two positive numbers, got '{text}'")
    return values


def parse(argv=None) -> argparse.Namespace:
    """The flags, the preset's defaults filled in, and every number checked before anything loads."""
    from mai.benchmarks import get_benchmark

    args = parser().parse_args(argv)
    for key, value in PRESETS[args.preset].items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    args.dtype, args.transfer = args.dtype or "auto", args.transfer or "full"
    args.served_model_name = args.served_model_name or args.system
    get_benchmark(args.benchmark)
    args.think_prompt = args.think_prompt or "instruction"
    cli.check_split_and_think_prompt(argparse.Namespace(benchmarks=[args.benchmark], think_prompt=args.think_prompt,
                                                        simple_prompt=args.simple_prompt))
    if not 0 < args.port < 65536:
        raise MaiError(f"--port must lie in 1..65535, got {args.port}")
    args.max_concurrency = CONCURRENCY if args.max_concurrency is None else args.max_concurrency
    for name in ("max_concurrency", "max_queue", "max_image_bytes", "max_image_pixels", "max_images", "max_body_bytes",
                 "threads", "think_tokens", "simple_tokens", "answer_tokens", "max_pixels", "max_model_len",
                 "tensor_parallel", "max_active_tokens", "max_num_batched_tokens", "long_prefill_token_threshold"):
        value = getattr(args, name)
        if value == CHECKPOINT:
            continue
        if value is not None and value < 1:
            raise MaiError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    if args.prefill_chunk < 0:
        raise MaiError(f"--prefill-chunk must be 0 (no chunks) or a number of tokens, got {args.prefill_chunk}")
    if not args.request_timeout > 0:
        raise MaiError(f"--request-timeout must be a positive number of seconds, got {args.request_timeout}")
    if args.backend == "vllm":
        from mai.vllm_backend import require_vllm

        require_vllm()  # one line saying how to install it, before anything loads
    if args.allow_image_dir is not None and not Path(args.allow_image_dir).is_dir():
        raise MaiEnvironmentError(f"--allow-image-dir {args.allow_image_dir} is not a directory")
    if args.max_body_bytes is None:
        args.max_body_bytes = default_body_bytes(args.max_images, args.max_image_bytes)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return args


def default_body_bytes(max_images: int, max_image_bytes: int) -> int:
    """Room for --max-images images of --max-image-bytes as base64 data: URLs (4 characters per 3 bytes),
    plus 1 MiB for the text and the JSON around them."""
    return max_images * -(-max_image_bytes // 3) * 4 + (1 << 20)


def checkpoint_context(loaded) -> int:
    """The longest sequence a transformers checkpoint's config allows (its text model's max_position_embeddings)."""
    return int(loaded.model.config.get_text_config().max_position_embeddings)


def served_context(loaded, max_model_len, preset: str | None = None) -> int:
    """--max-model-len, else the preset's context (PRESET_CONTEXT) within the checkpoint's, else (or with
    'checkpoint') the checkpoint's; a --max-model-len longer than the checkpoint's is refused, as vLLM refuses it."""
    allowed = checkpoint_context(loaded)
    if max_model_len == CHECKPOINT:
        return allowed
    if max_model_len is not None and max_model_len > allowed:
        raise MaiError(f"--max-model-len {max_model_len} is greater than {loaded.label}'s context ({allowed} tokens, "
                       "its config's max_position_embeddings)")
    if max_model_len is None and PRESET_CONTEXT.get(preset):
        return min(PRESET_CONTEXT[preset], allowed)
    return max_model_len or allowed


def vllm_context(max_model_len, preset: str | None = None) -> int | None:
    """The engines' --max-model-len: the flag's, else the preset's up to VLLM_CONTEXT; None: the checkpoint's."""
    if max_model_len == CHECKPOINT:
        return None
    return max_model_len or min(PRESET_CONTEXT.get(preset) or VLLM_CONTEXT, VLLM_CONTEXT)


def build(args: argparse.Namespace):
    """(ServedSystem, close function, whether the models see images) on the chosen backend."""
    from mai.benchmarks import get_benchmark
    from mai.cascade import Cascade
    from mai.serving.system import Checked, ServedSystem, StoppableGenerator

    config = cli.cascade_config(args)
    if args.backend == "transformers":
        small_model, large_model = experiment.load(args.small, args), experiment.load(args.large, args)
        cli.check_sparse_layer(config, small_model)
        contexts = [served_context(m, args.max_model_len, args.preset) for m in (small_model, large_model)]
        small, large = (StoppableGenerator(m, args.seed, args.prefill_chunk) for m in (small_model, large_model))
        close = None
        sees = small_model.family.multimodal and large_model.family.multimodal
        labels = small_model.label, large_model.label  # each spec's one record (mai.model_specs.resolve)
    else:
        from mai.serving.vllm_engine import start_generators

        pixels = experiment.pixel_kwargs(args)  # the image-size policy's bounds, as the transformers models get them
        args.min_pixels, args.max_pixels = pixels.get("min_pixels"), pixels.get("max_pixels")
        args.max_model_len = vllm_context(args.max_model_len, args.preset)  # the engines' KV caches hold one
        small, large, close = start_generators(args.small, args.large, args)
        contexts = [gen.max_model_len for gen in (small, large)]  # what each engine enforces
        sees = all(getattr(gen, "family", None) is None or gen.family.multimodal for gen in (small, large))
        labels = small.label, large.label
    small, large = (Checked(gen, role, label, context)
                    for gen, role, label, context in zip((small, large), ("small", "large"), labels, contexts))
    cascade = Cascade(small, large, config, *labels)
    bench = get_benchmark(args.benchmark)
    system = ServedSystem(args.system, small, large, cascade, bench, args.simple_tokens, args.think_prompt,
                          cli.simple_prompt_styles(args.simple_prompt, [bench.name])[bench.name])
    return system, close, sees


def make_worker(system, args):
    """The worker for the built system: --max-concurrency threads, taking turns on transformers (mai.serving.turns),
    admitted by size within --max-active-tokens (default: the larger model's context), keys' shares of the queue."""
    from mai.serving.turns import Turns
    from mai.serving.worker import SHORT_TOKENS, Worker

    turns = None
    if getattr(args, "backend", "transformers") == "transformers":
        turns = Turns([system.small.loaded, system.large.loaded])
    active = getattr(args, "max_active_tokens", None) or max(system.small.context or 0, system.large.context or 0) or None
    chunk = getattr(args, "prefill_chunk", 0) or SHORT_TOKENS
    return Worker(threads=args.max_concurrency, max_queue=args.max_queue, max_active_tokens=active,
                  short_tokens=chunk, keys=len(args.api_key or ()), turns=turns)


def serve(argv=None) -> None:
    import uvicorn

    from mai.serving import api
    from mai.serving.app import create_app
    from mai.serving.worker import Worker

    args = parse(argv)
    system, close, sees = build(args)
    limits = api.ImageLimits(args.max_image_bytes, args.max_image_pixels,
                             Path(args.allow_image_dir) if args.allow_image_dir else None, args.max_images)
    worker = make_worker(system, args)
    app = create_app(system, worker, args.served_model_name, limits, api_key=args.api_key,
                     request_timeout=args.request_timeout, sees_images=sees, on_shutdown=close,
                     max_body_bytes=args.max_body_bytes)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
