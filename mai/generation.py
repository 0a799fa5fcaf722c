"""One generation interface for every experiment: Request -> Result, with token and stage-time accounting.

Stage times follow the paper's profile (Tables 3-4): preprocessing (image resize, patching and
tokenization), vision encoder, prefill (the prompt's forward, excluding the vision tower) and decode
(every token after the first). Each clock read is preceded by a device synchronize, so GPU times are
the kernels' own and not their launch.

Decoding is greedy (the paper's and lmms-eval's setting); `seed` only matters for sampling backends.

Batches (`HFGenerator.generate_batch`, used by the stage-major cascade in mai.batch): requests are
left-padded into one generate call per (min, max new tokens) group. A request's stage times are then
the batch's stage times divided evenly among its requests (amortised cost, not a latency), and its
Result says `batch_size`. Greedy rows are independent (padding is masked and M-RoPE positions follow
the attention mask), so a batched answer is the batch-1 answer up to floating-point differences between
batched and unbatched kernels; on the tiny fp32 models they are identical token for token
(tests/test_batch.py). Second stages (mode "answer") continue each request's own KV cache one at a
time, exactly as `generate` does; such a Result says `batch_size` 1 and why, in `fallback`.

Attention for sparse transfer (Request.capture): the prefill of the call records the last query row at
the asked layers (mai.attention.capture_attention, prefill_only), so a second stage's prefill of its
suffix on the first stage's cache yields the row over every key, image and reasoning included, without
a second vision pass or a re-prefill (mai.transfer).
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

from mai import images as images_mod
from mai import prompts
from mai.attention import capture_attention
from mai.models import LoadedModel

STAGES = ("preprocess", "vision", "prefill", "decode")


@dataclasses.dataclass
class Request:
    question: str
    images: list = dataclasses.field(default_factory=list)  # PIL images
    mode: str = "simple"  # simple | think | answer (the second stage; needs `reuse`)
    post_prompt: str = ""
    max_new_tokens: int = 16
    min_new_tokens: int = 0  # profiling forces output lengths with it
    context: str | None = None  # reasoning transfer: another model's reasoning, prepended
    reuse: "Result | None" = None  # the first stage whose KV cache the second stage continues
    keep_cache: bool = False  # return the KV cache (a first stage that a second stage will reuse)
    # Decoder layers whose last-row attention the PREFILL records into Result.attention (sparse transfer
    # from the second stage's cached prefill; mai.transfer). Backends without attention ignore it.
    capture: tuple[int, ...] = ()


@dataclasses.dataclass
class Result:
    text: str
    input_tokens: int  # prompt length, cached tokens included
    output_tokens: int  # generated tokens, a closing eos included (each cost a decode step)
    times: dict[str, float]  # seconds per stage, keys STAGES
    cached_tokens: int = 0  # prompt tokens whose KV came from `reuse` instead of a prefill
    stopped: bool = False  # the output ends with a stop token (counted in output_tokens, not in text)
    # Kept for a second stage: the full token sequence so far and the cache over it.
    sequence: torch.Tensor | None = dataclasses.field(default=None, repr=False)
    # The family's per-token processor outputs over `sequence` (Qwen3-VL's mm_token_type_ids).
    token_inputs: dict = dataclasses.field(default_factory=dict, repr=False)
    cache: Any = dataclasses.field(default=None, repr=False)
    # The family's position state after the first stage (Qwen's M-RoPE rope_deltas).
    position_state: dict = dataclasses.field(default_factory=dict, repr=False)
    vision_inputs: dict | None = dataclasses.field(default=None, repr=False)  # pixel_values (+ image_grid_thw)
    images: int = 0  # images in the prompt
    first_text: str = ""  # the user text of the first stage, for rendering the second
    stats: dict | None = None  # backend-specific counts, e.g. speculative decoding's draft acceptance
    batch_size: int | None = None  # set by generate_batch: times are the batch's, divided by this
    fallback: str | None = None  # why generate_batch ran this request alone (batch_size 1), if it did
    # Request.capture: layer -> the prefill's last-row attention [heads, keys] float32 CPU, keys = the
    # whole sequence (cached prefix + this prompt).
    attention: dict | None = dataclasses.field(default=None, repr=False)

    @property
    def mm_token_type_ids(self) -> torch.Tensor | None:
        return self.token_inputs.get("mm_token_type_ids")

    @property
    def rope_deltas(self) -> torch.Tensor | None:
        return self.position_state.get("rope_deltas")

    @property
    def content_tokens(self) -> int:
        """Generated tokens without a closing stop token: what a reasoning hands over."""
        return self.output_tokens - int(self.stopped)

    @property
    def latency(self) -> float:
        return sum(self.times.values())

    def summary(self) -> dict:
        """The JSON-serialisable part, as stored in results rows and traces."""
        out = dict(text=self.text, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                   cached_tokens=self.cached_tokens, times={k: round(v, 6) for k, v in self.times.items()},
                   latency=round(self.latency, 6))
        if self.stats is not None:
            out["stats"] = self.stats
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if self.fallback is not None:
            out["fallback"] = self.fallback
        return out


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class _Clock(LogitsProcessor):
    """Stamps the end of prefill: generate calls logits processors first right after the prompt's forward."""

    def __init__(self, device):
        self.device, self.first = device, None

    def __call__(self, input_ids, scores):
        if self.first is None:
            _sync(self.device)
            self.first = time.perf_counter()
        return scores


class _VisionTimer:
    """Times the vision tower inside the model's forward with hooks, so prefill excludes it."""

    def __init__(self, module, device):
        self.device, self.total, self._start = device, 0.0, None
        self._handles = [] if module is None else [module.register_forward_pre_hook(self._pre),
                                                    module.register_forward_hook(self._post)]

    def _pre(self, *_):
        _sync(self.device)
        self._start = time.perf_counter()

    def _post(self, *_):
        _sync(self.device)
        self.total += time.perf_counter() - self._start

    def remove(self):
        for h in self._handles:
            h.remove()


class HFGenerator:
    """The transformers backend."""

    def __init__(self, loaded: LoadedModel, seed: int = 0, max_batch: int | None = None):
        self.loaded, self.seed = loaded, seed
        self.max_batch = max_batch  # generate_batch: most requests per generate call (None: no limit)

    def _config(self, request: Request) -> GenerationConfig:
        """Greedy decoding. A forced output length (min = max new tokens, as profiling asks) stops on
        length alone instead of masking the stop tokens: transformers' min-length processor rebuilds a
        vocabulary-wide mask at every step, which costs a tiny model ~2 ms a token and would be timed as
        decode."""
        lm = self.loaded
        forced = request.min_new_tokens >= request.max_new_tokens
        return GenerationConfig(max_new_tokens=request.max_new_tokens,
                                min_new_tokens=0 if forced else request.min_new_tokens, do_sample=False,
                                eos_token_id=[] if forced else lm.eos_token_ids,
                                pad_token_id=lm.tokenizer.pad_token_id or lm.eos_token_ids[0],
                                return_dict_in_generate=True, use_cache=True)

    def reasoning_ids(self, first: Result) -> torch.Tensor:
        """The first stage's generated tokens without a closing eos: [n]."""
        new = first.sequence[0, first.input_tokens:]
        if new.numel() and int(new[-1]) in self.loaded.eos_token_ids:
            new = new[:-1]
        return new

    def _inputs(self, request: Request) -> tuple[dict, str, int]:
        """Processor inputs for a fresh prompt, its user text, and the count of reused tokens."""
        lm = self.loaded
        if request.mode == "answer":
            first = request.reuse
            if first is None or first.cache is None:
                raise ValueError("mode 'answer' continues a first stage: pass reuse=<Result with keep_cache>")
            # A closing eos is dropped: the template's suffix closes the turn itself.
            sequence = first.sequence[:, : first.input_tokens + len(self.reasoning_ids(first))]
            suffix_ids = torch.tensor([prompts.second_stage_suffix_ids(
                lm.processor, len(request.images), first.first_text, request.post_prompt, lm.thinking, lm.family)])
            input_ids = torch.cat([sequence.cpu(), suffix_ids], dim=1)
            # Per-token inputs continue over the suffix as text (0).
            extra = {k: torch.cat([first.token_inputs[k][:, : sequence.shape[1]].cpu(), torch.zeros_like(suffix_ids)],
                                  dim=1) for k in lm.family.token_inputs}
            return dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                        **extra), first.first_text, first.cache.get_seq_length()
        prompt, text = self._prompt(request)
        # lmms-eval's image sizes (mai.images), resized by us so that every backend sees these pixels.
        images = images_mod.prepare(request.images, lm.processor, lm.family)
        inputs = lm.family.encode(lm.processor, [prompt], images)
        return dict(inputs), text, 0

    def _prompt(self, request: Request) -> tuple[str, str]:
        """A first-stage request's rendered prompt and its user text."""
        lm = self.loaded
        text = prompts.user_text(request.question, request.mode, request.post_prompt, request.context,
                                 lm.thinking)
        return prompts.render(lm.processor, len(request.images), text,
                              thinking=lm.thinking and request.mode == "think", family=lm.family), text

    def _decode(self, inputs: dict, kwargs: dict, config: GenerationConfig, clock: LogitsProcessor):
        """The generate call itself; a subclass changes how tokens are decoded (mai.speculative)."""
        return self.loaded.model.generate(**inputs, **kwargs, generation_config=config,
                                          logits_processor=LogitsProcessorList([clock]))

    @torch.inference_mode()
    def generate(self, request: Request) -> Result:
        lm = self.loaded
        dev = lm.device
        torch.manual_seed(self.seed)
        _sync(dev)
        t0 = time.perf_counter()
        inputs, first_text, cached = self._inputs(request)
        inputs = {k: (v.to(dev) if torch.is_tensor(v) else v) for k, v in inputs.items()}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(lm.dtype)
        _sync(dev)
        t1 = time.perf_counter()

        config = self._config(request)
        kwargs = {}
        if request.mode == "answer":
            kwargs["cache"] = request.reuse.cache
            # M-RoPE offsets of the first stage's image live on the model; another prompt may have
            # replaced them since.
            for name, value in request.reuse.position_state.items():
                setattr(lm.model.model, name, value)
        clock = _Clock(dev)
        vision = _VisionTimer(lm.family.tower(lm.model), dev)
        try:
            with contextlib.ExitStack() as stack:
                # The capture's extra work (one float32 row per asked layer) is part of the prefill it
                # rides on; the decode steps compute nothing extra.
                cap = (stack.enter_context(capture_attention(lm.model, request.capture, prefill_only=True))
                       if request.capture else None)
                out = self._decode(inputs, kwargs, config, clock)
        finally:
            vision.remove()
        _sync(dev)
        t2 = time.perf_counter()

        n_in = inputs["input_ids"].shape[1]
        new = out.sequences[0, n_in:]
        text = lm.tokenizer.decode(new, skip_special_tokens=True)
        first_step = clock.first or t2
        times = dict(preprocess=t1 - t0, vision=vision.total,
                     prefill=max(first_step - t1 - vision.total, 0.0), decode=t2 - first_step)
        stopped = bool(new.numel()) and int(new[-1]) in (config.eos_token_id or [])
        result = Result(text=text, input_tokens=n_in, output_tokens=int(new.numel()), times=times,
                        cached_tokens=cached, stopped=stopped, first_text=first_text, images=len(request.images))
        if cap is not None:
            result.attention = {layer: row.float().cpu() for layer, row in cap.rows.items()}
        if request.keep_cache:
            result.sequence = out.sequences
            result.token_inputs = {k: torch.cat([inputs[k], torch.zeros_like(new)[None]], dim=1)
                                   for k in lm.family.token_inputs}
            result.cache = out.cache
            result.position_state = {k: getattr(lm.model.model, k) for k in lm.family.position_state}
            result.vision_inputs = {k: inputs[k] for k in lm.family.vision_inputs if k in inputs}
        return result

    # -- batches ---------------------------------------------------------------------------------------

    def generate_batch(self, requests: list[Request]) -> list[Result]:
        """Every request's Result, in order, first stages batched (see the module doc).

        Requests are grouped by (min_new_tokens, max_new_tokens) and cut into chunks of max_batch; each
        chunk is one left-padded generate call. Second stages (mode "answer") and generators whose
        decoding differs from plain generate (speculative decoding needs batch 1) run one at a time."""
        results: list[Result | None] = [None] * len(requests)
        groups: dict[tuple[int, int], list[int]] = {}
        alone = None if type(self)._decode is HFGenerator._decode else "decoding needs batch size 1"
        # A kept first stage needs its own images' pixels back: split per row for grids of patches only.
        split = "image_grid_thw" in self.loaded.family.vision_inputs
        for i, request in enumerate(requests):
            reason = "second stage continues its own cache" if request.mode == "answer" else alone
            if reason is None and request.keep_cache and request.images and not split:
                reason = "this family's image inputs are not split per request"
            if reason:
                results[i] = self.generate(request)
                results[i].batch_size, results[i].fallback = 1, reason
            else:
                groups.setdefault((request.min_new_tokens, request.max_new_tokens), []).append(i)
        size = self.max_batch or len(requests) or 1
        for indices in groups.values():
            for start in range(0, len(indices), size):
                chunk = indices[start:start + size]
                for i, result in zip(chunk, self._generate_chunk([requests[i] for i in chunk])):
                    results[i] = result
        return results

    @torch.inference_mode()
    def _generate_chunk(self, requests: list[Request]) -> list[Result]:
        """One left-padded generate call over first-stage requests with the same length limits."""
        lm = self.loaded
        dev = lm.device
        torch.manual_seed(self.seed)
        _sync(dev)
        t0 = time.perf_counter()
        rendered = [self._prompt(r) for r in requests]
        images = images_mod.prepare([image for r in requests for image in r.images], lm.processor, lm.family)
        tokenizer = lm.tokenizer
        side, tokenizer.padding_side = tokenizer.padding_side, "left"
        try:
            inputs = lm.family.encode(lm.processor, [prompt for prompt, _ in rendered], images, padding=True)
        finally:
            tokenizer.padding_side = side
        inputs = {k: (v.to(dev) if torch.is_tensor(v) else v) for k, v in dict(inputs).items()}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(lm.dtype)
        _sync(dev)
        t1 = time.perf_counter()

        first = requests[0]
        config = self._config(first)
        clock = _Clock(dev)
        vision = _VisionTimer(lm.family.tower(lm.model), dev)
        try:
            out = lm.model.generate(**inputs, generation_config=config,
                                    logits_processor=LogitsProcessorList([clock]))
        finally:
            vision.remove()
        _sync(dev)
        t2 = time.perf_counter()

        n = len(requests)
        first_step = clock.first or t2
        times = dict(preprocess=(t1 - t0) / n, vision=vision.total / n,
                     prefill=max(first_step - t1 - vision.total, 0.0) / n, decode=(t2 - first_step) / n)
        width = inputs["input_ids"].shape[1]
        pads = (inputs["attention_mask"] == 0).sum(1).tolist()  # left padding of each row
        image_rows = _image_rows([len(r.images) for r in requests])
        # The stop tokens this call used: none when the output length was forced.
        eos = torch.tensor(list(config.eos_token_id or []), dtype=torch.long, device=out.sequences.device)
        results = []
        for i, (request, (_, text)) in enumerate(zip(requests, rendered)):
            new = out.sequences[i, width:]
            ended = torch.isin(new, eos).nonzero()
            n_out = int(ended[0]) + 1 if len(ended) else int(new.numel())  # what follows the eos is padding
            new = new[:n_out]
            result = Result(text=lm.tokenizer.decode(new, skip_special_tokens=True),
                            input_tokens=width - pads[i], output_tokens=n_out, times=dict(times),
                            stopped=bool(len(ended)), first_text=text, batch_size=n, images=len(request.images))
            if request.keep_cache:
                self._keep_row(result, out, inputs, i, pads[i], width + n_out, image_rows[i])
            results.append(result)
        return results

    def _keep_row(self, result: Result, out, inputs: dict, i: int, pad: int, end: int, images: slice) -> None:
        """Row i of a batched generate as a batch-1 first stage: its tokens, its KV cache without the
        padding (end - 1 positions: the last token was never fed, as in generate), its M-RoPE offset and
        its own images' pixels."""
        from transformers import DynamicCache

        lm = self.loaded
        result.sequence = out.sequences[i:i + 1, pad:end]
        n_out = end - inputs["input_ids"].shape[1]
        for key in lm.family.token_inputs:
            mm = inputs[key][i:i + 1, pad:]
            result.token_inputs[key] = torch.cat([mm, torch.zeros((1, n_out), dtype=mm.dtype, device=mm.device)], 1)
        rows = (slice(i, i + 1), slice(None), slice(pad, end - 1))  # [1, heads, kept positions, head_dim]
        result.cache = DynamicCache(ddp_cache_data=[(layer.keys[rows], layer.values[rows])
                                                    for layer in out.cache.layers], config=lm.model.config)
        result.position_state = {k: getattr(lm.model.model, k)[i:i + 1] for k in lm.family.position_state}
        if "image_grid_thw" in inputs and images.stop > images.start:
            grid = inputs["image_grid_thw"]
            patches = torch.cat([grid.new_zeros(1), grid.prod(-1).cumsum(0)])
            first, last = int(patches[images.start]), int(patches[images.stop])
            result.vision_inputs = dict(pixel_values=inputs["pixel_values"][first:last], image_grid_thw=grid[images])
        else:
            result.vision_inputs = {}


def _image_rows(counts: list[int]) -> list[slice]:
    """Which images (rows of image_grid_thw) belong to each request of a batch, in order."""
    out, start = [], 0
    for count in counts:
        out.append(slice(start, start + count))
        start += count
    return out
