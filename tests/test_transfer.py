"""Sparse transfer's attention, from wherever it is captured (the second stage's cached prefill, one
forward on the kept cache, a fresh full forward), equals transformers' eager attention over the same
sequence, whether the first stage stopped at the length limit or at a stop token."""
import pytest
import torch

from mai.attention import SparseOptions
from mai.generation import HFGenerator, Request
from mai.transfer import (attention_over_reasoning, capture_on_cache, from_second_stage, reasoning_attention,
                          _sequence)

POST = "\nAnswer the question using a single word or phrase."
LAYER = 2



@pytest.fixture(params=["length", "eos"])
def first_stage(request, tiny_small, chart_image, monkeypatch):
    """A Think first stage with its cache, ended at the length limit or (made to) end at a stop token."""
    gen = HFGenerator(tiny_small)
    think = Request("Which bar is tallest?", [chart_image], "think", POST, 10, keep_cache=True)
    if request.param == "eos":
        probe = gen.generate(think)
        token = int(probe.sequence[0, probe.input_tokens + 5])
        monkeypatch.setattr(tiny_small.model.generation_config, "eos_token_id", [*tiny_small.eos_token_ids, token])
    first = gen.generate(think)
    assert first.stopped == (request.param == "eos")
    assert first.cache.get_seq_length() == first.input_tokens + first.output_tokens - 1
    return gen, think, first


def test_second_stage_prefill_rows_equal_eager(first_stage, eager_row):
    gen, think, first = first_stage
    ids, reasoning = _sequence(gen, first, POST, "answer")
    want = eager_row(gen.loaded, first, ids, LAYER)
    second = gen.generate(Request(think.question, think.images, "answer", POST, 3, reuse=first, capture=(LAYER,)))
    att = from_second_stage(gen, first, second)
    assert att.source == "second stage" and att.seconds == 0.0 and att.input_tokens == ids.shape[1]
    assert att.reasoning_ids == reasoning and len(reasoning) == first.content_tokens
    torch.testing.assert_close(att.rows[LAYER], want, atol=1e-4, rtol=0)
    # the capture changed nothing the second stage generates
    plain = gen.generate(think)
    again = gen.generate(Request(think.question, think.images, "answer", POST, 3, reuse=plain))
    assert again.text == second.text and again.attention is None


@pytest.mark.parametrize("query", ["answer", "reasoning_end"])
def test_forward_on_the_kept_cache_equals_eager(first_stage, query, eager_row):
    gen, think, first = first_stage
    ids, reasoning = _sequence(gen, first, POST, query)
    want = eager_row(gen.loaded, first, ids, LAYER)
    reference = attention_over_reasoning(gen, first, POST, [LAYER], query)  # a fresh full forward
    att = capture_on_cache(gen, first, POST, [LAYER], query)
    assert att.source == "cache" and att.input_tokens == ids.shape[1] == reference.input_tokens
    fed = att.input_tokens - att.cached_tokens
    assert fed == (1 if query == "reasoning_end" else ids.shape[1] - first.input_tokens - len(reasoning)
                   + (not first.stopped))  # the suffix, plus a last reasoning token never fed
    torch.testing.assert_close(att.rows[LAYER], want, atol=1e-4, rtol=0)
    torch.testing.assert_close(reference.rows[LAYER], want, atol=1e-4, rtol=0)


def test_reasoning_end_does_not_select_its_own_query_token(first_stage):
    """The last reasoning token is the query of reasoning_end: it attends to itself, and must not be a
    candidate (it would be kept for its self-attention alone)."""
    gen, _, first = first_stage
    att = capture_on_cache(gen, first, POST, [LAYER], "reasoning_end")
    n = len(att.reasoning_ids)
    assert att.candidates == n - 1 and list(att.positions) == list(range(att.start, att.start + n - 1))
    options = SparseOptions(layer=LAYER, delta=1.0)
    assert n - 1 not in att.kept(options)
    # the same row with the last token as a candidate would keep it (it holds mass on itself)
    assert att.rows[LAYER].mean(0)[att.start + n - 1] > 0


def test_capture_after_a_second_stage_cuts_the_cache_back(first_stage, eager_row):
    """verify=answer then query=reasoning_end: the second stage has extended the cache; the capture cuts
    it back to the reasoning and feeds only the last reasoning token."""
    gen, think, first = first_stage
    ids, _ = _sequence(gen, first, POST, "reasoning_end")
    want = eager_row(gen.loaded, first, ids, LAYER)
    second = gen.generate(Request(think.question, think.images, "answer", POST, 3, reuse=first))
    att = reasoning_attention(gen, first, POST, [LAYER], "reasoning_end", second)
    assert att.source == "cache" and att.input_tokens - att.cached_tokens == 1
    torch.testing.assert_close(att.rows[LAYER], want, atol=1e-4, rtol=0)


def test_number_aware_span_keeps_whole_numbers():
    """span="number" widens the paper's selection to whole numbers, on the real Qwen tokenizer, which splits
    numbers one digit a token; span="token" (the paper's) keeps exactly what the mass selects."""
    from mai.attention import whole_numbers
    from mai.tokenizer_sources import family_tokenizer

    tok = family_tokenizer("qwen2_5_vl")  # Qwen2.5's vocabulary, as the real pair's
    ids = tok("So 1,250 + 3.5 = 1253.5 and 20 - 7.", add_special_tokens=False).input_ids
    pieces = [tok.decode([i]) for i in ids]
    digit = pieces.index("5")  # the "5" of "1,250"
    kept = whole_numbers(tok, ids, [digit])
    assert tok.decode([ids[i] for i in kept]) == " 1,250"
    seven = len(pieces) - 2  # "7", whose "." after it ends the sentence, not a number
    assert tok.decode([ids[i] for i in whole_numbers(tok, ids, [seven])]) == " 7"
    assert whole_numbers(tok, ids, [0]) == [0]  # a word brings nothing
    with pytest.raises(ValueError, match="span"):
        SparseOptions(layer=0, span="word")
