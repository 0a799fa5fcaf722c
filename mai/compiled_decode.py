"""The compiled decode path of the transformers backend (`--decode compiled`): the same greedy generate, its
batch-1 decode steps run by a torch.compile'd forward over transformers' static KV cache.

Why: at batch 1 a decode step reads every weight once, so its floor is the weights' bytes over the memory
bandwidth. On CPU, eager bf16 linears (aten/oneDNN) read weights at a fraction of it; inductor's CPP GEMM
template (max-autotune's "CPP" GEMM backend) reads them near the bound once the weights are frozen into
prepacked constants (freezing). What it needs from transformers is a compilable cache: generate compiles its
decoding forward when the cache is a StaticCache and the generation config carries a CompileConfig
(transformers 5.x `GenerationMixin._valid_auto_compile_criteria`; `_compile_all_devices` lets it on CPU).
Prefill stays eager (transformers' `_prefill`).

Measured on the real Qwen2.5-Coder pair, bf16, 2 threads, a 2-core AMD EPYC, 2026-12-06 (scripts/bench_batch.py,
paper_tables/throughput.cpu-real.md; probes for the rest):
- GEMM backend fixed to CPP: left to autotune's per-shape race, it took oneDNN's linear for the MLP on a noisy
  benchmark and a 0.5B step took 66 ms; CPP alone, 31-42 ms.
- Batch 1 only: a batch of 16 on this path took 330 ms a 0.5B step (eager ~135-180 ms); the CPP template reads
  weights well for one row, not for sixteen, and masked attention over the static length costs 4.4 ms a layer.
  generate_batch's calls stay eager, a chunk of one included (HFGenerator._decode).
- Static length: SDPA's CPU kernel pays for every position of it, masked or not: a 0.5B step 41.5 ms at 256 and
  81 ms at 1024 (1.5B: 101 and 167 ms; eager 89 and 254 ms). dynamic=True, which would let one graph serve every
  length at its own cost, failed on a mask-shape guard in transformers 5.24's static-cache path: left for later.
- Memory: dynamic=False compiles once per length and each graph holds its own prepacked copy of the weights:
  every new length added about 1 GiB (0.5B) and a minute of compiling. So lengths are the next power of two,
  from MIN_LENGTH to MAX_LENGTH (longer calls decode eagerly): a cpu-real run meets two. Inductor caches compiled graphs on disk
  (/tmp/torchinductor_$USER), so a second process pays the load, not the compile.

What it keeps equal: greedy decoding over the same model; only kernel choice and fusion differ, so on the
tiny fp32 models the tokens are the eager path's (tests/test_compiled_decode.py) and on bf16 weights a
difference is a near-tie of the top two logits (scripts/check_batch_ties.py measures such ties). A kept cache
(a first stage whose second stage continues it, mai.kv_reuse) leaves as a DynamicCache of the positions it
holds, so a second stage runs as on the eager path.
"""
from __future__ import annotations

import contextlib
import weakref

import torch
from transformers import CompileConfig, DynamicCache, StaticCache

DECODES = ("eager", "compiled")
MIN_LENGTH = 256  # the shortest static cache
# The longest: a call that holds more positions decodes eagerly. Each compiled length keeps its own prepacked copy of
# the weights (about 1 GiB for the 0.5B, 3 for the 1.5B), so lengths 256, 512 and 1024 of both models brought the
# batch-1 latency sample to 21.3 GB of resident memory, where the kernel killed it (24 GiB machine, 2026-12-06);
# two lengths stay near Table 4's measured 16 GiB. A longer static cache also gains least: SDPA pays for every
# masked position (0.5B 81 ms a step at 1024 against 89 eager, 41.5 at 256).
MAX_LENGTH = 512
RECOMPILE_LIMIT = 64  # compiled (batch, length) shapes per model before dynamo would fall back to eager
_POOLS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def fits(tokens: int) -> bool:
    """Whether a call that holds `tokens` positions takes the compiled decode (its cache at most MAX_LENGTH)."""
    return cache_length(tokens) <= MAX_LENGTH


def cache_length(tokens: int) -> int:
    """The static cache's length for a call that holds `tokens` positions: the next power of two, at least
    MIN_LENGTH."""
    return max(MIN_LENGTH, 1 << max(tokens - 1, 0).bit_length())


def static_caches(model) -> "StaticCaches":
    """The model's one pool of static caches, shared by every generator of it (the compiled forward is the
    model's own: transformers keeps it on the model)."""
    pool = _POOLS.get(model)
    if pool is None:
        pool = _POOLS[model] = StaticCaches(model)
    return pool


class StaticCaches:
    """One static cache per (batch size, length) for a model, reset before each call.

    Reused, not made anew: transformers marks a static cache's tensors as static addresses, which the compiled
    graph (with frozen weights) binds at its first call; a new cache of the same shape would be read from the
    first one's tensors (tests/test_compiled_decode.py caught exactly that). A kept cache leaves as a copy
    (dynamic_copy), so reuse never hands one call's positions to another."""

    def __init__(self, model):
        self.model, self.caches = model, {}
        self.config = CompileConfig(fullgraph=True, dynamic=False, mode=None)  # mode None: inductor's options
        self.config._compile_all_devices = True                                # come from compiling() below

    def generate_kwargs(self, batch: int, tokens: int) -> dict:
        """generate's keyword arguments that decode `batch` rows of up to `tokens` positions (cache_length)
        over a reset static cache, with the compiled forward."""
        key = (batch, cache_length(tokens))
        cache = self.caches.get(key)
        if cache is None:
            cache = self.caches[key] = StaticCache(config=self.model.config, max_cache_len=key[1])
        else:
            with torch.inference_mode():  # its tensors are inference tensors (made in generate's inference mode)
                cache.reset()
        return dict(cache=cache, compile_config=self.config)


@contextlib.contextmanager
def compiling():
    """Inductor's settings for the decode graphs: frozen weights, every GEMM by the CPP template."""
    import torch._dynamo.config as dynamo
    import torch._inductor.config as inductor

    with (inductor.patch(freezing=True, max_autotune=True, max_autotune_gemm_backends="CPP"),
          dynamo.patch(recompile_limit=RECOMPILE_LIMIT)):
        yield


def dynamic_copy(cache, rows: slice, positions: slice, config) -> DynamicCache:
    """A DynamicCache holding `positions` of batch `rows` of a (static or dynamic) cache: what a kept first
    stage hands its second stage."""
    return DynamicCache(ddp_cache_data=[(layer.keys[rows, :, positions].clone(), layer.values[rows, :, positions].clone())
                                        for layer in cache.layers], config=config)
