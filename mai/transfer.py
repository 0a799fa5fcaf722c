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
from mai.attention import SparseOptions, capture_attention, reasoning_weights, select_by_mass, sparse_text
from mai.generation import HFGenerator, Result, _sync

QUERIES = ("answer", "reasoning_end")


@dataclasses.dataclass
class ReasoningAttention:
    """The small model's attention over its own reasoning tokens, per captured layer."""

    reasoning_ids: list[int]
    weights: dict[int, torch.Tensor]  # layer -> [heads, n_reasoning] float32
    input_tokens: int  # length of the captured forward
    seconds: float

    def kept(self, options: SparseOptions) -> list[int]:
        """Indices into reasoning_ids that hold options.delta of the mass at options.layer."""
        row = self.weights[options.layer]
        w = reasoning_weights(row, range(row.shape[-1]), heads=options.heads, sink=options.sink)
        return select_by_mass(w, options.delta)


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
    inputs = dict(input_ids=ids.to(lm.device), attention_mask=torch.ones_like(ids, device=lm.device),
                  mm_token_type_ids=mm.to(lm.device), **(first.vision_inputs or {}))
    _sync(lm.device)
    t0 = time.perf_counter()
    with torch.inference_mode(), capture_attention(lm.model, layers) as cap:
        lm.model(**inputs, use_cache=False)
    _sync(lm.device)
    seconds = time.perf_counter() - t0
    positions = slice(start, start + len(reasoning))
    weights = {layer: row[:, positions].float().cpu() for layer, row in cap.rows.items()}
    return ReasoningAttention(reasoning.tolist(), weights, int(ids.shape[1]), seconds)


def sparse_reasoning(tokenizer, attention: ReasoningAttention, options: SparseOptions) -> tuple[str, int]:
    """The kept reasoning as text, and how many tokens were kept."""
    kept = attention.kept(options)
    return sparse_text(tokenizer, attention.reasoning_ids, kept, skip_special_tokens=True), len(kept)
