"""Tests for mai.attention: last-row attention capture, mass selection, reasoning weights.

Captured rows are checked against transformers' eager attention (output_attentions=True, row -1) on
tiny random-weight models: Qwen3-VL (text only and with an image) and a Llama with GQA, batch 1 and a
left-padded batch of 2. Selection is checked against a brute-force enumeration of subsets.
"""
from __future__ import annotations

import itertools
import math
import random

import pytest
import torch

from mai.attention import (
    CAPTURE_IMPLEMENTATION,
    MASS_RTOL,
    SparseOptions,
    _last_row_probs,
    capture_attention,
    decoder_attention_modules,
    mass_fraction,
    reasoning_weights,
    select_by_mass,
    sparse_text,
)
from mai.families.qwen3_vl import IMAGE_TOKEN_ID, VISION_END_ID, VISION_START_ID
from mai.models import architecture_config

TOL = 1e-4

# ---------------------------------------------------------------------------------------------------
# Fixtures: tiny models and inputs
# ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def qwen():
    from transformers import Qwen3VLForConditionalGeneration

    torch.manual_seed(0)
    config = architecture_config("tiny-small")
    config._attn_implementation = "sdpa"
    return Qwen3VLForConditionalGeneration(config).eval()


@pytest.fixture(scope="module")
def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    config._attn_implementation = "sdpa"
    return LlamaForCausalLM(config).eval()


def _text_batch(batch: int, length: int, vocab: int, pad: bool, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (batch, length), generator=g)
    mask = torch.ones_like(ids)
    if pad:  # left padding of the second sequence
        mask[1, :4] = 0
        ids[1, :4] = 0
    return dict(input_ids=ids, attention_mask=mask)


def _image_batch(batch: int, pad: bool, seed: int = 2):
    """image_grid_thw [1, 4, 4]: 16 patches of 3*2*16*16 values -> 2x2 merge -> 4 image tokens."""
    g = torch.Generator().manual_seed(seed)
    prefix = [100, 101, VISION_START_ID]
    suffix = [VISION_END_ID, 200, 201, 202, 203, 204]
    row = prefix + [IMAGE_TOKEN_ID] * 4 + suffix
    ids = torch.tensor([row] * batch)
    mask = torch.ones_like(ids)
    if pad:
        ids = torch.cat([torch.zeros(batch, 3, dtype=torch.long), ids], 1)
        mask = torch.cat([torch.zeros(batch, 3, dtype=torch.long), mask], 1)
        ids[0, :3] = torch.tensor([7, 8, 9])  # only the second entry is padded
        mask[0, :3] = 1
    return dict(input_ids=ids, attention_mask=mask,
                mm_token_type_ids=(ids == IMAGE_TOKEN_ID).long(),
                pixel_values=torch.randn(16 * batch, 3 * 2 * 16 * 16, generator=g),
                image_grid_thw=torch.tensor([[1, 4, 4]] * batch))


def _eager_last_rows(model, inputs) -> list[torch.Tensor]:
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(**inputs, output_attentions=True)
    finally:
        model.set_attn_implementation("sdpa")
    return [a[:, :, -1, :].float() for a in out.attentions]


def _captured(model, inputs, layers="all"):
    with torch.no_grad(), capture_attention(model, layers) as cap:
        out = model(**inputs)
    return cap, out


def _impls(model):
    cfg = model.config
    subs = [getattr(cfg, k) for k in getattr(cfg, "sub_configs", {})]
    return [cfg._attn_implementation] + [s._attn_implementation for s in subs]


# ---------------------------------------------------------------------------------------------------
# Capture matches eager's last row
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch,pad", [(1, False), (2, True)])
def test_qwen_text_rows_match_eager(qwen, batch, pad):
    inputs = _text_batch(batch, 12, 1000, pad)
    eager = _eager_last_rows(qwen, inputs)
    cap, _ = _captured(qwen, inputs)
    assert sorted(cap.rows_batched) == list(range(len(eager)))
    for layer, ref in enumerate(eager):
        got = cap.rows_batched[layer]
        assert got.dtype == torch.float32 and got.shape == ref.shape
        torch.testing.assert_close(got, ref, atol=TOL, rtol=0)
        torch.testing.assert_close(cap.rows[layer], ref[0], atol=TOL, rtol=0)
        torch.testing.assert_close(got.sum(-1), torch.ones(got.shape[:2]), atol=1e-5, rtol=0)
    if pad:  # padded keys get no attention
        assert torch.all(cap.rows_batched[0][1, :, :4] == 0)


@pytest.mark.parametrize("batch,pad", [(1, False), (2, True)])
def test_qwen_image_rows_match_eager(qwen, batch, pad):
    inputs = _image_batch(batch, pad)
    eager = _eager_last_rows(qwen, inputs)
    assert len(eager) == qwen.config.text_config.num_hidden_layers  # text layers only
    cap, _ = _captured(qwen, inputs)
    for layer, ref in enumerate(eager):
        assert cap.rows_batched[layer].shape[-1] == inputs["input_ids"].shape[1]
        torch.testing.assert_close(cap.rows_batched[layer], ref, atol=TOL, rtol=0)


@pytest.mark.parametrize("batch,pad", [(1, False), (2, True)])
def test_llama_gqa_rows_match_eager(llama, batch, pad):
    inputs = _text_batch(batch, 11, 256, pad)
    eager = _eager_last_rows(llama, inputs)
    cap, _ = _captured(llama, inputs)
    assert sorted(cap.rows) == [0, 1, 2]
    for layer, ref in enumerate(eager):
        assert ref.shape[1] == 4  # query heads, not the 2 key heads
        torch.testing.assert_close(cap.rows_batched[layer], ref, atol=TOL, rtol=0)


def test_decode_step_with_cache_matches_full_forward(llama):
    """With a KV cache the last row of a 1-token step equals the full forward's last row."""
    inputs = _text_batch(1, 10, 256, False)
    full = _captured(llama, inputs, [1])[0].rows[1]
    with torch.no_grad():
        prefix = llama(input_ids=inputs["input_ids"][:, :-1], use_cache=True)
        with capture_attention(llama, [1]) as cap:
            llama(input_ids=inputs["input_ids"][:, -1:], cache=prefix.cache,
                  use_cache=True)
    torch.testing.assert_close(cap.rows[1], full, atol=TOL, rtol=0)


def test_cached_prefill_of_several_tokens_matches_full_forward(llama):
    """A prefill of several new tokens on a KV cache (the second stage's suffix): its last row covers
    every key, cached ones included, and equals the full forward's last row."""
    inputs = _text_batch(1, 14, 256, False)
    full = _captured(llama, inputs, [1])[0].rows[1]
    with torch.no_grad():
        prefix = llama(input_ids=inputs["input_ids"][:, :9], use_cache=True)
        with capture_attention(llama, [1]) as cap:
            llama(input_ids=inputs["input_ids"][:, 9:], cache=prefix.cache, use_cache=True)
    assert cap.rows[1].shape[-1] == 14
    torch.testing.assert_close(cap.rows[1], full, atol=TOL, rtol=0)


def test_prefill_only_keeps_the_prefill_row_of_a_generate(llama):
    """prefill_only: the rows of a generate are its prefill's (the prompt's last row), not the last decode
    step's, and decode steps compute no row."""
    inputs = _text_batch(1, 10, 256, False)
    want = _captured(llama, inputs, [1])[0].rows[1]
    with torch.no_grad(), capture_attention(llama, [1], prefill_only=True) as cap:
        llama.generate(**inputs, max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)
    assert cap.forwards == 4 and not cap.recording  # prefill + 3 decode steps, only the first recorded
    assert cap.rows[1].shape[-1] == 10
    torch.testing.assert_close(cap.rows[1], want, atol=TOL, rtol=0)
    with torch.no_grad(), capture_attention(llama, [1]) as every:
        llama.generate(**inputs, max_new_tokens=4, min_new_tokens=4, do_sample=False, pad_token_id=0)
    assert every.rows[1].shape[-1] == 13  # without it: the last decode step's row


# ---------------------------------------------------------------------------------------------------
# Outputs unchanged, implementation restored, layer selection
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("image", [False, True])
def test_outputs_bit_identical_and_restored(qwen, image):
    inputs = _image_batch(2, True) if image else _text_batch(2, 9, 1000, True)
    before = _impls(qwen)
    assert before == ["sdpa"] * len(before)
    with torch.no_grad():
        plain = qwen(**inputs).logits
        with capture_attention(qwen, [0, 2]) as cap:
            assert set(_impls(qwen)) == {CAPTURE_IMPLEMENTATION}
            captured = qwen(**inputs).logits
    assert torch.equal(plain, captured)
    assert _impls(qwen) == before
    assert sorted(cap.rows) == [0, 2]


def test_restores_eager_and_on_error(llama):
    llama.set_attn_implementation("eager")
    try:
        with pytest.raises(RuntimeError, match="boom"):
            with capture_attention(llama, [0]):
                assert llama.config._attn_implementation == CAPTURE_IMPLEMENTATION
                raise RuntimeError("boom")
        assert llama.config._attn_implementation == "eager"
    finally:
        llama.set_attn_implementation("sdpa")
    assert llama.config._attn_implementation == "sdpa"


def test_only_requested_layers_and_no_vision(qwen):
    modules = decoder_attention_modules(qwen)
    assert sorted(modules) == list(range(qwen.config.text_config.num_hidden_layers))
    vision = set(map(id, qwen.model.visual.modules()))
    assert not any(id(m) in vision for ms in modules.values() for m in ms)

    inputs = _image_batch(1, False)
    cap, _ = _captured(qwen, inputs, [1, -1])
    assert sorted(cap.rows) == [1, 3]  # -1 is the last layer
    # all rows are text rows (keys = text length), none has the 16 vision patches as keys
    assert all(r.shape == (4, inputs["input_ids"].shape[1]) for r in cap.rows.values())

    with pytest.raises(ValueError, match="do not exist"):
        capture_attention(qwen, [7])


def test_rows_hold_latest_forward(llama):
    a = _text_batch(1, 10, 256, False, seed=3)
    b = _text_batch(1, 6, 256, False, seed=4)
    with torch.no_grad(), capture_attention(llama, [0, 2]) as cap:
        llama(**a)
        first = cap.rows[2].clone()
        llama(**b)
        assert cap.forwards == 2
        assert cap.rows[2].shape == (4, 6)
    fresh, _ = _captured(llama, b, [2])
    torch.testing.assert_close(cap.rows[2], fresh.rows[2], atol=0, rtol=0)
    assert first.shape == (4, 10)


def test_two_models_captured_at_once(qwen, llama):
    q_in, l_in = _text_batch(1, 8, 1000, False), _text_batch(1, 9, 256, False)
    with torch.no_grad(), capture_attention(qwen, [0]) as cq, capture_attention(llama, [1]) as cl:
        qwen(**q_in)
        llama(**l_in)
    assert sorted(cq.rows) == [0] and cq.rows[0].shape[-1] == 8
    assert sorted(cl.rows) == [1] and cl.rows[1].shape[-1] == 9
    assert qwen.config._attn_implementation == llama.config._attn_implementation == "sdpa"


# ---------------------------------------------------------------------------------------------------
# The last-row kernel on every mask form sdpa_mask / sdpa_attention_forward can hand over
# ---------------------------------------------------------------------------------------------------


class _Module(torch.nn.Module):
    def __init__(self, groups, causal=True):
        super().__init__()
        self.num_key_value_groups = groups
        self.is_causal = causal


def _reference(q, k, scaling, additive):
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    scores = (q @ k.transpose(-1, -2)) * scaling + additive
    return torch.softmax(scores, -1)[:, :, -1, :]


@pytest.mark.parametrize("form", ["bool", "float", "none_causal", "none_static_prefill",
                                  "none_noncausal", "decode"])
def test_last_row_mask_forms(form):
    g = torch.Generator().manual_seed(5)
    b, hq, hkv, d = 2, 4, 2, 8
    q_len, kv_len = (1, 9) if form == "decode" else (6, 9 if form == "none_static_prefill" else 6)
    q, k = torch.randn(b, hq, q_len, d, generator=g), torch.randn(b, hkv, kv_len, d, generator=g)
    allowed = torch.ones(b, 1, q_len, kv_len, dtype=torch.bool)
    if form in ("bool", "float", "none_causal", "none_static_prefill"):
        allowed &= torch.ones(q_len, kv_len, dtype=torch.bool).tril()
    if form in ("bool", "float"):
        allowed[1, :, :, :2] = False  # left padding
    additive = torch.zeros(b, 1, q_len, kv_len).masked_fill(~allowed, float("-inf"))
    mask = {"bool": allowed, "float": torch.zeros(b, 1, q_len, kv_len).masked_fill(
        ~allowed, torch.finfo(torch.float32).min)}.get(form)
    module = _Module(hq // hkv, causal=form != "none_noncausal")
    got = _last_row_probs(module, q, k, mask, {"scaling": 0.3})
    torch.testing.assert_close(got, _reference(q, k, 0.3, additive), atol=1e-6, rtol=0)


# ---------------------------------------------------------------------------------------------------
# select_by_mass
# ---------------------------------------------------------------------------------------------------


def _brute_force(weights, delta):
    n = len(weights)
    total = math.fsum(weights)
    if n == 0:
        return []
    if total <= 0:
        return list(range(n))
    threshold = delta * total * (1 - MASS_RTOL)
    for k in range(1, n + 1):
        if any(math.fsum(weights[i] for i in s) >= threshold for s in itertools.combinations(range(n), k)):
            greedy = sorted(range(n), key=lambda i: (-weights[i], i))[:k]
            return sorted(greedy)
    raise AssertionError("unreachable")


def test_select_by_mass_brute_force():
    rng = random.Random(0)
    deltas = [0.1, 0.25, 0.5, 0.8, 0.9, 0.999, 1.0]
    for case in range(400):
        n = rng.randint(1, 8)
        kind = case % 4
        if kind == 0:
            w = [rng.random() for _ in range(n)]
        elif kind == 1:  # many ties
            w = [float(rng.randint(0, 3)) for _ in range(n)]
        elif kind == 2:  # ties on a probability scale, some zeros
            w = [rng.choice([0.0, 0.1, 0.2, 0.4]) for _ in range(n)]
        else:  # one dominant sink
            w = [rng.random() * 0.01 for _ in range(n)]
            w[rng.randrange(n)] = 5.0
        for delta in deltas:
            got = select_by_mass(torch.tensor(w, dtype=torch.float64), delta)
            assert got == _brute_force(w, delta), (w, delta, got)
            assert got == select_by_mass(w, delta)  # plain sequences too


def test_select_by_mass_definitions():
    assert select_by_mass([], 0.8) == []
    assert select_by_mass([0.0, 0.0, 0.0], 0.8) == [0, 1, 2]  # no signal: keep everything
    assert select_by_mass([0.5, 0.0, 0.5], 1.0) == [0, 2]  # zeros never add mass
    assert select_by_mass([0.4, 0.2, 0.4], 0.8) == [0, 2]  # exact hit despite rounding
    assert select_by_mass([0.1, 0.3, 0.3, 0.3], 0.5) == [1, 2]  # ties: lower position first
    assert select_by_mass([3.0, 1.0], 0.75) == select_by_mass([0.3, 0.1], 0.75) == [0]  # scale invariant
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            select_by_mass([1.0], bad)
    with pytest.raises(ValueError):
        select_by_mass([1.0, -0.1], 0.5)
    with pytest.raises(ValueError):
        select_by_mass([[1.0]], 0.5)


def test_mass_fraction():
    assert mass_fraction([0.7, 0.1, 0.1, 0.1], 0.8) == 0.5
    assert mass_fraction([1.0] * 10, 0.8) == 0.8
    assert mass_fraction([], 0.8) == 0.0


# ---------------------------------------------------------------------------------------------------
# reasoning_weights, sparse_text, options
# ---------------------------------------------------------------------------------------------------


def test_reasoning_weights_options():
    row = torch.tensor([[0.5, 0.1, 0.2, 0.1, 0.1],
                        [0.1, 0.5, 0.0, 0.3, 0.1]])
    pos = [0, 1, 3]
    torch.testing.assert_close(reasoning_weights(row, pos), torch.tensor([0.3, 0.3, 0.2]))
    torch.testing.assert_close(reasoning_weights(row, pos, heads="max"), torch.tensor([0.5, 0.5, 0.3]))
    torch.testing.assert_close(reasoning_weights(row, pos, sink="drop_first"), torch.tensor([0.0, 0.3, 0.2]))
    torch.testing.assert_close(reasoning_weights(row, pos, sink="renormalize"),
                               torch.tensor([0.375, 0.375, 0.25]))
    # drop_first acts on the first candidate (the first reasoning token), wherever it is: key 0, the
    # global sink, is a template token and never a candidate in the cascade
    torch.testing.assert_close(reasoning_weights(row, [2, 4], sink="drop_first"), torch.tensor([0.0, 0.1]))
    assert reasoning_weights(row, [], sink="drop_first").numel() == 0
    # a 1-D row is one head
    torch.testing.assert_close(reasoning_weights(row[0], pos), torch.tensor([0.5, 0.1, 0.1]))
    assert reasoning_weights(row, []).numel() == 0
    assert select_by_mass(reasoning_weights(row, pos, sink="drop_first"), 0.5) == [1]
    with pytest.raises(ValueError):
        reasoning_weights(row, [5])
    with pytest.raises(ValueError):
        reasoning_weights(row, pos, heads="sum")
    with pytest.raises(ValueError):
        reasoning_weights(row, pos, sink="first")


def test_end_to_end_on_captured_row(qwen):
    inputs = _text_batch(1, 20, 1000, False)
    cap, _ = _captured(qwen, inputs, [2])
    reasoning = list(range(8, 18))
    w = reasoning_weights(cap.rows[2], reasoning)
    kept = select_by_mass(w, 0.8)
    assert 1 <= len(kept) <= len(reasoning) and kept == sorted(kept)
    assert w[kept].sum() >= 0.8 * w.sum() * (1 - MASS_RTOL)
    assert mass_fraction(w, 0.8) == len(kept) / len(reasoning)


class _FakeTokenizer:
    def decode(self, ids, **kwargs):
        return "|".join(map(str, ids)) + ("!" if kwargs.get("skip_special_tokens") else "")


def test_sparse_text_keeps_order():
    tok = _FakeTokenizer()
    assert sparse_text(tok, [10, 11, 12, 13], [3, 0, 2]) == "10|12|13"
    assert sparse_text(tok, [10, 11], [1, 1]) == "11"
    assert sparse_text(tok, [10, 11], [], skip_special_tokens=True) == "!"


def test_sparse_options():
    assert SparseOptions(layer=12).to_dict() == dict(layer=12, delta=0.8, heads="mean", sink="keep", span="token")
    with pytest.raises(ValueError):
        SparseOptions(layer=1, delta=0.0)
    with pytest.raises(ValueError):
        SparseOptions(layer=1, sink="nope")
