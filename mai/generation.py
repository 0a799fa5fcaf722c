"""One generation interface for every experiment: Request -> Result, with token and stage-time accounting.

Stage times follow the paper's profile (Tables 3-4): preprocessing (image resize, patching and
tokenization), vision encoder, prefill (the prompt's forward, excluding the vision tower) and decode
(every token after the first). Each clock read is preceded by a device synchronize, so GPU times are
the kernels' own and not their launch.

Decoding is greedy (the paper's and lmms-eval's setting); `seed` only matters for sampling backends.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

from mai import prompts
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


@dataclasses.dataclass
class Result:
    text: str
    input_tokens: int  # prompt length, cached tokens included
    output_tokens: int  # generated tokens, a closing eos included (each cost a decode step)
    times: dict[str, float]  # seconds per stage, keys STAGES
    cached_tokens: int = 0  # prompt tokens whose KV came from `reuse` instead of a prefill
    # Kept for a second stage: the full token sequence so far and the cache over it.
    sequence: torch.Tensor | None = dataclasses.field(default=None, repr=False)
    mm_token_type_ids: torch.Tensor | None = dataclasses.field(default=None, repr=False)
    cache: Any = dataclasses.field(default=None, repr=False)
    rope_deltas: torch.Tensor | None = dataclasses.field(default=None, repr=False)
    vision_inputs: dict | None = dataclasses.field(default=None, repr=False)  # pixel_values, image_grid_thw
    first_text: str = ""  # the user text of the first stage, for rendering the second
    stats: dict | None = None  # backend-specific counts, e.g. speculative decoding's draft acceptance

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
        self._handles = [module.register_forward_pre_hook(self._pre), module.register_forward_hook(self._post)]

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

    def __init__(self, loaded: LoadedModel, seed: int = 0):
        self.loaded, self.seed = loaded, seed

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
            suffix = prompts.second_stage_suffix(lm.processor, len(request.images), first.first_text,
                                                 request.post_prompt, lm.thinking)
            # A closing eos is dropped: the template's suffix closes the turn itself.
            sequence = first.sequence[:, : first.input_tokens + len(self.reasoning_ids(first))]
            suffix_ids = lm.tokenizer(suffix, add_special_tokens=False, return_tensors="pt").input_ids
            input_ids = torch.cat([sequence.cpu(), suffix_ids], dim=1)
            mm = torch.cat([first.mm_token_type_ids[:, : sequence.shape[1]].cpu(),
                            torch.zeros_like(suffix_ids)], dim=1)
            return dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                        mm_token_type_ids=mm), first.first_text, first.cache.get_seq_length()
        text = prompts.user_text(request.question, request.mode, request.post_prompt, request.context,
                                 lm.thinking)
        prompt = prompts.render(lm.processor, len(request.images), text,
                                thinking=lm.thinking and request.mode == "think")
        inputs = lm.processor(text=[prompt], images=request.images or None, return_tensors="pt")
        return dict(inputs), text, 0

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

        config = GenerationConfig(max_new_tokens=request.max_new_tokens, min_new_tokens=request.min_new_tokens,
                                  do_sample=False, eos_token_id=lm.eos_token_ids,
                                  pad_token_id=lm.tokenizer.pad_token_id or lm.eos_token_ids[0],
                                  return_dict_in_generate=True, use_cache=True)
        kwargs = {}
        if request.mode == "answer":
            kwargs["cache"] = request.reuse.cache
            # M-RoPE offsets of the first stage's image live on the model; another prompt may have
            # replaced them since.
            lm.model.model.rope_deltas = request.reuse.rope_deltas
        clock = _Clock(dev)
        vision = _VisionTimer(lm.model.model.visual, dev)
        try:
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
        result = Result(text=text, input_tokens=n_in, output_tokens=int(new.numel()), times=times,
                        cached_tokens=cached, first_text=first_text)
        if request.keep_cache:
            result.sequence = out.sequences
            result.mm_token_type_ids = torch.cat(
                [inputs["mm_token_type_ids"], torch.zeros_like(new)[None]], dim=1)
            result.cache = out.cache
            result.rope_deltas = lm.model.model.rope_deltas
            result.vision_inputs = {k: inputs[k] for k in ("pixel_values", "image_grid_thw") if k in inputs}
        return result
