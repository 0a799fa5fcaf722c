"""A second stage continues its first stage's KV cache (transformers backend).

A first stage that keeps its cache (Request.keep_cache) returns in its Result what its second stage needs:
the token sequence so far, the family's per-token inputs over it (Qwen3-VL's mm_token_type_ids), the cache,
the family's position state (Qwen's M-RoPE rope_deltas) and its image inputs. The second stage feeds the
first stage's tokens, its reasoning without a closing eos (the template's suffix closes the turn itself),
and the rendered suffix; the cache covers all but the suffix, so only the suffix is prefilled. A row of a
batched call is kept as a batch-1 first stage: its padding cut from its tokens and cache.

`lm` is a mai.models.LoadedModel throughout.
"""
from __future__ import annotations

import torch
from transformers import DynamicCache

from mai import compiled_decode, prompts
from mai.request import Request, Result


def reasoning_ids(first: Result, eos_token_ids) -> torch.Tensor:
    """The first stage's generated tokens without a closing eos: [n]."""
    new = first.sequence[0, first.input_tokens:]
    if new.numel() and int(new[-1]) in eos_token_ids:
        new = new[:-1]
    return new


def second_stage_inputs(lm, request: Request) -> tuple[dict, str, int]:
    """The second stage's processor inputs, its first stage's user text, and the count of cached tokens."""
    first = request.reuse
    if first is None or first.cache is None:
        raise ValueError("mode 'answer' continues a first stage: pass reuse=<Result with keep_cache>")
    sequence = first.sequence[:, : first.input_tokens + len(reasoning_ids(first, lm.eos_token_ids))]
    suffix_ids = torch.tensor([prompts.second_stage_suffix_ids(
        lm.processor, len(request.images), first.first_text, request.post_prompt, lm.thinking, lm.family)])
    input_ids = torch.cat([sequence.cpu(), suffix_ids], dim=1)
    # Per-token inputs continue over the suffix as text (0).
    extra = {k: torch.cat([first.token_inputs[k][:, : sequence.shape[1]].cpu(), torch.zeros_like(suffix_ids)],
                          dim=1) for k in lm.family.token_inputs}
    return (dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **extra), first.first_text,
            first.cache.get_seq_length())


def restore_position_state(lm, first: Result) -> None:
    """The first stage's M-RoPE offsets back on the model: they live there, and another prompt may have
    replaced them since."""
    for name, value in first.position_state.items():
        setattr(lm.model.model, name, value)


def keep(result: Result, lm, out, inputs: dict) -> None:
    """Store in `result` what its second stage continues from, after a batch-1 generate `out` on `inputs`."""
    new = out.sequences[0, inputs["input_ids"].shape[1]:]
    result.sequence = out.sequences
    result.token_inputs = {k: torch.cat([inputs[k], torch.zeros_like(new)[None]], dim=1)
                           for k in lm.family.token_inputs}
    # A static cache (the compiled decode) leaves as the DynamicCache of the positions it holds: all but the
    # last token, never fed.
    result.cache = (out.cache if isinstance(out.cache, DynamicCache) else
                    compiled_decode.dynamic_copy(out.cache, slice(0, 1), slice(0, out.sequences.shape[1] - 1),
                                                 lm.model.config))
    result.position_state = {k: getattr(lm.model.model, k) for k in lm.family.position_state}
    result.vision_inputs = {k: inputs[k] for k in lm.family.vision_inputs if k in inputs}


def keep_row(result: Result, lm, out, inputs: dict, i: int, pad: int, end: int, images: slice) -> None:
    """Row i of a batched generate as a batch-1 first stage: its tokens, its KV cache without the padding
    (end - 1 positions: the last token was never fed, as in generate), its M-RoPE offset and its own
    images' pixels (`images`: its rows of image_grid_thw)."""
    result.sequence = out.sequences[i:i + 1, pad:end]
    n_out = end - inputs["input_ids"].shape[1]
    for key in lm.family.token_inputs:
        mm = inputs[key][i:i + 1, pad:]
        result.token_inputs[key] = torch.cat([mm, torch.zeros((1, n_out), dtype=mm.dtype, device=mm.device)], 1)
    result.cache = compiled_decode.dynamic_copy(out.cache, slice(i, i + 1), slice(pad, end - 1), lm.model.config)
    result.position_state = {k: getattr(lm.model.model, k)[i:i + 1] for k in lm.family.position_state}
    result.vision_inputs = row_images(inputs, images)


def image_rows(counts: list[int]) -> list[slice]:
    """Which images (rows of image_grid_thw) belong to each request of a batch, in order."""
    out, start = [], 0
    for count in counts:
        out.append(slice(start, start + count))
        start += count
    return out


def row_images(inputs: dict, images: slice) -> dict:
    """The pixel_values and image_grid_thw of a batch's images `images` ({} for none)."""
    if "image_grid_thw" not in inputs or images.stop <= images.start:
        return {}
    grid = inputs["image_grid_thw"]
    patches = torch.cat([grid.new_zeros(1), grid.prod(-1).cumsum(0)])
    first, last = int(patches[images.start]), int(patches[images.stop])
    return dict(pixel_values=inputs["pixel_values"][first:last], image_grid_thw=grid[images])
