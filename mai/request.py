"""The one generation interface every backend speaks: Request -> Result, with token and stage-time accounting.

A backend (mai.generation.HFGenerator for transformers, mai.vllm_backend.VLLMGenerator for vLLM) has
generate(Request) -> Result and generate_batch(list[Request]) -> list[Result]. Result.times holds seconds per
stage, keys STAGES, as the paper profiles them (Tables 3-4; mai.stage_timing says how transformers measures
them, mai.vllm_backend how vLLM's are read).
"""
from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import torch

STAGES = ("preprocess", "vision", "prefill", "decode")


def utc_now() -> str:
    """Wall-clock time in UTC, ISO 8601 to the millisecond: when a call started and ended, in its row, so that
    the order of rows and commits can be proven from the rows alone."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


@dataclasses.dataclass
class Request:
    question: str
    images: list = dataclasses.field(default_factory=list)  # PIL images
    mode: str = "simple"  # simple | think | answer (the second stage; needs `reuse`)
    post_prompt: str = ""
    max_new_tokens: int = 16
    min_new_tokens: int = 0  # profiling forces output lengths with it
    context: str | None = None  # reasoning transfer: another model's reasoning, prepended
    think_prompt: str | None = None  # mode "think": this user text instead of question + the instruction
    simple_prompt: str | None = None  # mode "simple": this user text instead of question + post_prompt
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
    output_ids: list[int] | None = None  # the generated token ids, a closing stop token included
    started: str | None = None  # UTC wall clock (utc_now) when the call (its batch) began and ended
    ended: str | None = None

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
                   latency=round(self.latency, 6), stopped=self.stopped)
        for name in ("started", "ended", "output_ids"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.stats is not None:
            out["stats"] = self.stats
        if self.batch_size is not None:
            out["batch_size"] = self.batch_size
        if self.fallback is not None:
            out["fallback"] = self.fallback
        return out
