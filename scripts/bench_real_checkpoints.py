#!/usr/bin/env python
"""Measure the real pair (mai.real_checkpoints): load time, greedy decode speed per dtype and torch threads.

    python scripts/bench_real_checkpoints.py [SPEC ...]     (default: both of mai.real_checkpoints.REAL_PAIR)

Prepares each checkpoint first (converted once, as `python -m mai.real_checkpoints` does), then prints one
line per dtype and thread count, and the model's greedy answer to BENCH_QUESTION. What it printed on this
machine is recorded beside REAL_DTYPE / REAL_THREADS in mai/real_checkpoints.py.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mai import cli  # noqa: E402
from mai.models import free, load_model  # noqa: E402
from mai.real_checkpoints import REAL_PAIR, checkpoint_dir  # noqa: E402

BENCH_QUESTION = "What is the capital of France? Answer in one sentence."


def bench(spec: str, tokens: int = 64) -> None:
    """Load time from the converted directory and greedy decode speed of `tokens` tokens, per dtype and torch
    thread count, and the model's greedy answer to BENCH_QUESTION with its chat template (printed)."""
    for dtype in ("bf16", "fp32"):
        start = time.perf_counter()
        lm = load_model(spec, device="cpu", dtype=dtype)
        loaded = time.perf_counter() - start
        prompt = lm.tokenizer.apply_chat_template([{"role": "user", "content": BENCH_QUESTION}],
                                                  add_generation_prompt=True, tokenize=False)
        ids = lm.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        for threads in (1, 2):
            torch.set_num_threads(threads)
            with torch.inference_mode():
                lm.model.generate(**ids, max_new_tokens=2, do_sample=False)  # warm-up
                start = time.perf_counter()
                out = lm.model.generate(**ids, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)
                took = time.perf_counter() - start
            new = out.shape[1] - ids["input_ids"].shape[1]
            print(f"bench: {spec} {dtype} threads={threads}: load {loaded:.1f} s, prompt {ids['input_ids'].shape[1]} "
                  f"tokens, {new} new tokens in {took:.2f} s = {new / took:.2f} tok/s", flush=True)
        with torch.inference_mode():
            out = lm.model.generate(**ids, max_new_tokens=48, do_sample=False)
        answer = lm.tokenizer.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
        print(f"answer: {spec} {dtype}: {prompt!r} -> {answer!r}", flush=True)
        free(lm)


def main(argv: list[str] | None = None) -> None:
    for spec in (sys.argv[1:] if argv is None else argv) or list(REAL_PAIR):
        print(f"{spec}: {checkpoint_dir(spec)}", flush=True)
        bench(spec)


if __name__ == "__main__":
    cli.run(main)
