"""Capture the small model's attention over its reasoning, and pick the tokens that hold most of it.

Sparse reasoning transfer (arXiv 2604.04929) hands the large model only those reasoning tokens of the
small model that receive most of the small model's attention at one decoder layer, up to a cumulative
mass ``delta`` (0.8 in the paper). This module provides the three pieces:

* ``capture_attention(model, layers)``: a context manager that records, for the chosen text-decoder
  layers, the attention probabilities of the LAST query position over all keys, from the most recent
  forward. The last position is the one that is about to produce the answer (after a prefill of
  prompt + reasoning it is the position that reads the whole reasoning), so its row is the natural
  "what does the model look at" signal, and it is the only row needed: one ``[heads, keys]`` float32
  row per chosen layer, O(keys) memory per head instead of the O(keys^2) matrix that
  ``attn_implementation="eager"`` + ``output_attentions=True`` materialises for every layer.

  How: a custom function is registered with ``transformers.AttentionInterface`` (with ``sdpa_mask``
  registered under the same name in ``AttentionMaskInterface``, without which transformers silently
  builds no causal mask at all) and the model (text and vision sub-configs) is switched to it. Every
  attention call is delegated to transformers' own ``sdpa_attention_forward`` with the very same
  arguments, so the model's outputs are bit-identical to plain ``sdpa``; in addition, for text-decoder
  attention modules (those with ``layer_idx``) in the requested layers, ``softmax(q_last . K^T *
  scaling + mask_last_row)`` is computed in float32 for the last query row only. Vision blocks (no
  ``layer_idx``) and other layers only delegate. On exit the previous implementation of every
  (sub-)config is restored, even if the model was ``eager`` before (inside the context it runs SDPA).

  Shapes: ``capture.rows_batched[layer]`` is ``[batch, heads, keys]``; ``capture.rows[layer]`` is the
  batch-0 view ``[heads, keys]`` (the usual batch-1 case). ``keys`` is the key length of that forward
  (prompt length in a prefill; cache length + 1 in a decode step); heads are the query heads (GQA key
  heads repeated). Positions masked out (left padding, future keys) get probability 0; with left padding
  key positions are positions in the padded sequence. Rows stay on the model's device. A new forward of
  the model clears the rows and refills them (so ``generate`` leaves the rows of its last decode step),
  unless ``prefill_only=True``: then only the first forward inside the context is recorded (a
  ``generate``'s prefill, whose last row, over a KV cache, covers every key, cached ones included) and
  the decode steps that follow compute nothing extra.

* ``reasoning_weights(row, reasoning_positions, heads=..., sink=...)`` reduces one captured row to one
  weight per reasoning token (the candidates are the reasoning tokens only, never image, question or
  template tokens); ``select_by_mass(weights, delta)`` returns the smallest set of candidates whose
  weights reach ``delta`` of the candidates' total; ``mass_fraction`` is the fraction of reasoning tokens
  that hold ``delta`` of the mass (the paper's Appendix B.7 curve); ``sparse_text`` decodes the kept
  tokens in their original order.

Options that change what is transferred and belong in a run's config (see ``SparseOptions``): the layer
(``layer``), ``delta``, the head reduction (``heads``: "mean" | "max") and the attention-sink handling
(``sink``: "keep" | "drop_first" | "renormalize"; "drop_first" zeroes the FIRST REASONING TOKEN, the
candidates' own first position: key 0, the usual global sink, is a template token and never a candidate,
so zeroing it would change nothing. Default "keep", as the paper does nothing of the kind.)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import torch

from mai import MaiError

CAPTURE_IMPLEMENTATION = "mai_capture"  # the name registered with transformers' attention interfaces
HEAD_REDUCTIONS = ("mean", "max")
SINK_OPTIONS = ("keep", "drop_first", "renormalize")
# What one selected token brings with it: itself (the paper's selection), or the whole number it is part of
# (ours, "number-aware": a tokenizer that splits numbers digit by digit, as Qwen's does, otherwise hands the
# large model "2" of "25" and drops "5"; see whole_numbers).
SPANS = ("token", "number")
# Relative slack when testing "the cumulative weight reaches delta of the total", so that a threshold hit
# exactly in exact arithmetic (e.g. weights 0.4, 0.4, 0.2 and delta 0.8) is not missed by rounding.
MASS_RTOL = 1e-12


@dataclasses.dataclass(frozen=True)
class SparseOptions:
    """The knobs of sparse reasoning transfer, as recorded in a run config."""

    layer: int
    delta: float = 0.8
    heads: str = "mean"
    sink: str = "keep"
    span: str = "token"  # one of SPANS; "token" is the paper's

    def __post_init__(self):
        _check_delta(self.delta)
        if self.span not in SPANS:
            raise ValueError(f"span must be one of {SPANS}, got {self.span!r}")
        if self.heads not in HEAD_REDUCTIONS:
            raise ValueError(f"heads must be one of {HEAD_REDUCTIONS}, got {self.heads!r}")
        if self.sink not in SINK_OPTIONS:
            raise ValueError(f"sink must be one of {SINK_OPTIONS}, got {self.sink!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------------------------------
# Capture
# ---------------------------------------------------------------------------------------------------

# id(attention module) -> the capture that records it. Looked up by the single registered attention
# function, so several models (or nested captures of one model) can be captured at the same time.
_TARGETS: dict[int, AttentionCapture] = {}


def _capture_attention_forward(module, query, key, value, attention_mask=None, **kwargs):
    """AttentionInterface function: plain transformers SDPA, plus the last query row where asked."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    # The very function (and arguments) "sdpa" dispatches to, so outputs are bit-identical to sdpa.
    out = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    capture = _TARGETS.get(id(module))
    if capture is not None and capture.recording:
        with torch.no_grad():
            capture._record(module.layer_idx, _last_row_probs(module, query, key, attention_mask, kwargs))
    return out


def _register_interfaces() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(CAPTURE_IMPLEMENTATION, _capture_attention_forward)
    # Without a mask function under the same name transformers builds no mask at all (no causal mask,
    # no padding mask) and does not warn.
    AttentionMaskInterface.register(CAPTURE_IMPLEMENTATION, sdpa_mask)


def _last_row_probs(module, query, key, attention_mask, kwargs) -> torch.Tensor:
    """softmax(q_last . K^T * scaling + mask_last_row) in float32: [batch, query heads, keys].

    Mirrors what sdpa_attention_forward hands to torch SDPA: a bool mask (True = attend), an additive
    float mask, or None with ``is_causal`` (upper-left aligned, i.e. the last of q queries sees the first
    q keys; equal to all keys unless a static cache is being prefilled) or without (all keys).
    """
    batch, q_heads, q_len, head_dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    if q_heads % kv_heads:
        raise ValueError(f"{q_heads} query heads are not a multiple of {kv_heads} key heads")
    groups = q_heads // kv_heads
    scaling = kwargs.get("scaling")
    if scaling is None:
        scaling = head_dim ** -0.5  # torch SDPA's default
    q_last = query[:, :, -1, :].float().reshape(batch, kv_heads, groups, head_dim)
    scores = torch.einsum("bhgd,bhkd->bhgk", q_last, key.float()).reshape(batch, q_heads, kv_len)
    scores = scores * scaling

    position_bias = kwargs.get("position_bias")
    if position_bias is not None:
        scores = scores + position_bias[..., -1, :].float()
    if attention_mask is not None:
        mask_row = attention_mask[..., -1, :]  # [batch|1, heads|1, keys]
        if mask_row.dim() == 2:
            mask_row = mask_row[:, None, :]
        if mask_row.dtype == torch.bool:
            scores = scores.masked_fill(~mask_row, float("-inf"))
        else:
            scores = scores + mask_row.float()
    else:
        is_causal = kwargs.get("is_causal")
        if is_causal is None:
            is_causal = getattr(module, "is_causal", True)
        if is_causal and 1 < q_len < kv_len:
            scores[..., q_len:] = float("-inf")
    probs = torch.softmax(scores, dim=-1)
    # A fully masked row (a batch entry that is all padding) is NaN after softmax; call it zero.
    return torch.nan_to_num(probs, nan=0.0)


def _all_configs(model) -> list:
    """Every config object that can steer attention dispatch: model.config, its sub-configs (recursively)
    and any config hanging off a submodule. Deduplicated by identity (configs are not hashable)."""
    found: dict[int, Any] = {}
    stack = [model.config] + [getattr(m, "config", None) for m in model.modules()]
    while stack:
        cfg = stack.pop()
        if cfg is None or id(cfg) in found or not hasattr(cfg, "_attn_implementation_internal"):
            continue
        found[id(cfg)] = cfg
        for sub_key in getattr(cfg, "sub_configs", {}) or {}:
            stack.append(getattr(cfg, sub_key, None))
    return list(found.values())


def decoder_attention_modules(model) -> dict[int, list[torch.nn.Module]]:
    """layer index -> text-decoder modules with that ``layer_idx`` (the attention module, and harmlessly
    the decoder layer itself where it also has one). Vision blocks have no ``layer_idx``; as a guard for
    other multimodal models, modules whose ``config`` is not the text config are left out when any
    module's is."""
    text_config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    with_idx = [(m.layer_idx, m) for m in model.modules() if isinstance(getattr(m, "layer_idx", None), int)]
    text = [(i, m) for i, m in with_idx if getattr(m, "config", None) is text_config]
    chosen = text or with_idx
    layers: dict[int, list[torch.nn.Module]] = {}
    for i, m in chosen:
        layers.setdefault(i, []).append(m)
    return dict(sorted(layers.items()))


def sliding_window_layers(model) -> set[int]:
    """Decoder layers that attend through a sliding window (Gemma 3's local layers). Their KV cache keeps
    only the window's keys, so a row captured there over a cached prefix misses the rest: a capture
    there is refused. Read off the text config's layer_types, which transformers' models follow."""
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    if not getattr(config, "sliding_window", None):
        return set()
    return {i for i, kind in enumerate(getattr(config, "layer_types", None) or []) if kind == "sliding_attention"}


class AttentionCapture:
    """The object ``capture_attention`` yields. See the module docstring for shapes and semantics."""

    def __init__(self, model, layers: Iterable[int] | str = "all", prefill_only: bool = False):
        self.model, self.prefill_only = model, prefill_only
        available = decoder_attention_modules(model)
        if not available:
            raise ValueError(f"{type(model).__name__} has no attention modules with a layer_idx to capture")
        sliding = sliding_window_layers(model)
        if isinstance(layers, str):
            if layers != "all":
                raise ValueError(f"layers must be an iterable of ints or 'all', got {layers!r}")
            wanted = [i for i in available if i not in sliding]
        else:
            wanted = sorted({int(i) for i in layers})
            n = len(available)
            wanted = sorted({i + n if i < 0 else i for i in wanted})  # -1 = last layer
            missing = [i for i in wanted if i not in available]
            if missing:
                raise ValueError(f"layers {missing} do not exist; the model has decoder layers "
                                 f"{min(available)}..{max(available)}")
            refused = [i for i in wanted if i in sliding]
            if refused:
                window = model.config.get_text_config().sliding_window
                allowed = [i for i in available if i not in sliding]
                raise MaiError(f"layers {refused} attend through a sliding window of {window} keys, so they cannot "
                               f"rank the whole reasoning; capture a global layer: {allowed}")
        self.layers: tuple[int, ...] = tuple(wanted)
        self._modules = [m for i in self.layers for m in available[i]]
        self._rows: dict[int, torch.Tensor] = {}
        self.forwards = 0  # number of top-level forwards seen inside the context
        self._saved_impl: list[tuple[Any, Any]] = []
        self._saved_targets: dict[int, AttentionCapture | None] = {}
        self._hook = None
        self._active = False

    # -- results -------------------------------------------------------------------------------------
    @property
    def rows_batched(self) -> dict[int, torch.Tensor]:
        """layer -> float32 [batch, heads, keys], from the most recent forward."""
        return dict(self._rows)

    @property
    def rows(self) -> dict[int, torch.Tensor]:
        """layer -> float32 [heads, keys] of batch entry 0, from the most recent forward."""
        return {i: r[0] for i, r in self._rows.items()}

    @property
    def recording(self) -> bool:
        """Whether the current forward is recorded (all of them, or only the first if prefill_only)."""
        return not (self.prefill_only and self.forwards > 1)

    def _record(self, layer: int, probs: torch.Tensor) -> None:
        self._rows[layer] = probs.detach()

    def _on_forward(self, module, args):
        self.forwards += 1
        if self.recording:
            self._rows.clear()

    # -- context -------------------------------------------------------------------------------------
    def __enter__(self) -> AttentionCapture:
        if self._active:
            raise RuntimeError("this capture is already active")
        _register_interfaces()
        configs = _all_configs(self.model)
        self._saved_impl = [(cfg, cfg._attn_implementation_internal) for cfg in configs]
        try:
            if hasattr(self.model, "set_attn_implementation"):
                self.model.set_attn_implementation(CAPTURE_IMPLEMENTATION)
            # set_attn_implementation skips (with a warning) models it thinks cannot switch, and may
            # miss configs that are not declared sub-configs: set the rest directly.
            for cfg in configs:
                if cfg._attn_implementation_internal != CAPTURE_IMPLEMENTATION:
                    cfg._attn_implementation_internal = CAPTURE_IMPLEMENTATION
            for m in self._modules:
                self._saved_targets[id(m)] = _TARGETS.get(id(m))
                _TARGETS[id(m)] = self
            self._hook = self.model.register_forward_pre_hook(self._on_forward)
        except BaseException:
            self._restore()
            raise
        self._active = True
        return self

    def __exit__(self, *exc) -> None:
        self._restore()
        self._active = False

    def _restore(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        for key, previous in self._saved_targets.items():
            if previous is None:
                _TARGETS.pop(key, None)
            else:
                _TARGETS[key] = previous
        self._saved_targets = {}
        for cfg, impl in self._saved_impl:
            cfg._attn_implementation_internal = impl
        self._saved_impl = []


def capture_attention(model, layers: Iterable[int] | str = "all", prefill_only: bool = False) -> AttentionCapture:
    """Context manager recording the last query row's attention at the given decoder layers.

    ``layers``: an iterable of layer indices (negative ones count from the end) or "all".
    ``prefill_only``: record the first forward inside the context only (a generate's prefill).

    >>> with capture_attention(model, [12]) as cap:
    ...     model(input_ids=ids, attention_mask=mask)
    >>> cap.rows[12].shape          # [heads, keys], float32, batch entry 0
    >>> cap.rows_batched[12].shape  # [batch, heads, keys]
    """
    return AttentionCapture(model, layers, prefill_only)


# ---------------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------------


def _check_delta(delta: float) -> None:
    if not (isinstance(delta, (int, float)) and 0.0 < float(delta) <= 1.0):
        raise ValueError(f"delta must be in (0, 1], got {delta!r}")


def _as_1d_float64(weights) -> torch.Tensor:
    if isinstance(weights, torch.Tensor):
        w = weights.detach().to(device="cpu", dtype=torch.float64)
    else:  # a plain sequence: read in double precision (torch.as_tensor would round to float32)
        w = torch.as_tensor(weights, dtype=torch.float64)
    if w.dim() != 1:
        raise ValueError(f"weights must be 1-D, got shape {tuple(w.shape)}")
    if torch.isnan(w).any() or torch.isinf(w).any():
        raise ValueError("weights contain NaN or inf")
    if (w < 0).any():
        raise ValueError("weights must be non-negative")
    return w


def select_by_mass(weights, delta: float) -> list[int]:
    """Indices of the smallest set of candidates, taken highest weight first, whose weights reach at least
    ``delta`` of the candidates' total; returned in ascending index order.

    * Order of taking: weight descending, ties by lower index first; so among equally small sets the one
      with the earliest positions wins.
    * "Reach" is ``cumulative >= delta * total`` up to a relative rounding slack of ``MASS_RTOL``.
    * ``delta = 1``: every candidate with a positive weight (zero-weight candidates never add mass).
    * All weights zero (no signal): every candidate is returned, i.e. sparse transfer degrades to dense.
    * Empty input: ``[]``. Negative, NaN or inf weights raise ``ValueError``.
    """
    _check_delta(delta)
    w = _as_1d_float64(weights)
    n = w.numel()
    if n == 0:
        return []
    # Stable sort: equal weights keep ascending index order.
    order = torch.sort(w, descending=True, stable=True).indices
    sorted_w = w[order]
    cum = torch.cumsum(sorted_w, 0)
    total = cum[-1].item()
    if total <= 0.0:
        return list(range(n))
    threshold = float(delta) * total * (1.0 - MASS_RTOL)
    k = int(torch.searchsorted(cum, torch.tensor([threshold], dtype=torch.float64)).item()) + 1
    k = min(k, n)
    return sorted(order[:k].tolist())


def mass_fraction(weights, delta: float) -> float:
    """Fraction of candidates needed to hold ``delta`` of the mass: len(select_by_mass)/len(weights).
    0.0 for no candidates."""
    w = _as_1d_float64(weights)
    if w.numel() == 0:
        return 0.0
    return len(select_by_mass(w, delta)) / w.numel()


def reasoning_weights(row: torch.Tensor, reasoning_positions: Sequence[int], heads: str = "mean",
                      sink: str = "keep") -> torch.Tensor:
    """One weight per reasoning token from one captured row.

    ``row``: ``[heads, keys]`` (``capture.rows[layer]``), or ``[keys]`` if already reduced over heads.
    ``reasoning_positions``: key positions of the reasoning tokens (in the sequence the row was captured
    on, padding included); they are the only candidates.
    ``heads``: "mean" (default) or "max" over heads.
    ``sink``: "keep" (as is); "drop_first": the first candidate (the first reasoning token) gets weight
    0, so it is never selected while others carry mass (key 0, the global sink, is never a candidate:
    see the module doc); "renormalize": the
    candidates' weights are divided by their sum (select_by_mass is scale invariant, so this only matters
    to consumers of the weights themselves).
    Returns a float32 CPU tensor aligned with ``reasoning_positions``.
    """
    if heads not in HEAD_REDUCTIONS:
        raise ValueError(f"heads must be one of {HEAD_REDUCTIONS}, got {heads!r}")
    if sink not in SINK_OPTIONS:
        raise ValueError(f"sink must be one of {SINK_OPTIONS}, got {sink!r}")
    row = torch.as_tensor(row).detach().float().cpu()
    if row.dim() == 1:
        row = row[None]
    if row.dim() != 2:
        raise ValueError(f"row must be [heads, keys] or [keys], got shape {tuple(row.shape)}")
    positions = torch.as_tensor(list(reasoning_positions), dtype=torch.long)
    if positions.numel() == 0:
        return torch.zeros(0, dtype=torch.float32)
    keys = row.shape[1]
    if positions.min() < 0 or positions.max() >= keys:
        raise ValueError(f"reasoning positions must lie in [0, {keys}), got {positions.min().item()}.."
                         f"{positions.max().item()}")
    per_head = row[:, positions]
    weights = per_head.mean(0) if heads == "mean" else per_head.amax(0)
    if sink == "drop_first":
        weights[0] = 0.0
    elif sink == "renormalize":
        total = weights.sum()
        if total > 0:
            weights = weights / total
    return weights


def _number_part(piece: str) -> str:
    """'digit' for a token of digits alone, 'mark' for a lone '.' or ',' (inside a number when digits flank
    it), '' for anything else."""
    piece = piece.strip()
    if piece.isdigit() and piece.isascii():
        return "digit"
    return "mark" if piece in (".", ",") else ""


def whole_numbers(tokenizer, token_ids: Sequence[int], kept: Iterable[int]) -> list[int]:
    """``kept`` (indices into ``token_ids``) grown so that a kept token of a number brings the whole number:
    the run of digit tokens around it, with the '.' or ',' between two digit tokens ("1,250", "3.5"), and a
    whitespace-only token just before it (Qwen's tokenizer splits " 25" into " ", "2", "5"), so that the number
    stays a word of its own in the sparse text. A number is what a tokenizer that splits digits one per token
    (Qwen2/Qwen3's) leaves in separate tokens; the selection itself is unchanged, only widened. Sorted, without
    repeats."""
    pieces = [tokenizer.decode([int(t)]) for t in token_ids]
    parts = [_number_part(p) for p in pieces]
    n = len(parts)

    def in_number(i: int) -> bool:
        if parts[i] == "digit":
            return True
        return parts[i] == "mark" and 0 < i < n - 1 and parts[i - 1] == parts[i + 1] == "digit"

    out = set(int(i) for i in kept)
    for i in list(out):
        if not in_number(i):
            continue
        lo, hi = i, i
        while lo > 0 and in_number(lo - 1):
            lo -= 1
        while hi < n - 1 and in_number(hi + 1):
            hi += 1
        if lo > 0 and pieces[lo - 1] and not pieces[lo - 1].strip():
            lo -= 1
        out.update(range(lo, hi + 1))
    return sorted(out)


def sparse_text(tokenizer, token_ids: Sequence[int], kept: Iterable[int], **decode_kwargs) -> str:
    """The kept reasoning tokens as text: ``tokenizer.decode`` of the kept ids in their original order.

    ``token_ids``: the reasoning token ids (aligned with the candidates); ``kept``: indices into it, as
    returned by ``select_by_mass``. Tokens are concatenated exactly as the tokenizer decodes the shortened
    id list (no separator is inserted where tokens were dropped, so a dropped space token merges words;
    a byte-level token cut from its neighbours may decode to U+FFFD). ``decode_kwargs`` go to decode.
    """
    ids = list(token_ids)
    kept_ids = [int(ids[i]) for i in sorted(set(int(i) for i in kept))]
    return tokenizer.decode(kept_ids, **decode_kwargs)


__all__ = [
    "CAPTURE_IMPLEMENTATION",
    "HEAD_REDUCTIONS",
    "MASS_RTOL",
    "SINK_OPTIONS",
    "SPANS",
    "AttentionCapture",
    "SparseOptions",
    "capture_attention",
    "decoder_attention_modules",
    "mass_fraction",
    "reasoning_weights",
    "select_by_mass",
    "sparse_text",
    "whole_numbers",
]
