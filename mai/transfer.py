"""Reasoning transfer: the small model's reasoning, whole or sparse, as context for the large model.

Full transfer hands over the reasoning text as generated. Sparse transfer keeps only the reasoning
tokens that receive most of the small model's attention at one decoder layer, up to a cumulative mass
delta, and turns them back into text in their original order.

Which attention. One transformers forward of the small model over its first-stage prompt (image
included), its reasoning, and the second-stage suffix that asks for the answer; the row captured is that
of the LAST position: the one from which the small model would emit its short answer, so its attention
says which reasoning tokens the answer draws on. `query="reasoning_end"` uses the last reasoning token
instead. The candidates are the reasoning tokens only: image, question and template tokens are never
selected. One forward serves every layer (experiments/09 sweeps layers on a single capture).
"""
from __future__ import annotations

import dataclasses
import time

import torch

from mai import prompts
from mai.attention import (SparseOptions, capture_attention, mass_fraction, reasoning_weights, select_by_mass,
                           sparse_text)
from mai.generation import HFGenerator, Result, _sync

QUERIES = ("answer", "reasoning_end")


@dataclasses.dataclass
class ReasoningAttention:
    """The small model's attention at the query position, per captured layer, and where its reasoning is."""

    reasoning_ids: list[int]
    start: int  # key position of the first reasoning token
    rows: dict[int, torch.Tensor]  # layer -> [heads, keys] float32, the whole captured row
    input_tokens: int  # length of the captured forward
    seconds: float

    @property
    def positions(self) -> range:
        return range(self.start, self.start + len(self.reasoning_ids))

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
            out[layer] = dict(sink=float(mean[0]), reasoning=float(mean[self.start:self.start + len(self.reasoning_ids)].sum()))
        return out


def attention_over_reasoning(generator: HFGenerator, first: Result, post_prompt: str, layers="all",
                             query: str = "answer") -> ReasoningAttention:
    """Capture the small model's attention of one query position over its reasoning (see module doc)."""
    if query not in QUERIES:
        raise ValueError(f"query must be one of {QUERIES}, got {query!r}")
    if first.sequence is None:
        raise ValueError("the first stage must be generated with keep_cache=True to transfer sparsely")
    lm = generator.loaded
    reasoning = generator.reasoning_ids(first)
    start = first.input_tokens
    ids = first.sequence[:, : start + len(reasoning)].cpu()
    if query == "answer":
        n_images = int(first.vision_inputs["image_grid_thw"].shape[0]) if first.vision_inputs else 0
        suffix = prompts.second_stage_suffix(lm.processor, n_images, first.first_text, post_prompt,
                                             lm.thinking)
        suffix_ids = lm.tokenizer(suffix, add_special_tokens=False, return_tensors="pt").input_ids
        ids = torch.cat([ids, suffix_ids], dim=1)
    mm = torch.zeros_like(ids)
    mm[:, :start] = first.mm_token_type_ids[:, :start].cpu()
    inputs = dict(input_ids=ids, mm_token_type_ids=mm, **(first.vision_inputs or {}))
    return capture_reasoning(lm.model, inputs, start, reasoning.tolist(), layers)


def reasoning_attention(generator, first: Result, post_prompt: str, layers="all",
                        query: str = "answer") -> ReasoningAttention:
    """attention_over_reasoning for any backend: one that returns no attention weights (vLLM) brings
    its own method of that name, which runs the transformers capture for it."""
    own = getattr(generator, "attention_over_reasoning", None)
    if own is not None:
        return own(first, post_prompt, layers, query)
    return attention_over_reasoning(generator, first, post_prompt, layers, query)


def capture_reasoning(model, inputs: dict, start: int, reasoning_ids: list[int], layers="all") -> ReasoningAttention:
    """One forward of `model` over `inputs` (batch 1) with attention capture at `layers`; the last
    position's attention over the reasoning tokens at positions start .. start+len(reasoning_ids)."""
    device = next(model.parameters()).device
    inputs = {k: (v.to(device) if torch.is_tensor(v) else v) for k, v in inputs.items()}
    inputs.setdefault("attention_mask", torch.ones_like(inputs["input_ids"]))
    _sync(device)
    t0 = time.perf_counter()
    with torch.inference_mode(), capture_attention(model, layers) as cap:
        model(**inputs, use_cache=False)
    _sync(device)
    seconds = time.perf_counter() - t0
    rows = {layer: row.float().cpu() for layer, row in cap.rows.items()}
    return ReasoningAttention(list(reasoning_ids), start, rows, int(inputs["input_ids"].shape[1]), seconds)


def sparse_reasoning(tokenizer, attention: ReasoningAttention, options: SparseOptions) -> tuple[str, int]:
    """The kept reasoning as text, and how many tokens were kept."""
    kept = attention.kept(options)
    return sparse_text(tokenizer, attention.reasoning_ids, kept, skip_special_tokens=True), len(kept)
