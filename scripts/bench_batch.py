#!/usr/bin/env python
"""Aggregate decode throughput of the real pair by batch size, on transformers and on vLLM's CPU engine: what
decides how the cpu-real preset's stage-major runs are batched (issue 28). A benchmark, not a test.

    .venv/bin/python scripts/bench_batch.py                              # transformers
    .venv-vllm/bin/python scripts/bench_batch.py --backend vllm          # vLLM's CPU engine
    .venv/bin/python scripts/bench_batch.py --batch-sizes 1,8 --output-tokens 16 --threads 1

Each model answers B real dev questions (the Simple prompt of bbh_object_counting's and gsm8k's dev split,
alternating, so prompt lengths vary as in a run) with the output length forced (min = max new tokens), after
one untimed warm-up batch; aggregate tokens/s = B x output tokens / wall seconds of the batch call (prefill
included, as in a run). Also compares, on the same questions, the batched greedy answers with batch-1 answers
of the same backend (unforced, --check-tokens), counting the ones that differ. The ratios to batch 1 are the
number to read: they are measured in one run, on one machine state. Writes --json (default
runs/bench/batch.<backend>.json) with every number and what produced it.
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

        return HFGenerator(load_model(spec, device="cpu", dtype=args.dtype))
    # vLLM's CPU engine in-process, as scripts/bench_backends.py runs it (its ENGINE_ENV says why each is set)
    spec_ = importlib.util.spec_from_file_location("bench_backends", ROOT / "scripts" / "bench_backends.py")
    backends = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(backends)
    for key, value in backends.ENGINE_ENV.items():
        os.environ.setdefault(key, value)
    from mai.serving.vllm_engine import real_checkpoint_dir
    from mai.vllm_backend import VLLMGenerator, start_engines

    gen = VLLMGenerator(str(real_checkpoint_dir(spec)), dtype=args.dtype, max_model_len=4096, start_engine=False)
    start_engines([gen])
    return gen


def measure(gen, sizes: list[int], tokens: int, check: int, check_tokens: int) -> dict:
    items = questions(max(sizes))
    gen.generate_batch(requests(items[:2], 4, True))  # warm-up: allocator, kernels
    out = {}
    for b in sizes:
        start = time.perf_counter()
        results = gen.generate_batch(requests(items[:b], tokens, True))
        seconds = time.perf_counter() - start
        assert all(r.output_tokens == tokens for r in results), [r.output_tokens for r in results]
        out[b] = dict(seconds=round(seconds, 3), tokens_per_s=round(b * tokens / seconds, 2))
        print(f"  batch {b:>3}: {b * tokens} tokens in {seconds:7.2f} s = {b * tokens / seconds:7.2f} tokens/s", flush=True)
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
                  backend=args.backend, dtype=args.dtype, output_tokens=args.output_tokens,
                  threads=torch.get_num_threads(), machine=f"{platform.machine()}, {os.cpu_count()} cores",
                  load_average_before=os.getloadavg()[0], note=args.note, provenance=provenance("cpu"), models={})
    for spec in args.models.split(","):
        print(f"{spec} on {args.backend}:", flush=True)
        gen = generator(args.backend, spec, args)
        report["models"][spec] = measure(gen, sizes, args.output_tokens, args.check, args.check_tokens)
        del gen
    report["load_average_after"] = os.getloadavg()[0]
    path = Path(args.json or ROOT / "runs" / "bench" / f"batch.{args.backend}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {path}")



if __name__ == "__main__":
    main()
