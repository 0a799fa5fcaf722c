#!/usr/bin/env python
"""Aggregate decode throughput of the real pair by batch size, on transformers and on vLLM's CPU engine: what
decides how the cpu-real preset's stage-major runs are batched (issue 28). A benchmark, not a test.

    .venv/bin/python scripts/bench_batch.py                              # transformers
    .venv-vllm/bin/python scripts/bench_batch.py --backend vllm          # vLLM's CPU engine
    .venv/bin/python scripts/bench_batch.py --decode compiled                   # transformers, compiled decode
    .venv/bin/python scripts/bench_batch.py --batch-sizes 1,8 --output-tokens 16 --threads 1

Each model answers B real dev questions (the Simple prompt of bbh_object_counting's and gsm8k's dev split,
alternating, so prompt lengths vary as in a run) with the output length forced (min = max new tokens), after
one untimed warm-up batch; aggregate tokens/s = B x output tokens / wall seconds of the batch call (prefill
included, as in a run). Also compares, on the same questions, the batched greedy answers with batch-1 answers
of the same backend (unforced, --check-tokens), counting the ones that differ. The ratios to batch 1 are the
number to read: they are measured in one run, on one machine state.

Decode alone, beside its bound: each batch is also run forced to --prefix-tokens and to --prefix-tokens +
output tokens; the difference over output tokens is one decode step's seconds (prefill cancels). Its bound is
the bytes a step reads (mai.stage_timing.weight_bytes: every weight but the input embedding table, of which a
step reads one row) over the memory bandwidth measured in the same run before each model
(mai.stage_timing.memory_bandwidth); the fraction bound / step is what "near the bandwidth bound" means.
Writes --json (default runs/bench/batch.<backend>.json, batch.hf-compiled.json with --decode compiled) with every
number and what produced it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def questions(n: int):
    from mai.benchmarks import get_benchmark, load_benchmark

    pools = [load_benchmark(name, None, 0, None, "dev") for name in ("bbh_object_counting", "gsm8k")]
    mixed = [pool[k // 2] for k in range(n) for pool in [pools[k % 2]]]
    return [(ex, get_benchmark(ex.benchmark)) for ex in mixed]


def requests(items, tokens: int, forced: bool):
    from mai.request import Request

    return [Request(question=ex.question, mode="simple", post_prompt=bench.post_prompt, max_new_tokens=tokens,
                    min_new_tokens=tokens if forced else 0) for ex, bench in items]


def generator(backend: str, spec: str, args):
    if backend == "hf":
        from mai.generation import HFGenerator
        from mai.models import load_model

        return HFGenerator(load_model(spec, device="cpu", dtype=args.dtype), decode=args.decode)
    # vLLM's CPU engine in-process, as scripts/bench_backends.py runs it (its ENGINE_ENV says why each is set)
    spec_ = importlib.util.spec_from_file_location("bench_backends", ROOT / "scripts" / "bench_backends.py")
    backends = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(backends)
    for key, value in backends.ENGINE_ENV.items():
        os.environ.setdefault(key, value)
    from mai.vllm_backend import VLLMGenerator, start_engines

    gen = VLLMGenerator(spec, dtype=args.dtype, max_model_len=4096, start_engine=False)
    start_engines([gen])
    return gen


def timed(gen, items, tokens: int) -> float:
    start = time.perf_counter()
    results = gen.generate_batch(requests(items, tokens, True))
    assert all(r.output_tokens == tokens for r in results), [r.output_tokens for r in results]
    return time.perf_counter() - start


def measure(gen, sizes: list[int], tokens: int, check: int, check_tokens: int, prefix: int = 0,
            bound_s: float | None = None) -> dict:
    items = questions(max(sizes))
    out = {}
    for b in sizes:
        # Warm-up at this batch size and both lengths: allocator, kernels, and with --decode compiled the
        # compilation of this shape (its static cache's length bucket holds both lengths).
        timed(gen, items[:b], prefix + tokens)
        seconds = timed(gen, items[:b], tokens)
        out[b] = dict(seconds=round(seconds, 3), tokens_per_s=round(b * tokens / seconds, 2))
        line = f"  batch {b:>3}: {b * tokens} tokens in {seconds:7.2f} s = {b * tokens / seconds:7.2f} tokens/s"
        if prefix:
            step = (timed(gen, items[:b], prefix + tokens) - timed(gen, items[:b], prefix)) / tokens
            out[b].update(decode_step_s=round(step, 5), decode_tokens_per_s=round(b / step, 2))
            line += f"; decode step {step * 1e3:6.1f} ms"
            if bound_s:
                out[b]["bound_fraction"] = round(bound_s / step, 3)
                line += f" = {bound_s / step:.0%} of the bandwidth bound"
        print(line, flush=True)
    base = out[min(sizes)]["tokens_per_s"]
    for b in sizes:
        out[b]["ratio_to_smallest"] = round(out[b]["tokens_per_s"] / base, 2)
    batched = gen.generate_batch(requests(items[:check], check_tokens, False)) if check else []
    alone = [gen.generate(r) for r in requests(items[:check], check_tokens, False)] if check else []
    differ = [k for k, (x, y) in enumerate(zip(batched, alone)) if x.text != y.text]
    return dict(by_batch=out, equality=dict(questions=check, max_new_tokens=check_tokens, batch_size=check,
                                            differing=len(differ), differing_indices=differ,
                                            examples=[dict(batched=batched[k].text, alone=alone[k].text)
                                                      for k in differ[:3]]))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["hf", "vllm"], default="hf")
    p.add_argument("--models", default="qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    p.add_argument("--batch-sizes", default="1,4,8,16,32")
    p.add_argument("--output-tokens", type=int, default=32, help="forced output length of the timed batches")
    p.add_argument("--check", type=int, default=8, help="questions whose batched and batch-1 answers are compared")
    p.add_argument("--check-tokens", type=int, default=48, help="their max new tokens (greedy, unforced)")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--decode", choices=["eager", "compiled"], default="eager", help="hf: the transformers decode path")
    p.add_argument("--prefix-tokens", type=int, default=4,
                   help="decode step = (time at prefix + output tokens - time at prefix) / output tokens; 0: skip")
    p.add_argument("--threads", type=int, help="torch threads (default: torch's own)")
    p.add_argument("--json", help="default: runs/bench/batch.<backend>.json")
    p.add_argument("--note", help="what else ran on the machine meanwhile (recorded in the JSON)")
    args = p.parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    sizes = sorted(int(b) for b in args.batch_sizes.split(","))
    import torch

    from mai.results import provenance

    report = dict(what="aggregate decode tokens/s by batch size, REAL weights (the cpu-real pair), REAL dev "
                       "questions (Simple prompts), output length forced; CPU",
                  backend=args.backend, decode=args.decode if args.backend == "hf" else None, dtype=args.dtype,
                  output_tokens=args.output_tokens, prefix_tokens=args.prefix_tokens,
                  threads=torch.get_num_threads(), machine=f"{platform.machine()}, {os.cpu_count()} cores",
                  load_average_before=os.getloadavg()[0], note=args.note, provenance=provenance("cpu"), models={})
    for spec in args.models.split(","):
        print(f"{spec} on {args.backend}:", flush=True)
        from mai.stage_timing import memory_bandwidth, weight_bytes

        gen = generator(args.backend, spec, args)
        bandwidth = memory_bandwidth()
        step_bytes = weight_bytes(gen.loaded.model) if args.backend == "hf" else None
        bound = step_bytes / bandwidth if step_bytes else None
        if bound:
            print(f"  {step_bytes / 1e9:.2f} GB a step at {bandwidth / 1e9:.1f} GB/s: bound {bound * 1e3:.0f} ms", flush=True)
        report["models"][spec] = dict(measure(gen, sizes, args.output_tokens, args.check, args.check_tokens,
                                              args.prefix_tokens, bound),
                                      bandwidth_bytes_per_s=round(bandwidth), step_bytes=step_bytes)
        del gen
    report["load_average_after"] = os.getloadavg()[0]
    name = "hf-compiled" if args.backend == "hf" and args.decode == "compiled" else args.backend
    path = Path(args.json or ROOT / "runs" / "bench" / f"batch.{name}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}")



if __name__ == "__main__":
    main()
