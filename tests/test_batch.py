"""Batched generation and the stage-major cascade give the answers of one-at-a-time, example-major runs.

The tiny models are fp32 on the CPU; greedy rows of a left-padded batch are independent, so the
batched tokens must equal the batch-1 tokens exactly (not approximately), including where a row stops
early and the batch pads it, and including second stages continued from a batched first stage's cache.
"""
import pytest
import torch

from mai.attention import SparseOptions
from mai.batch import Query, run_cascade_stage_major
from mai.benchmarks import get_benchmark
from mai.cascade import Cascade, CascadeConfig
from mai.generation import STAGES, HFGenerator, Request, Result

POST = "\nAnswer the question using a single word or phrase."
CHARTQA = get_benchmark("chartqa").agreement  # the questions below are about charts


def _requests(chart_image, n_new=10):
    """Mixed first stages: images of different sizes (different padding), think and simple modes, a
    transfer context, a text-only prompt."""
    sizes = [(320, 240), (120, 90), (200, 60), (64, 64)]
    reqs = [Request(f"Which bar is tallest? ({k})", [chart_image.resize(s)], "think" if k % 2 else "simple", POST,
                    n_new, keep_cache=True) for k, s in enumerate(sizes)]
    reqs.append(Request("Which bar is tallest?", [chart_image], "simple", POST, n_new, context="B is 120 high."))
    reqs.append(Request("What is two plus two?", [], "simple", POST, n_new, keep_cache=True))
    return reqs


def _same(single: Result, batched: Result):
    assert (batched.text, batched.input_tokens, batched.output_tokens, batched.first_text) == \
        (single.text, single.input_tokens, single.output_tokens, single.first_text)


def test_generate_batch_equals_one_at_a_time(tiny_small, chart_image, monkeypatch):
    gen = HFGenerator(tiny_small)
    reqs = _requests(chart_image)
    probe = gen.generate(reqs[1])
    # Make one of the probe's own tokens an eos: rows then stop at different steps, and the batch pads them.
    new = probe.sequence[0, probe.input_tokens:].tolist()
    monkeypatch.setattr(tiny_small.model.generation_config, "eos_token_id",
                        [*tiny_small.eos_token_ids, new[3]])
    single = [gen.generate(r) for r in reqs]
    batched = gen.generate_batch(reqs)
    lengths = {r.output_tokens for r in single}
    assert min(lengths) < 10 and 10 in lengths, "rows should stop at different steps"
    for r, s, b in zip(reqs, single, batched):
        _same(s, b)
        assert b.batch_size == len(reqs) and s.batch_size is None
        assert set(b.times) == set(STAGES) and b.summary()["batch_size"] == len(reqs)
        if r.keep_cache:
            assert torch.equal(b.sequence, s.sequence) and torch.equal(b.mm_token_type_ids, s.mm_token_type_ids)
            assert torch.equal(b.rope_deltas, s.rope_deltas)
            assert b.cache.get_seq_length() == s.cache.get_seq_length() == s.input_tokens + s.output_tokens - 1
            assert set(b.vision_inputs) == set(s.vision_inputs)
            for k in s.vision_inputs:
                assert torch.equal(b.vision_inputs[k], s.vision_inputs[k])
    # One batch: every request carries an equal share of the same four stage times.
    assert len({tuple(b.times.values()) for b in batched}) == 1
    # Second stages from the batched first stages' caches equal those from the batch-1 caches.
    kept = [(r, s, b) for r, s, b in zip(reqs, single, batched) if r.keep_cache]
    want = [gen.generate(Request(r.question, r.images, "answer", POST, 6, reuse=s)) for r, s, _ in kept]
    got = gen.generate_batch([Request(r.question, r.images, "answer", POST, 6, reuse=b) for r, _, b in kept])
    for w, g in zip(want, got):
        _same(w, g)
        assert g.cached_tokens == w.cached_tokens > 0 and g.batch_size == 1


def test_generate_batch_groups_by_length_and_chunks(tiny_large, chart_image):
    gen = HFGenerator(tiny_large, max_batch=2)
    reqs = [Request("Which bar?", [chart_image], "simple", POST, n) for n in (3, 5, 3, 3, 5)]
    batched = gen.generate_batch(reqs)
    assert [b.output_tokens for b in batched] == [3, 5, 3, 3, 5]  # random tiny models never stop early here
    assert [b.batch_size for b in batched] == [2, 2, 2, 1, 2]  # (3, 3) (3) by max_batch=2; (5, 5)
    for r, b in zip(reqs, batched):
        _same(gen.generate(r), b)
    assert gen.generate_batch([]) == []


class ScriptedLarge:
    """A large model answering by question: agree with the small model at Simple, after its reasoning, or
    never (so the transfer route is taken); batched or not, the same answers."""

    def __init__(self, simple: dict, transfer: str = "B"):
        self.simple, self.transfer, self.batches = simple, transfer, []

    def generate(self, request: Request) -> Result:
        text = self.transfer if request.context else self.simple[request.question]
        return Result(text=text, input_tokens=30, output_tokens=2, times=dict.fromkeys(STAGES, 0.01))

    def generate_batch(self, requests):
        self.batches.append(len(requests))
        results = [self.generate(r) for r in requests]
        for r in results:
            r.batch_size = len(requests)
        return results


def _calls(trace):
    return [(c.role, c.mode, c.result["text"], c.result["input_tokens"], c.result["output_tokens"],
             c.result["cached_tokens"], c.answer) for c in trace.calls]


@pytest.mark.parametrize("transfer, query", [("full", "answer"), ("sparse", "answer"), ("sparse", "reasoning_end")])
def test_stage_order_gives_example_order_traces_on_every_route(tiny_small, chart_image, transfer, query):
    small = HFGenerator(tiny_small)
    sparse = SparseOptions(layer=2, delta=0.6) if transfer == "sparse" else None
    config = CascadeConfig(think_tokens=8, answer_tokens=4, transfer=transfer, sparse=sparse, query=query)
    images = [[chart_image.resize((64 + 40 * k, 64 + 20 * k))] for k in range(4)]
    queries = [Query(f"Which bar is tallest? ({k})", images[k], CHARTQA, POST, 4) for k in range(4)]
    # What the small model answers, to script agreement: q0 at Simple, q1 after reasoning, q2, q3 never.
    probe = Cascade(small, ScriptedLarge({q.question: "zebra" for q in queries}), config, "S", "L")
    first = [probe.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens) for q in queries[:2]]
    answers = {queries[0].question: first[0].calls[0].result["text"],
               queries[1].question: first[1].calls[3].result["text"]}
    match = CHARTQA()
    assert not match.agree(match.read(first[1].calls[0].answer), match.read(match.extract(answers[queries[1].question])))
    large = ScriptedLarge({q.question: answers.get(q.question, "zebra") for q in queries})
    cascade = Cascade(small, large, config, "S", "L")
    want = [cascade.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens) for q in queries]
    large.batches.clear()
    got = run_cascade_stage_major(cascade, queries)
    assert [t.route for t in want] == ["simple", "reasoning", "transfer", "transfer"]
    for w, g in zip(want, got):
        assert (g.route, g.prediction, g.answer, g.kept_tokens, g.reasoning_tokens) == \
            (w.route, w.prediction, w.answer, w.kept_tokens, w.reasoning_tokens)
        assert _calls(g) == _calls(w)
        assert g.wall_seconds == pytest.approx(g.totals()["latency"])
    assert large.batches == [4, 2]  # Simple for all; transfer for the two that reach it
    # small Simple, large Simple, think (3 disagree), answer (from its own cache), [capture,] transfer (2 left)
    modes = ["simple", "simple", "think", "answer"] + (["attention"] if query == "reasoning_end" else []) + ["transfer"]
    assert [c.mode for c in got[2].calls] == modes
    sizes = [c.result.get("batch_size") for c in got[2].calls if c.mode != "attention"]
    assert sizes == [4, 4, 3, 1, 2]
    # the second stage ran alone, and says so; batched calls do not
    assert [c.result.get("fallback") for c in got[2].calls] == [
        "second stage continues its own cache" if c.mode == "answer" else None for c in got[2].calls]


@pytest.mark.parametrize("transfer", ["full", "sparse"])
def test_stage_order_with_the_simplified_framework(tiny_small, chart_image, transfer):
    """verify=reasoning: no second stage; the answer is read off the reasoning (random weights name
    none, so every disagreement goes on to transfer), in stage order as in example order."""
    small = HFGenerator(tiny_small)
    sparse = SparseOptions(layer=2, delta=0.6) if transfer == "sparse" else None
    config = CascadeConfig(think_tokens=8, answer_tokens=4, verify="reasoning", transfer=transfer, sparse=sparse)
    queries = [Query(f"Which bar is tallest? ({k})", [chart_image.resize((64 + 40 * k, 80))], CHARTQA, POST, 4)
               for k in range(3)]
    probe = Cascade(small, ScriptedLarge({q.question: "zebra" for q in queries}), config, "S", "L")
    agreeing = probe.answer(queries[0].question, queries[0].images, CHARTQA, POST, 4).calls[0].result["text"]
    large = ScriptedLarge({q.question: agreeing if k == 0 else "zebra" for k, q in enumerate(queries)})
    cascade = Cascade(small, large, config, "S", "L")
    want = [cascade.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens) for q in queries]
    got = run_cascade_stage_major(cascade, queries)
    assert [t.route for t in got] == [t.route for t in want] == ["simple", "transfer", "transfer"]
    for w, g in zip(want, got):
        assert (g.prediction, g.kept_tokens, g.reasoning_tokens, _calls(g)) == \
            (w.prediction, w.kept_tokens, w.reasoning_tokens, _calls(w))
    modes = ["simple", "simple", "think"] + (["attention"] if transfer == "sparse" else []) + ["transfer"]
    assert [c.mode for c in got[1].calls] == modes


def test_rows_rerun_at_batch_size_one_are_marked(tmp_path, tiny_small, chart_image):
    """A batch that raises is rerun one example at a time; those rows say so ("fallback"), the others
    do not."""
    from mai.batch import FALLBACK, run_systems_stage_major
    from mai.benchmarks import load_benchmark
    from mai.results import RunStore

    examples = load_benchmark("synth-chartqa", limit=2)
    store = RunStore(tmp_path, "exp", "run", {})

    def one(ex, bench, images):
        return dict(text="5", output_tokens=1, input_tokens=1)

    def many_fails(items):
        raise RuntimeError("out of memory")

    def many(items):
        return [one(*item) for item in items]

    run_systems_stage_major(store, [({"system": "bad"}, one, many_fails), ({"system": "ok"}, one, many)], examples)
    rows = store.rows()
    assert [(r["system"], r.get("fallback")) for r in rows] == [("bad", FALLBACK)] * 2 + [("ok", None)] * 2


def test_stage_order_with_two_real_models(tiny_small, tiny_large, chart_image):
    config = CascadeConfig(think_tokens=6, answer_tokens=3)
    cascade = Cascade(HFGenerator(tiny_small), HFGenerator(tiny_large), config, "S", "L")
    queries = [Query(q, [chart_image.resize(s)], CHARTQA, POST, 3)
               for q, s in (("Which bar is tallest?", (320, 240)), ("How many bars?", (90, 160)))]
    want = [cascade.answer(q.question, q.images, q.agreement, q.post_prompt, q.simple_tokens) for q in queries]
    got = run_cascade_stage_major(cascade, queries)
    assert [(t.route, t.prediction, _calls(t)) for t in got] == [(t.route, t.prediction, _calls(t)) for t in want]


def test_batched_forced_length_keeps_every_token(tiny_small, chart_image):
    """A forced output length (min = max new tokens) stops on length alone, in a batch as at batch size 1."""
    from mai.generation import HFGenerator, Request

    gen = HFGenerator(tiny_small)
    first = gen.generate(Request("What is shown?", [chart_image], "simple", "", 5, keep_cache=True))
    token = int(first.sequence[0, first.input_tokens])
    saved = tiny_small.model.generation_config.eos_token_id
    tiny_small.model.generation_config.eos_token_id = [token]  # the first token it emits now stops it
    try:
        requests = [Request("What is shown?", [chart_image], "simple", "", 5, min_new_tokens=5),
                    Request("Which bar is tallest?", [chart_image], "simple", "", 5, min_new_tokens=5)]
        assert [r.output_tokens for r in gen.generate_batch(requests)] == [5, 5]
    finally:
        tiny_small.model.generation_config.eos_token_id = saved


def test_sparse_transfer_in_a_batch_equals_one_at_a_time(tiny_small, tiny_large, chart_image):
    """Table 8's sparse row: batched reasoning, captures from each kept cache, batched answers give the batch-1
    row (the same kept reasoning and the same answer)."""
    from mai.batch import sparse_transfer_batch_system
    from mai.data import Example
    from mai.evaluate import sparse_transfer_system

    config = CascadeConfig(think_tokens=10, transfer="sparse", sparse=SparseOptions(layer=1, delta=0.8))
    cascade = Cascade(HFGenerator(tiny_small), HFGenerator(tiny_large), config)
    bench = get_benchmark("chartqa")
    examples = [Example(f"e{k}", "chartqa", f"Which bar is tallest? ({k})", ["B"], [],
                        think_prompt=f"Q: Which bar is tallest? ({k})\nA: Let's think step by step.") for k in range(3)]
    items = [(ex, bench, [chart_image.resize((64 + 40 * k, 64))]) for k, ex in enumerate(examples)]
    one = [sparse_transfer_system(cascade, 10, 4)(*item) for item in items]
    many = sparse_transfer_batch_system(cascade, 10, 4)(items)
    for a, b in zip(one, many):
        assert (a["text"], a["transferred"], a["kept_tokens"], a["reasoning_tokens"]) == \
            (b["text"], b["transferred"], b["kept_tokens"], b["reasoning_tokens"])
        assert a["calls"][0]["result"]["text"] == b["calls"][0]["result"]["text"]
        assert 0 < a["kept_tokens"] <= a["reasoning_tokens"]
