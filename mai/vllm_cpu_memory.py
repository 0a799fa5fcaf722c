"""How much memory each of vLLM's CPU engines gets: a KV-cache size per engine that fits the machine.

Why not vLLM's own sizing. On its CPU backend (vllm 0.30.0, vllm/v1/worker/cpu_worker.py, CPUWorker.__init__
and determine_available_memory) an engine started without an explicit KV-cache size asks for
gpu_memory_utilization x the node's TOTAL memory and refuses to start when more than that is not AVAILABLE
at that moment. An experiment starts two engines, each with half the fraction: the first takes its share
of the total, and the second then finds less available than its own share ("Available memory on node 0
... is less than desired CPU memory utilization": 9.33 GiB asked, 8.25 GiB left on a 24 GiB machine at
0.85 / 2). With an explicit kv_cache_memory_bytes (an EngineArgs field) that start-up check is skipped,
the KV cache is that size, and eager engines skip their warm-up forward (CPUWorker._should_warm_up_model).

The split. Both engines' sizes are chosen before either starts, from the memory available then: each
engine's KV cache is at least what one longest request needs (max_model_len tokens: vLLM refuses to start
with less, vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory) and otherwise KV_CACHE_BYTES,
the size the engine tests run with (tests/conftest.py: VLLM_CPU_KVCACHE_SPACE=1); never more than the
engine's share (its gpu_memory_utilization) of the available memory. A model whose longest request does not
fit in its share stops in one line (MaiError) before any engine starts. VLLM_CPU_KVCACHE_SPACE, when set,
is vLLM's own override (vllm/platforms/cpu.py, check_and_update_config) and is left to vLLM.

The weights are not counted here, as vLLM's CPU worker does not count them against an explicit KV cache.
"""
from __future__ import annotations

import math
import os

import psutil  # accelerate's own dependency, so every environment here has it

from mai import MaiError

GIB = 1 << 30
KV_CACHE_BYTES = 1 * GIB
BLOCK_TOKENS = 256  # the largest block size vLLM's CPU platform picks (vllm/platforms/cpu.py): a request
# occupies whole blocks, so its tokens are rounded up to this
_DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def kv_bytes_per_token(text_config, dtype: str) -> int:
    """Bytes of K and V that one token occupies in every decoder layer, for a transformers text config and
    the engine's dtype (vLLM's names; "auto" takes the config's own, 2 bytes when it names none)."""
    if dtype == "auto":
        dtype = str(getattr(text_config, "dtype", None) or getattr(text_config, "torch_dtype", None) or "bfloat16")
    head_dim = getattr(text_config, "head_dim", None) or text_config.hidden_size // text_config.num_attention_heads
    heads = getattr(text_config, "num_key_value_heads", None) or text_config.num_attention_heads
    return 2 * text_config.num_hidden_layers * heads * head_dim * _DTYPE_BYTES.get(dtype.replace("torch.", ""), 2)


def longest_request_bytes(text_config, dtype: str, max_model_len: int) -> int:
    """The KV cache one request of max_model_len tokens needs, in whole blocks."""
    return kv_bytes_per_token(text_config, dtype) * math.ceil(max_model_len / BLOCK_TOKENS) * BLOCK_TOKENS


def split(needs: list[int], shares: list[float], available: int, names: list[str]) -> list[int]:
    """Each engine's KV-cache bytes: its need (one longest request) or KV_CACHE_BYTES, whichever is more, and
    at most its share of the available memory; a need beyond the share is a MaiError naming the model."""
    sizes = []
    for need, share, name in zip(needs, shares, names):
        cap = int(share * available)
        if need > cap:
            raise MaiError(f"vLLM's CPU engine for {name} needs {need / GIB:.2f} GiB of KV cache for one "
                           f"--max-model-len request, more than its share ({share:g}) of the {available / GIB:.2f} "
                           f"GiB of memory available: lower --max-model-len, raise --gpu-memory-utilization, or "
                           f"free memory")
        sizes.append(min(max(need, KV_CACHE_BYTES), cap))
    return sizes


def check_given(sizes: list[int], needs: list[int], available: int, names: list[str]) -> list[int]:
    """Sizes the user chose (mai serve --kv-cache-gib), checked before any engine starts: each at least one
    longest request (vLLM refuses to start below that, with a traceback) and together within the available
    memory. A size that fails is a MaiError naming the model."""
    for size, need, name in zip(sizes, needs, names):
        if size < need:
            raise MaiError(f"a KV cache of {size / GIB:.2f} GiB for {name} is less than one --max-model-len request "
                           f"needs ({need / GIB:.2f} GiB): raise --kv-cache-gib or lower --max-model-len")
    if sum(sizes) > available:
        raise MaiError(f"the KV caches asked ({sum(sizes) / GIB:.2f} GiB in all) exceed the {available / GIB:.2f} GiB "
                       f"of memory available: lower --kv-cache-gib or free memory")
    return sizes


def available_memory() -> int:
    """Memory available now, as vLLM's CPU worker reads it on a machine without NUMA nodes
    (vllm/utils/cpu_resource_utils.py get_memory_node_info: psutil's available)."""
    return int(psutil.virtual_memory().available)


def left_to_vllm() -> bool:
    """VLLM_CPU_KVCACHE_SPACE is set: vLLM sizes the KV cache from it, whatever the engine arguments say."""
    return os.environ.get("VLLM_CPU_KVCACHE_SPACE", "") != ""
