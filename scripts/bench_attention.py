#!/usr/bin/env python
"""Cost of capturing attention: plain SDPA prefill vs capture_attention vs eager + output_attentions.

Builds a random-weight Qwen3-VL of the given architecture (mai.families.qwen3_vl.ARCHITECTURES), and times a
text-only prefill of N tokens (batch 1, logits of the last position only) four ways:

* sdpa           plain ``attn_implementation="sdpa"``
* capture-1      inside ``capture_attention(model, [layer])`` (one [heads, keys] row)
* capture-all    inside ``capture_attention(model, "all")`` (one row per decoder layer)
* eager+attn     ``attn_implementation="eager"`` with ``output_attentions=True`` (the full
                 [heads, N, N] matrices of every layer, the usual way of getting attention maps)

It prints the fastest and the median time of each (ratios from the fastest), peak memory above the loaded model (CUDA: max_memory_allocated;
CPU: resident set size sampled every few ms), and the ratios to plain SDPA. It also checks that the
capture runs give the very same logits as plain SDPA. Target: capture at most 1.10x plain SDPA.
The numbers go to --json (default runs/bench/attention.<arch>.<tokens>.json).

    python scripts/bench_attention.py --arch tiny-large --tokens 512
    python scripts/bench_attention.py                       # qwen3-vl-2b, 2000 tokens, bf16
"""
from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch

from mai.attention import capture_attention
from mai.families.qwen3_vl import ARCHITECTURES
from mai.models import architecture_config, resolve_device, resolve_dtype

TARGET_RATIO = 1.10


class PeakMemory:
    """Peak memory above the level at entry: CUDA allocator peak, or sampled RSS on CPU."""

    def __init__(self, device: torch.device, interval_s: float = 0.002):
        self.device, self.interval_s, self.peak_bytes = device, interval_s, 0

    def __enter__(self):
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self._base = torch.cuda.memory_allocated(self.device)
        else:
            import psutil

            self._proc = psutil.Process()
            self._base = self._max = self._proc.memory_info().rss
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self._max = max(self._max, self._proc.memory_info().rss)
            time.sleep(self.interval_s)

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.peak_bytes = torch.cuda.max_memory_allocated(self.device) - self._base
        else:
            self._stop.set()
            self._thread.join()
            self._max = max(self._max, self._proc.memory_info().rss)
            self.peak_bytes = self._max - self._base


def build(arch: str, device: torch.device, dtype: torch.dtype):
    from transformers import Qwen3VLForConditionalGeneration

    torch.manual_seed(0)
    config = architecture_config(arch)
    config._attn_implementation = "sdpa"
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = Qwen3VLForConditionalGeneration(config)
    finally:
        torch.set_default_dtype(prev)
    return model.eval()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="qwen3-vl-2b", choices=list(ARCHITECTURES),
                        help="random-weight architecture (default: qwen3-vl-2b)")
    parser.add_argument("--tokens", type=int, default=2000, help="prefill length N (default: 2000)")
    parser.add_argument("--dtype", default="bf16", help="bf16 | fp32 | fp16 (default: bf16)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda (default: auto)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per variant (default: 3)")
    parser.add_argument("--layer", type=int, default=None,
                        help="layer for capture-1 (default: the middle decoder layer)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's choice); 1 is steadier on a busy CPU")
    parser.add_argument("--no-eager", action="store_true", help="skip eager + output_attentions")
    parser.add_argument("--json", type=Path, default=None,
                        help="where the numbers go (default runs/bench/attention.<arch>.<tokens>.json)")
    args = parser.parse_args(argv)

    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    t0 = time.perf_counter()
    model = build(args.arch, device, dtype)
    build_s = time.perf_counter() - t0
    text = model.config.text_config
    layer = text.num_hidden_layers // 2 if args.layer is None else args.layer
    print(f"arch={args.arch} layers={text.num_hidden_layers} heads={text.num_attention_heads}/"
          f"{text.num_key_value_heads}kv head_dim={text.head_dim} tokens={args.tokens} dtype={dtype} "
          f"device={device} threads={torch.get_num_threads()} build={build_s:.1f}s "
          f"params={sum(p.numel() for p in model.parameters()) / 1e9:.2f}B", flush=True)

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 150000, (1, args.tokens), generator=g).to(device)
    inputs = dict(input_ids=ids, attention_mask=torch.ones_like(ids), logits_to_keep=1)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def run_sdpa():
        return model(**inputs).logits

    def run_capture(layers):
        def fn():
            with capture_attention(model, layers) as cap:
                logits = model(**inputs).logits
            fn.rows = cap.rows_batched
            return logits
        return fn

    def run_eager():
        model.set_attn_implementation("eager")
        try:
            out = model(**inputs, output_attentions=True)
            assert len(out.attentions) == text.num_hidden_layers
            return out.logits
        finally:
            model.set_attn_implementation("sdpa")

    variants = {"sdpa": run_sdpa, "capture-1": run_capture([layer]), "capture-all": run_capture("all")}
    if not args.no_eager:
        variants["eager+attn"] = run_eager

    times: dict[str, list[float]] = {k: [] for k in variants}
    peaks: dict[str, int] = {}
    logits: dict[str, torch.Tensor] = {}
    with torch.inference_mode():
        run_sdpa()  # one-time allocations and kernel set-up, so they count for no variant
        sync()
        for name, fn in variants.items():  # warm-up, logits, and peak memory
            with PeakMemory(device) as mem:
                logits[name] = fn().float().cpu()
                sync()
            peaks[name] = mem.peak_bytes
        for _ in range(args.repeats):  # interleaved, so drift hits every variant alike
            for name, fn in variants.items():
                gc.collect()
                sync()
                t = time.perf_counter()
                fn()
                sync()
                times[name].append(time.perf_counter() - t)

    identical = {k: bool(torch.equal(logits[k], logits["sdpa"])) for k in ("capture-1", "capture-all")}
    rows_bytes = {k: sum(r.numel() * r.element_size() for r in variants[k].rows.values())
                  for k in ("capture-1", "capture-all")}
    # Ratios use the fastest run of each variant: on a shared CPU the median mostly measures the
    # neighbours; the minimum is the run least disturbed by them.
    med = {k: statistics.median(v) for k, v in times.items()}
    best = {k: min(v) for k, v in times.items()}
    print(f"{'variant':<12} {'min s':>8} {'x sdpa':>7} {'median s':>9} {'x sdpa':>7} {'peak MiB':>9} {'x sdpa':>7}")
    for name in variants:
        mem_ratio = peaks[name] / peaks["sdpa"] if peaks["sdpa"] > 0 else float("nan")
        print(f"{name:<12} {best[name]:>8.3f} {best[name] / best['sdpa']:>7.3f} {med[name]:>9.3f} "
              f"{med[name] / med['sdpa']:>7.3f} {peaks[name] / 2**20:>9.1f} {mem_ratio:>7.2f}")
    print(f"captured rows: capture-1 {rows_bytes['capture-1'] / 1024:.1f} KiB, "
          f"capture-all {rows_bytes['capture-all'] / 1024:.1f} KiB; "
          f"logits identical to sdpa: {identical}")
    worst = max(best["capture-1"], best["capture-all"]) / best["sdpa"]
    verdict = "OK" if worst <= TARGET_RATIO else "ABOVE TARGET"
    print(f"capture/sdpa (worst of capture-1, capture-all) = {worst:.3f}  target <= {TARGET_RATIO}: {verdict}")
    if "eager+attn" in med:
        print(f"eager+output_attentions/sdpa = {best['eager+attn'] / best['sdpa']:.3f}")
    # Every run leaves its numbers, so a ratio quoted anywhere names the file it came from.
    out = args.json or REPO / "runs" / "bench" / f"attention.{args.arch}.{args.tokens}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(
        script="scripts/bench_attention.py", weights="RANDOM", arch=args.arch, tokens=args.tokens, dtype=str(dtype),
        device=str(device), layer=layer, repeats=args.repeats, threads=torch.get_num_threads(), times_s=times,
        median_s=med, min_s=best, capture_over_sdpa=worst, target=TARGET_RATIO, peak_bytes=peaks,
        rows_bytes=rows_bytes, logits_identical=identical), indent=2) + "\n")
    print(f"written: {out}")
    return 0 if all(identical.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
