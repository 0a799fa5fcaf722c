"""The vLLM half of scripts/gpu_check.sh: one pair of engines (random weights of the real 2B and 8B shapes,
load_format="dummy", no hub), then

  1. a stage profile like experiments/03's: a simulated query (random-noise image, a question of ordinary
     words) with the output length forced (min_tokens = max_tokens), warm-up runs first, batch size 1;
  2. the MAI cascade in example order and in stage order over synthetic examples (both engines' caches
     emptied before each order): wall times, their ratio, whether the answers are identical, and the second
     stage's prefix-cache hits;
  3. isolation: Table 10's systems (L-S, L-R, S-R, Full RT, MAI with either verification) over the same
     examples, each started with emptied caches as experiments/10_mai.py runs them, and per system the
     prefix-cache hits on each query's first call of each engine (0 unless another system's blocks leak in)
     and over all of its calls (MAI's second stage extends its first stage; later calls of a query may also
     reuse an earlier call's prefix).

    python scripts/gpu_check_vllm.py --out /tmp/check/vllm.json
    python scripts/gpu_check_vllm.py --small qwen3-vl-2b --large qwen3-vl-8b --runs 5 --output-tokens 16,128

Random weights make every answer meaningless; the times, token counts, routes and cache hits are real.
Prints every number with what produced it and writes them to --out as JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WORDS = ("what is the value of the tallest bar in the chart and how does it compare with the other bars "
         "shown for each year in the picture").split()


def simulated_query(tokenizer, n_tokens: int, size: int, seed: int):
    import numpy as np
    from PIL import Image

    words, ids = [], []
    while len(ids) < n_tokens:
        words.append(WORDS[len(words) % len(WORDS)])
        ids = tokenizer(" ".join(words), add_special_tokens=False).input_ids
    question = tokenizer.decode(ids[:n_tokens]).strip()
    rng = np.random.default_rng(seed)
    return question, Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8))


def profile(gen, question, image, lengths, warmup: int, runs: int) -> list[dict]:
    from mai.generation import Request

    out = []
    for n in lengths:
        request = Request(question=question, images=[image], mode="simple", min_new_tokens=n, max_new_tokens=n)
        for _ in range(warmup):
            gen.generate(request)
        results = [gen.generate(request) for _ in range(runs)]
        mean = lambda xs: statistics.fmean(xs)  # noqa: E731
        row = dict(model=gen.label, output_tokens=n, input_tokens=results[0].input_tokens,
                   generated=results[0].output_tokens, latency_s=mean([r.latency for r in results]),
                   latency_std_s=statistics.pstdev([r.latency for r in results]),
                   prefill_s=mean([r.times["prefill"] for r in results]),
                   decode_s=mean([r.times["decode"] for r in results]),
                   preprocess_s=mean([r.times["preprocess"] for r in results]),
                   timed_by=(results[0].stats or {}).get("timing", "vLLM request metrics" if hasattr(gen, "llm")
                                                           else "transformers backend's clocks"))
        row["decode_ms_per_token"] = 1000 * row["decode_s"] / max(n - 1, 1)
        row["prefill_ms_per_token"] = 1000 * row["prefill_s"] / max(row["input_tokens"], 1)
        out.append(row)
        print(f"  {gen.label:>4} out={n:<4} in={row['input_tokens']:<5} latency {row['latency_s'] * 1000:8.1f} ms "
              f"(std {row['latency_std_s'] * 1000:.1f})  prefill {row['prefill_s'] * 1000:7.1f} ms "
              f"({row['prefill_ms_per_token']:.3f} ms/token)  decode {row['decode_ms_per_token']:.2f} ms/token  "
              f"[{row['timed_by']}]", flush=True)
    return out


def cascade_orders(small, large, limit: int, think: int, seed: int) -> dict:
    from mai.batch import Query, run_cascade_stage_major
    from mai.cascade import Cascade, CascadeConfig
    from mai.benchmarks import get_benchmark, load_benchmark
    from mai.evaluate import reset_caches

    queries = []
    for name in ("synth-chartqa", "synth-pope"):
        bench = get_benchmark(name)
        for ex in load_benchmark(name, limit, seed):
            queries.append(Query(ex.question, ex.load_images(), bench.agreement, bench.post_prompt,
                                 min(bench.max_new_tokens, 16)))
    cascade = Cascade(small, large, CascadeConfig(think_tokens=think, answer_tokens=16), small.label, large.label)

    def sig(t):  # cached tokens left out: within a pass, stage order shares more prefixes
        return t.route, t.prediction, [(c.mode, c.result["text"], c.result["output_tokens"]) for c in t.calls]

    reset_caches((small, large))  # neither order starts from blocks the other (or the profile) left
    t0 = time.perf_counter()
    example = [cascade.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens) for q in queries]
    t1 = time.perf_counter()
    reset_caches((small, large))
    t1b = time.perf_counter()
    stage = run_cascade_stage_major(cascade, queries)
    t2 = time.perf_counter()
    same = sum(sig(a) == sig(b) for a, b in zip(example, stage))
    answer_calls = [c for t in example for c in t.calls if c.mode == "answer"]
    out = dict(queries=len(queries), think_tokens=think, example_s=t1 - t0, stage_s=t2 - t1b,
               ratio=(t1 - t0) / (t2 - t1b), identical=same,
               routes={r: sum(t.route == r for t in example) for r in ("simple", "reasoning", "transfer")},
               answer_stage_cached_tokens=[c.result["cached_tokens"] for c in answer_calls],
               answer_stage_input_tokens=[c.result["input_tokens"] for c in answer_calls])
    print(f"  {len(queries)} synthetic queries, think {think} tokens, routes {out['routes']}")
    print(f"  example order (batch 1): {out['example_s']:.2f} s; stage order: {out['stage_s']:.2f} s; "
          f"ratio {out['ratio']:.2f}x; identical answers {same}/{len(queries)}")
    print(f"  second stage (example order): prefix-cache hits {out['answer_stage_cached_tokens']} of input "
          f"{out['answer_stage_input_tokens']} tokens", flush=True)
    return out


def prefix_hits_per_system(small, large, limit: int, think: int, seed: int) -> dict:
    """Table 10's systems in example order, each call isolated (mai.evaluate.isolated), and their prefix hits."""
    from mai.cascade import Cascade, CascadeConfig
    from mai.benchmarks import get_benchmark, load_benchmark
    from mai.evaluate import cascade_system, isolated, model_system, transfer_system

    simple = 16
    systems = {f"{large.label}-S": ("large", model_system(large.generate, "large", "simple", think, simple)),
               f"{large.label}-R": ("large", model_system(large.generate, "large", "think", think, simple)),
               f"{small.label}-R": ("small", model_system(small.generate, "small", "think", think, simple)),
               "Full RT": (None, transfer_system(small, large, think, simple))}
    for verify in ("answer", "reasoning"):
        config = CascadeConfig(think_tokens=think, answer_tokens=16, verify=verify)
        systems[f"MAI verify={verify}"] = (None, cascade_system(Cascade(small, large, config, small.label,
                                                                        large.label), simple))
    out = {name: dict(queries=0, first_call_hits=0, first_call_prompt_tokens=0, all_hits=0, all_prompt_tokens=0)
           for name in systems}
    for name in ("synth-chartqa", "synth-pope"):
        bench = get_benchmark(name)
        for ex in load_benchmark(name, limit, seed):
            images = ex.load_images()
            for system, (role, fn) in systems.items():
                row = isolated(fn, (small, large))(ex, bench, images)
                calls = [(c["role"], c["result"]) for c in row.get("trace") or row.get("calls") or []] or [(role, row)]
                first = {}
                for call_role, result in calls:
                    first.setdefault(call_role, result)
                stats = out[system]
                stats["queries"] += 1
                stats["first_call_hits"] += sum(r["cached_tokens"] for r in first.values())
                stats["first_call_prompt_tokens"] += sum(r["input_tokens"] for r in first.values())
                stats["all_hits"] += sum(r["cached_tokens"] for _, r in calls)
                stats["all_prompt_tokens"] += sum(r["input_tokens"] for _, r in calls)
    for system, st in out.items():
        verdict = "isolated" if st["first_call_hits"] == 0 else "LEAK: served from another system's cache"
        print(f"  {system:<24} {st['queries']} queries: first call per engine {st['first_call_hits']} of "
              f"{st['first_call_prompt_tokens']} prompt tokens from the prefix cache ({verdict}); all calls "
              f"{st['all_hits']} of {st['all_prompt_tokens']}", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", default="qwen3-vl-2b")
    ap.add_argument("--large", default="qwen3-vl-8b")
    ap.add_argument("--output-tokens", default="16,128")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--limit", type=int, default=4, help="synthetic examples per benchmark for the cascade")
    ap.add_argument("--think-tokens", type=int, default=64)
    ap.add_argument("--eager", type=int, default=1, help="1: enforce_eager (fast start, slower decode)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="gpu_check_vllm.json")
    a = ap.parse_args(argv)

    import torch

    from mai.vllm_backend import VLLMGenerator

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"
    report = dict(gpu=gpu, weights="RANDOM (load_format=dummy) of the real shapes", data="SIMULATED / SYNTHETIC",
                  enforce_eager=bool(a.eager), engines={}, profile=[], cascade=None, prefix_hits_per_system=None)
    gens = {}
    for role, spec in (("small", a.small), ("large", a.large)):
        t0 = time.perf_counter()
        gens[role] = VLLMGenerator(spec, gpu_memory_utilization=0.38, max_model_len=8192, enforce_eager=bool(a.eager),
                                   seed=a.seed)  # lmms-eval's pixel bounds: 448x448 stays as is (196 image tokens)
        report["engines"][spec] = gens[role].describe()
        print(f"engine {spec}: built in {time.perf_counter() - t0:.1f} s ({gens[role].describe()})", flush=True)
    print(f"\n[vLLM profile] {gpu}; random weights of the real shapes; simulated 448x448 image + 32-token question; "
          f"batch size 1; {a.warmup} warm-up + {a.runs} runs each; enforce_eager={bool(a.eager)}")
    lengths = [int(x) for x in a.output_tokens.split(",")]
    for gen in gens.values():
        question, image = simulated_query(gen.tokenizer, 32, 448, a.seed)
        report["profile"] += profile(gen, question, image, lengths, a.warmup, a.runs)
    print(f"\n[vLLM cascade] {gens['small'].label} + {gens['large'].label}, example order vs stage order "
          "(answers mean nothing: random weights)")
    report["cascade"] = cascade_orders(gens["small"], gens["large"], a.limit, a.think_tokens, a.seed)
    print(f"\n[vLLM isolation] Table 10's systems, caches emptied before each system's call; prefix-cache hits "
          "per system (random weights: answers mean nothing, cache hits are real)")
    report["prefix_hits_per_system"] = prefix_hits_per_system(gens["small"], gens["large"], a.limit,
                                                              a.think_tokens, a.seed)
    Path(a.out).write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nwritten: {a.out}")


if __name__ == "__main__":
    from mai.cli import run

    run(main)  # without vLLM: one line saying how to install it
