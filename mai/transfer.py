"""Reasoning transfer: the small model's reasoning, whole or sparse, as context for the large model.

Full transfer hands over the reasoning text as generated. Sparse transfer keeps only the reasoning
tokens that receive most of the small model's attention at one decoder layer, up to a cumulative mass
delta, and turns them back into text in their original order.

Which attention. The row of one query position over every key of the small model's sequence: its
first-stage prompt (image included), its reasoning, and, for `query="answer"` (default), the
second-stage suffix that asks for the answer; the query is the LAST suffix position, the one from which
the small model emits its short answer, so its attention says which reasoning tokens the answer draws
on. `query="reasoning_end"` uses the last reasoning token instead, and that token, being the query, is
not a candidate. The candidates are reasoning tokens only: image, question and template tokens are
never selected.

Where it comes from: the prefill the method already does, never a second vision pass.
  * verify="answer": the second stage prefills the suffix on the first stage's KV cache; its last row,
    captured during that prefill (Request.capture), covers every key, cached ones included. The cost is
    inside the second stage's prefill; no call of its own (`from_second_stage`).
  * verify="reasoning" (no second stage), or query="reasoning_end": one forward of the few uncached
    tokens (the suffix, or the last reasoning token) on the kept first-stage cache (`capture_on_cache`),
    a labelled call with its own time.
  * A backend that returns no attention (vLLM) brings its own `attention_over_reasoning`: one
    transformers forward over the whole sequence, also a labelled call. `attention_over_reasoning` here
    does the same on a transformers model: the reference the others are tested against, and the one
    capture over every layer that experiments/09 sweeps.
"""
from __future__ import annotations

import dataclasses
import time

import torch

from mai import prompts
from mai.attention import (SparseOptions, capture_attention, mass_fraction, reasoning_weights, select_by_mass,
                           sparse_text, whole_numbers)
from mai.generation import HFGenerator, Result
from mai.stage_timing import sync

QUERIES = ("answer", "reasoning_end")
SOURCES = ("second stage", "cache", "forward")  # where a row was captured (see the module doc)


@dataclasses.dataclass
class ReasoningAttention:
    """The small model's attention at the query position, per captured layer, and where its reasoning is."""

    reasoning_ids: list[int]
    start: int  # key position of the first reasoning token
    rows: dict[int, torch.Tensor]  # layer -> [heads, keys] float32, the whole captured row
    input_tokens: int  # keys of the row: the sequence it covers
    seconds: float  # time of a forward of its own; 0.0 when captured inside the second stage's prefill
    query: str = "answer"
    source: str = "forward"  # one of SOURCES
    cached_tokens: int = 0  # keys whose KV came from the cache instead of this capture's forward

    @property
    def candidates(self) -> int:
        """How many reasoning tokens may be kept: all, less the query token itself for reasoning_end."""
        return len(self.reasoning_ids) - (self.query == "reasoning_end" and len(self.reasoning_ids) > 0)

    @property
    def positions(self) -> range:
        return range(self.start, self.start + self.candidates)

    def candidate_weights(self, options: SparseOptions) -> torch.Tensor:
        return reasoning_weights(self.rows[options.layer], self.positions, heads=options.heads, sink=options.sink)

    def kept(self, options: SparseOptions) -> list[int]:
        """Indices into reasoning_ids that hold options.delta of the mass at options.layer."""
        return select_by_mass(self.candidate_weights(options), options.delta)

    def fractions(self, delta: float, heads: str = "mean", sink: str = "keep") -> dict[int, float]:
        """Per layer, the fraction of reasoning tokens holding delta of their mass (Appendix B.7's curve)."""
        return {layer: mass_fraction(self.candidate_weights(SparseOptions(layer, delta, heads, sink)), delta)
                for layer in sorted(self.rows)}

    def shares(self) -> dict[int, dict[str, float]]:
        """Per layer, the head-mean attention on key 0 (the usual sink) and on the reasoning as a whole."""
        out = {}
        for layer, row in sorted(self.rows.items()):
            mean = row.mean(0)
            reasoning = mean[self.start:self.start + len(self.reasoning_ids)]
            out[layer] = dict(sink=float(mean[0]), reasoning=float(reasoning.sum()))
        return out


def _check(first: Result, query: str) -> None:
    if query not in QUERIES:
        raise ValueError(f"query must be one of {QUERIES}, got {query!r}")
    if first.sequence is None:
        raise ValueError("the first stage must be generated with keep_cache=True to transfer sparsely")


def _suffix_ids(generator: HFGenerator, first: Result, post_prompt: str) -> torch.Tensor:
    """The second stage's suffix as token ids [1, n], exactly as mai.generation renders it."""
    lm = generator.loaded
    return torch.tensor([prompts.second_stage_suffix_ids(lm.processor, first.images, first.first_text, post_prompt,
                                                         lm.thinking, lm.family)])


def _sequence(generator: HFGenerator, first: Result, post_prompt: str, query: str) -> tuple[torch.Tensor, list[int]]:
    """The ids whose last position is the query [1, n], and the reasoning ids."""
    reasoning = generator.reasoning_ids(first)
    ids = first.sequence[:, : first.input_tokens + len(reasoning)].cpu()
    if query == "answer":
        ids = torch.cat([ids, _suffix_ids(generator, first, post_prompt)], dim=1)
    return ids, reasoning.tolist()


def from_second_stage(generator: HFGenerator, first: Result, second: Result,
                      query: str = "answer") -> ReasoningAttention:
    """The rows the second stage's cached prefill recorded (Request.capture): no forward of its own."""
    if query != "answer":
        raise ValueError("the second stage's prefill ends at the answer query; reasoning_end needs capture_on_cache")
    if not second.attention:
        raise ValueError("the second stage recorded no attention: generate it with Request(capture=layers)")
    reasoning = generator.reasoning_ids(first).tolist()
    keys = {int(row.shape[-1]) for row in second.attention.values()}
    if keys != {second.input_tokens}:
        raise ValueError(f"captured rows cover {keys} keys, the second stage has {second.input_tokens} tokens")
    return ReasoningAttention(reasoning, first.input_tokens, dict(second.attention), second.input_tokens, 0.0,
                              query, "second stage", second.cached_tokens)


def capture_on_cache(generator: HFGenerator, first: Result, post_prompt: str, layers="all",
                     query: str = "answer") -> ReasoningAttention:
    """One forward of the uncached tail of the query's sequence on the first stage's kept KV cache.

    The cache holds the prompt (image included) and the reasoning, less its last token when the first
    stage stopped at the length limit (that token was never fed), and a second stage may have extended
    it; it is cut back to the part the query's sequence shares (for reasoning_end, everything before
    the last reasoning token), and only the rest is fed: no vision tower, no re-prefill. The cache is
    consumed (it ends holding this forward's tokens): call this last."""
    _check(first, query)
    if first.cache is None:
        raise ValueError("the first stage's KV cache is gone; keep it (keep_cache=True) until the capture")
    lm = generator.loaded
    ids, reasoning = _sequence(generator, first, post_prompt, query)
    cache = first.cache
    reuse = min(cache.get_seq_length(), ids.shape[1] - 1)  # at least the query itself is fed
    if cache.get_seq_length() > reuse:
        cache.crop(reuse - cache.get_seq_length())
    device = next(lm.model.parameters()).device
    feed = ids[:, reuse:].to(device)
    # M-RoPE offsets of the first stage's image: positions continue from the cache (no attention mask,
    # so transformers counts them from the cache length).
    for name, value in first.position_state.items():
        setattr(lm.model.model, name, value)
    text = {k: torch.zeros_like(feed) for k in lm.family.token_inputs}  # the fed tokens are text
    sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode(), capture_attention(lm.model, layers) as cap:
        lm.model(input_ids=feed, cache=cache, use_cache=True, **text)
    sync(device)
    seconds = time.perf_counter() - t0
    rows = {layer: row.float().cpu() for layer, row in cap.rows.items()}
    return ReasoningAttention(reasoning, first.input_tokens, rows, int(ids.shape[1]), seconds, query, "cache", reuse)


def attention_over_reasoning(generator: HFGenerator, first: Result, post_prompt: str, layers="all",
                             query: str = "answer") -> ReasoningAttention:
    """One fresh forward over the query's whole sequence, image included (see the module doc)."""
    _check(first, query)
    ids, reasoning = _sequence(generator, first, post_prompt, query)
    start = first.input_tokens
    inputs = dict(input_ids=ids, **(first.vision_inputs or {}))
    for key in generator.loaded.family.token_inputs:  # the prompt's own values, text (0) after it
        inputs[key] = torch.zeros_like(ids)
        inputs[key][:, :start] = first.token_inputs[key][:, :start].cpu()
    return capture_reasoning(generator.loaded.model, inputs, start, reasoning, layers, query)


def reasoning_attention(generator, first: Result, post_prompt: str, layers="all", query: str = "answer",
                        second: Result | None = None) -> ReasoningAttention:
    """The attention sparse transfer ranks by, from wherever it is cheapest (see the module doc): the
    second stage's prefill when it recorded it, else one forward on the kept cache; a backend that
    returns no attention weights (vLLM) brings its own attention_over_reasoning."""
    own = getattr(generator, "attention_over_reasoning", None)
    if own is not None:
        return own(first, post_prompt, layers, query)
    wanted = None if layers == "all" else {int(layer) for layer in layers}
    if (query == "answer" and second is not None and second.attention
            and (wanted is None or wanted <= set(second.attention))):
        return from_second_stage(generator, first, second, query)
    return capture_on_cache(generator, first, post_prompt, layers, query)


def capture_reasoning(model, inputs: dict, start: int, reasoning_ids: list[int], layers="all",
                      query: str = "answer") -> ReasoningAttention:
    """One forward of `model` over `inputs` (batch 1) with attention capture at `layers`; the last
    position's attention over the reasoning tokens at positions start .. start+len(reasoning_ids)."""
    device = next(model.parameters()).device
    inputs = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in inputs.items()}
    inputs.setdefault("attention_mask", torch.ones_like(inputs["input_ids"]))
    sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode(), capture_attention(model, layers) as cap:
        model(**inputs, use_cache=False)
    sync(device)
    seconds = time.perf_counter() - t0
    rows = {layer: row.float().cpu() for layer, row in cap.rows.items()}
    return ReasoningAttention(list(reasoning_ids), start, rows, int(inputs["input_ids"].shape[1]), seconds, query)


def sparse_reasoning(tokenizer, attention: ReasoningAttention, options: SparseOptions) -> tuple[str, int]:
    """The kept reasoning as text, and how many tokens were kept (a number-aware span: after widening)."""
    kept = attention.kept(options)
    if options.span == "number":
        kept = whole_numbers(tokenizer, attention.reasoning_ids[:attention.candidates], kept)
    return sparse_text(tokenizer, attention.reasoning_ids, kept, skip_special_tokens=True), len(kept)
