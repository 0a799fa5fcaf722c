"""The compiled decode path (mai.compiled_decode) gives the eager path's greedy tokens, batch 1 and batched, and a
kept first stage's second stage is the eager one's; on the tiny fp32 models the tokens are equal, not close.

One module-scoped pair of generators per family: each compiles once per (batch size, cache length), which is
what these tests cost (tens of seconds each on two cores)."""
import pytest
import torch

from mai.compiled_decode import MIN_LENGTH, cache_length
from mai.generation import HFGenerator, Request

POST = "\nAnswer the question using a single word or phrase."
QUESTIONS = ["How many legs does a spider have?", "Is the sky green?", "Name a prime number larger than ten.",
             "What is the capital of France, and why is it famous?"]


@pytest.fixture(scope="module")
def tiny_text():
    from mai.models import load_model

    return load_model("tiny-qwen2-large", device="cpu", dtype="float32")


def test_cache_length_is_a_power_of_two_from_the_minimum():
    assert [cache_length(n) for n in (1, MIN_LENGTH, MIN_LENGTH + 1, 3000)] == [MIN_LENGTH, MIN_LENGTH,
                                                                              2 * MIN_LENGTH, 4096]
    assert MIN_LENGTH & (MIN_LENGTH - 1) == 0


def test_unknown_decode_is_refused(tiny_text):
    with pytest.raises(ValueError, match="decode must be one of"):
        HFGenerator(tiny_text, decode="fast")


def test_compiled_equals_eager_batch_1_and_batched_rows_stay_eager(tiny_text):
    eager, compiled = HFGenerator(tiny_text), HFGenerator(tiny_text, decode="compiled")
    requests = [Request(q, [], "think", POST, max_new_tokens=24) for q in QUESTIONS]
    want = [eager.generate(r) for r in requests]
    assert len({tuple(w.output_ids) for w in want}) > 1, "a degenerate model would make this test vacuous"
    got = [compiled.generate(r) for r in requests[:2]]
    assert [g.output_ids for g in got] == [w.output_ids for w in want[:2]]
    assert all(g.output_tokens == 24 and not g.stopped for g in got)
    batched = compiled.generate_batch(requests)
    assert [b.output_ids for b in batched] == [w.output_ids for w in want]
    assert [b.batch_size for b in batched] == [4] * 4


def test_compiled_first_stage_is_continued_as_the_eager_one(tiny_text):
    """A kept first stage (MAI's Think) on the compiled path hands its second stage the same cache: the answer
    stage's tokens equal those after an eager first stage, batch 1 and as a row of a batch."""
    eager, compiled = HFGenerator(tiny_text), HFGenerator(tiny_text, decode="compiled")
    think = [Request(q, [], "think", POST, max_new_tokens=16, keep_cache=True) for q in QUESTIONS[:2]]

    def answers(gen, firsts):
        return [gen.generate(Request(r.question, [], "answer", POST, 8, reuse=f)).output_ids
                for r, f in zip(think, firsts)]

    want = answers(eager, [eager.generate(r) for r in think])
    firsts = [compiled.generate(r) for r in think]
    assert all(isinstance(f.cache, type(eager.generate(think[0]).cache)) for f in firsts)
    assert all(f.cache.get_seq_length() == f.input_tokens + f.output_tokens - 1 for f in firsts)
    assert answers(eager, firsts) == want
    assert answers(eager, compiled.generate_batch(think)) == want


def test_captured_call_decodes_eagerly_and_equal(tiny_text):
    """A call that captures attention keeps its hooks on every forward, so it runs on the eager path: the same
    tokens and the same captured row as an eager generator's."""
    eager, compiled = HFGenerator(tiny_text), HFGenerator(tiny_text, decode="compiled")
    request = Request(QUESTIONS[0], [], "simple", POST, max_new_tokens=6, capture=(1,))
    want, got = eager.generate(request), compiled.generate(request)
    assert got.output_ids == want.output_ids
    assert torch.equal(got.attention[1], want.attention[1])


def test_compiled_equals_eager_on_qwen3_vl_with_an_image(tiny_small, chart_image):
    """The paper's family: the decode steps after an image prefill (M-RoPE offsets) on the compiled path."""
    eager, compiled = HFGenerator(tiny_small), HFGenerator(tiny_small, decode="compiled")
    request = Request("Which bar is the tallest?", [chart_image], "think", POST, max_new_tokens=12)
    want, got = eager.generate(request), compiled.generate(request)
    assert len(set(want.output_ids)) > 1
    assert got.output_ids == want.output_ids


def test_a_batch_of_one_stays_eager(tiny_text):
    """generate_batch never compiles, a chunk of one included: a stage-major run computes what it did before, and
    holds no compiled graph (each holds its own copy of the weights)."""
    from mai.compiled_decode import static_caches

    compiled = HFGenerator(tiny_text, decode="compiled")
    before = set(static_caches(tiny_text.model).caches)
    [row] = compiled.generate_batch([Request(QUESTIONS[0], [], "think", POST, max_new_tokens=300)])
    assert set(static_caches(tiny_text.model).caches) == before and row.batch_size == 1
    compiled.generate(Request(QUESTIONS[0], [], "think", POST, max_new_tokens=300))
    assert (1, 512) in static_caches(tiny_text.model).caches


def test_a_call_longer_than_the_longest_compiled_cache_decodes_eagerly(tiny_text):
    """Past MAX_LENGTH a call decodes eagerly (each compiled length holds its own copy of the weights: three lengths
    of the real pair ran a 24 GiB machine out of memory), with the eager path's tokens."""
    from mai.compiled_decode import MAX_LENGTH, fits, static_caches

    assert fits(MAX_LENGTH) and not fits(MAX_LENGTH + 1)
    compiled, eager = HFGenerator(tiny_text, decode="compiled"), HFGenerator(tiny_text)
    before = set(static_caches(tiny_text.model).caches)
    request = Request(QUESTIONS[1], [], "think", POST, max_new_tokens=MAX_LENGTH)
    got = compiled.generate(request)
    assert set(static_caches(tiny_text.model).caches) == before
    assert got.output_ids == eager.generate(request).output_ids
