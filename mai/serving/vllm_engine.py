"""Both models on vLLM's asynchronous engine, for the server: concurrent queries are batched by vLLM.

    small, large, close = start_generators("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", args)
    Cascade(small, large, config).answer(...)   # from many worker threads at once
    close()

The cascade (mai.cascade) is synchronous: each stage is a blocking ``generate(request)``. Here each generator
owns one ``vllm.v1.engine.async_llm.AsyncLLM`` (vLLM 0.30.0: vllm/v1/engine/async_llm.py, ``AsyncLLM.
from_engine_args``, ``generate`` an async generator of RequestOutput, ``abort(request_id)`` by the id we give);
both engines live on ONE asyncio event loop that runs in its own thread of this process. A worker thread's
``generate`` submits its request to that loop (asyncio.run_coroutine_threadsafe) and blocks until the engine
has finished it, so requests from many worker threads are in the engines at once and vLLM's scheduler batches
them. AsyncLLM always runs its EngineCore (scheduler, KV cache, model) in a child process (vllm/v1/engine/
core_client.py, AsyncMPClient); the front end (input processing, detokenization, this loop) is ours. So the
server is one process with two engine-core children, one per model: peak memory is the tree's.

- Prompts and results are VLLMGenerator's (mai/vllm_backend.py): build_prompt, sampling_fields, and the same
  RequestOutput -> Result (VLLMGenerator.result); a generator here holds a VLLMGenerator built with
  start_engine=False for its processor, eos ids and engine arguments. A second stage (mode "answer") submits
  its first stage's prompt + reasoning + suffix to the same engine, whose prefix cache (enable_prefix_caching)
  serves the first stage's blocks unless they were evicted under load; Result.cached_tokens says how many.
- Request ids: "<query id>/<role>/<n>" with mai.serving.query.current()'s id (outside the server "local").
  When the query is cancelled (query.cancelled set: the client went away), the blocked stage aborts its
  engine request (AsyncLLM.abort, which frees its KV blocks) and raises mai.serving.query.Aborted.
- Times: a request's wall time runs from submission to its last output, queueing behind other queries
  included; Result.times splits it as VLLMGenerator does (stage_times), batch_size left unset: the engine's
  batching is invisible to one request.
- Memory split (the paper's setting is 2B + 8B on one GPU): on vLLM's CPU platform each engine gets its own
  KV-cache size, kv_cache_memory_bytes (EngineArgs, vllm 0.30.0 engine/arg_utils.py), chosen for both before
  either starts as the experiments choose it (mai.vllm_backend.fit_cpu_memory: one longest request or 1 GiB,
  within the engine's share of the available memory), or ``args.kv_cache_gib`` = (small GiB, large GiB) when
  given, checked the same way; the legacy VLLM_CPU_KVCACHE_SPACE would give both the same size
  (vllm/platforms/cpu.py overrides kv_cache_memory_bytes with it), so it is left out of the environment while
  these engines are sized and built. On a GPU each engine gets half of ``args.gpu_memory_utilization``, as
  mai.experiment.scale_generators splits it for the offline engines.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import threading
import time

from mai import MaiError
from mai.request import Request, Result
from mai.serving import query as query_mod
from mai.vllm_backend import (VLLMGenerator, build_prompt, fit_cpu_memory, on_cpu_backend, require_vllm,
                               sampling_fields)

# How often a blocked generate looks at its query's cancelled flag (seconds): the abort's latency.
POLL_SECONDS = 0.05

# vLLM's CPU engine on a small shared machine (tests/test_vllm_engine.py's module doc measured why): one OpenMP
# thread per engine core, not pinned to a core. Each engine core is a child process that would otherwise start an
# OpenMP thread per core: two engines then oversubscribe the cores and libgomp's spin-waiting threads contend
# (tiny Qwen3-VL pair, 2 busy cores: ~100 ms per decoded token, against ~10 ms with one thread each). No usage
# reports, quiet logs. Read by the engine-core children when they start (the server's own torch is already set).
CPU_ENGINE_ENV = dict(OMP_NUM_THREADS="1", VLLM_CPU_OMP_THREADS_BIND="nobind", VLLM_NO_USAGE_STATS="1",
                      DO_NOT_TRACK="1", VLLM_LOGGING_LEVEL="WARNING")


# vLLM's chunked-prefill settings (EngineArgs / SchedulerConfig, vllm 0.30.0), given by the server's flags of the
# same names: a step runs at most max_num_batched_tokens tokens, decode tokens first, and a prompt longer than
# long_prefill_token_threshold prefills at most that many per step, so a long prompt is interleaved with the
# decode steps of the other requests instead of holding the engine for its whole prefill.
CHUNKED_PREFILL = ("max_num_batched_tokens", "long_prefill_token_threshold")


def use_cpu_engine_env() -> None:
    """The CPU engine's settings (CPU_ENGINE_ENV) unless the user set them; call before vllm is imported."""
    for key, value in CPU_ENGINE_ENV.items():
        os.environ.setdefault(key, value)


@contextlib.contextmanager
def per_engine_kv_cache():
    """While an engine is built: no VLLM_CPU_KVCACHE_SPACE, which would replace each engine's own KV-cache size
    (read in the parent when the config is made, inherited by the engine-core child it starts); restored after,
    for any other engine of the process (tests run offline engines beside these)."""
    saved = os.environ.pop("VLLM_CPU_KVCACHE_SPACE", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = saved


class EngineLoop:
    """One asyncio event loop in a daemon thread, which every engine of the server runs on."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="mai-vllm-loop", daemon=True)
        self.thread.start()

    def submit(self, coro) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro, timeout: float | None = None):
        return self.submit(coro).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)


class AsyncVLLMGenerator:
    """One model on an AsyncLLM: a blocking generate(Request) -> Result, safe to call from many threads."""

    def __init__(self, prompts: VLLMGenerator, engine_args: dict, loop: EngineLoop, role: str):
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        self.prompts, self.loop, self.role = prompts, loop, role
        self.spec, self.label, self.family = prompts.spec, prompts.label, prompts.family
        self.thinking, self.tokenizer, self.processor = prompts.thinking, prompts.tokenizer, prompts.processor
        self.engine_args = engine_args
        self._ids = itertools.count()

        async def build():  # in the loop's thread: the engine's output handler belongs to that loop
            with per_engine_kv_cache():
                return AsyncLLM.from_engine_args(AsyncEngineArgs(**engine_args))

        t0 = time.perf_counter()
        self.engine = loop.call(build())
        self.build_seconds = time.perf_counter() - t0
        from vllm.sampling_params import RequestOutputKind, SamplingParams

        self._params = lambda request: SamplingParams(**sampling_fields(request, prompts.eos_token_ids),
                                                      output_kind=RequestOutputKind.FINAL_ONLY)

    def describe(self) -> dict:
        return {**self.prompts.describe(), "engine": "AsyncLLM", "build_s": round(self.build_seconds, 3),
                "kv_cache_memory_bytes": self.engine_args.get("kv_cache_memory_bytes")}

    @property
    def loaded(self):
        """The transformers copy of the model, for sparse transfer's attention (VLLMGenerator.loaded)."""
        return self.prompts.loaded

    def attention_over_reasoning(self, *args, **kwargs):
        return self.prompts.attention_over_reasoning(*args, **kwargs)

    @property
    def max_model_len(self) -> int:
        """The context the engine enforces (vLLM's model config: --max-model-len, or the model's own)."""
        return int(self.engine.model_config.max_model_len)

    def unfinished(self) -> int:
        """Requests the engine has not finished (0 when idle, aborted ones included once freed)."""
        return self.engine.get_num_unfinished_requests()

    async def _generate(self, prompt: dict, params, request_id: str):
        final = None
        async for out in self.engine.generate(prompt, params, request_id):
            final = out
        return final

    def generate(self, request: Request) -> Result:
        query = query_mod.current()
        if query is not None:
            query.check()
        request_id = f"{query.id if query is not None else 'local'}/{self.role}/{next(self._ids)}"
        prompt, state = build_prompt(self.processor, request, self.thinking, self.family)
        t0 = time.perf_counter()
        future = self.loop.submit(self._generate(prompt, self._params(request), request_id))
        while True:
            try:
                out = future.result(timeout=POLL_SECONDS)
                break
            except concurrent.futures.TimeoutError:
                if query is not None and query.cancelled.is_set():
                    self.abort(request_id, future)
                    raise query_mod.Aborted(query.id) from None
        wall = time.perf_counter() - t0
        if query is not None and query.cancelled.is_set():
            raise query_mod.Aborted(query.id)
        if out is None or out.outputs[0].finish_reason == "abort":
            raise MaiError(f"vLLM aborted request {request_id} (the engine stopped?)")
        return self.prompts.result(request, state, out, wall)

    def abort(self, request_id: str, future: concurrent.futures.Future | None = None) -> None:
        """Abort one engine request (its KV blocks are freed) and stop waiting for it."""
        self.loop.call(self.engine.abort(request_id), timeout=30)
        if future is not None:
            future.cancel()

    def reset_caches(self) -> list[str]:
        """Empty the prefix cache (only when no request runs: vLLM refuses otherwise)."""
        if self.loop.call(self.engine.reset_prefix_cache()) is False:
            raise RuntimeError("vLLM did not reset its prefix cache (requests still running?)")
        return ["prefix"]

    def close(self) -> None:
        """Stop the engine: its output handler first (else it reports the stopped engine core as dead)."""
        if self.engine is None:
            return
        handler = getattr(self.engine, "output_handler", None)
        if handler is not None:
            async def stop():
                handler.cancel()
                await asyncio.gather(handler, return_exceptions=True)

            self.loop.call(stop(), timeout=30)
            self.engine.output_handler = None
        self.engine.shutdown()
        self.engine = None


def pair_engine_args(gens: list[VLLMGenerator], args) -> list[dict]:
    """Both engines' arguments: VLLMGenerator's, with each one's share of the machine. On a CPU: eager, and
    the KV caches (kv_cache_memory_bytes) split as the experiments split them (mai.vllm_backend.fit_cpu_memory)
    or as --kv-cache-gib gives them, checked against one longest request and the memory available; sized with
    VLLM_CPU_KVCACHE_SPACE out of the environment, as the engines are built (per_engine_kv_cache)."""
    out = [dict(g.engine_args) for g in gens]
    chunked = {name: getattr(args, name, None) for name in CHUNKED_PREFILL}
    for engine in out:  # the server's chunked-prefill flags (mai.serving.server), as vLLM's own server takes them
        engine.update({name: value for name, value in chunked.items() if value})
        if any(chunked.values()):
            engine["enable_chunked_prefill"] = True
    if not on_cpu_backend():
        return out
    for engine in out:
        # Eager on a CPU: torch.compile of both models takes minutes on a few cores before the first answer.
        engine["enforce_eager"] = True
    given = getattr(args, "kv_cache_gib", None)
    with per_engine_kv_cache():
        fit_cpu_memory(out, [int(float(gib) * (1 << 30)) for gib in given] if given else None)
    return out


def prompt_side(spec: str, args) -> VLLMGenerator:
    """A VLLMGenerator without an engine: the model's prompts, processor and engine arguments."""
    # A real pair's name resolves to its converted checkpoint directory (mai.model_specs.resolve).
    pixels = {k: getattr(args, k) for k in ("min_pixels", "max_pixels") if getattr(args, k, None)}
    prompts = VLLMGenerator(spec, dtype=getattr(args, "dtype", None) or "auto", seed=getattr(args, "seed", 0),
                            gpu_memory_utilization=getattr(args, "gpu_memory_utilization", 0.9) / 2,
                            max_model_len=getattr(args, "max_model_len", 16384),
                            enforce_eager=bool(getattr(args, "vllm_eager", False)), start_engine=False,
                            max_images=getattr(args, "max_images", 1), **pixels)
    return prompts


def start_generators(small_spec: str, large_spec: str, args) -> tuple[AsyncVLLMGenerator, AsyncVLLMGenerator,
                                                                           callable]:
    """(small generator, large generator, close) with both engines on one event loop in this process.

    args: dtype, seed, max_model_len, vllm_eager, min_pixels / max_pixels, gpu_memory_utilization,
    kv_cache_gib, the CHUNKED_PREFILL settings (each optional; defaults as mai.cli's, vLLM's)."""
    use_cpu_engine_env()
    require_vllm()
    loop = EngineLoop()
    built: list[AsyncVLLMGenerator] = []

    def close() -> None:
        for gen in built:
            gen.close()
        loop.stop()

    try:
        prompts = [prompt_side(spec, args) for spec in (small_spec, large_spec)]
        for role, gen, engine_args in zip(("small", "large"), prompts, pair_engine_args(prompts, args)):
            built.append(AsyncVLLMGenerator(gen, engine_args, loop, role))
    except BaseException:
        close()
        raise
    return built[0], built[1], close
