"""mai.serving.vllm_engine: both models on vLLM's asynchronous engine (AsyncLLM), as the server runs them.

    .venv-vllm/bin/python -m pytest -q tests/test_vllm_async_engine.py

Marked vllm_engine (skipped without vLLM). Models: the qwen2 family's tiny shapes (tiny-qwen2, tiny-qwen2-large)
as checkpoint directories with random fp32-upcast bf16 weights (scripts/make_checkpoint.py), so every engine
reads the same weights. Three engines start (about 20-25 s each on 2 cores): the asynchronous pair, shared by the
module, and one offline VLLMGenerator of the small model, the reference its results must equal.
The question is ~250 tokens, so a prompt spans the CPU engine's 128-token prefix-cache blocks and a second
stage can be served from its first stage's blocks.
"""
import importlib.util
import threading
import time
import types
from pathlib import Path

import pytest

from conftest import use_vllm_cpu_engine_settings

use_vllm_cpu_engine_settings()

pytestmark = pytest.mark.vllm_engine

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 128  # vLLM's CPU block size (vllm/platforms/cpu.py)
POST = "\nAnswer with yes or no."
QUESTION = "Is the sky blue on a clear day at noon, seen from the ground? " * 18 + "Answer carefully."


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "scripts" / "make_checkpoint.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = {}
    for role, name in (("small", "tiny-qwen2"), ("large", "tiny-qwen2-large")):
        out[role] = str(tmp_path_factory.mktemp("checkpoints") / name)
        script.main([name, out[role]])
    return out


@pytest.fixture(scope="module")
def pair(checkpoints):
    import torch

    torch.set_num_threads(1)
    from mai.serving.vllm_engine import start_generators

    args = types.SimpleNamespace(dtype="fp32", max_model_len=4096, kv_cache_gib=(0.25, 0.25), vllm_eager=True)
    small, large, close = start_generators(checkpoints["small"], checkpoints["large"], args)
    yield small, large
    close()


@pytest.fixture(scope="module")
def offline_small(checkpoints, pair):  # after the pair: the offline engine runs in this process
    from mai.vllm_backend import VLLMGenerator

    return VLLMGenerator(checkpoints["small"], dtype="fp32", enforce_eager=True, max_model_len=4096)


def _cascade(small, large):
    from mai.cascade import Cascade, CascadeConfig

    return Cascade(small, large, CascadeConfig(think_tokens=24, answer_tokens=6), "tiny-qwen2", "tiny-qwen2-large")


def _agreement():
    from mai.benchmarks import get_benchmark

    return get_benchmark("strategyqa").agreement


def test_results_equal_the_offline_generator(pair, offline_small):
    """Each stage, Simple, Think and the second stage, gives VLLMGenerator's Result: same prompt, same greedy ids;
    the second stage is served from its own first stage's blocks."""
    from mai.generation import Request

    small, _ = pair
    ours, theirs = {}, {}
    for gen, out in ((small, ours), (offline_small, theirs)):
        out["simple"] = gen.generate(Request(QUESTION, [], "simple", POST, max_new_tokens=8))
        out["think"] = gen.generate(Request(QUESTION, [], "think", POST, max_new_tokens=24, keep_cache=True))
        out["answer"] = gen.generate(Request(QUESTION, [], "answer", POST, max_new_tokens=6, reuse=out["think"]))
    for stage in ("simple", "think", "answer"):
        a, b = ours[stage], theirs[stage]
        assert (a.text, a.input_tokens, a.output_tokens, a.stopped) == (b.text, b.input_tokens, b.output_tokens,
                                                                        b.stopped), stage
    assert ours["think"].cache.prompt_ids == theirs["think"].cache.prompt_ids
    assert ours["think"].cache.reasoning_ids == theirs["think"].cache.reasoning_ids
    assert ours["think"].input_tokens > 2 * BLOCK
    # The second stage's prompt extends the first's: every whole block of the first stage came from the cache.
    whole = (ours["think"].input_tokens + len(ours["think"].cache.reasoning_ids)) // BLOCK * BLOCK
    assert ours["answer"].cached_tokens >= whole > 0


def test_concurrent_burst_equals_each_query_alone(pair):
    """N queries through the cascade from N threads at once (vLLM batches their stages) give the traces each
    query gives alone: the same route, and every call's text and tokens."""
    from mai.serving import query

    small, large = pair
    questions = [f"Question {i}: " + QUESTION for i in range(4)]

    def run(question):
        trace = _cascade(small, large).answer(question, [], _agreement(), POST, 8)
        return trace.route, [(c.role, c.mode, c.result["text"], c.result["input_tokens"], c.result["output_tokens"])
                             for c in trace.calls]

    alone = [run(q) for q in questions]
    together = [None] * len(questions)

    def worker(i):
        with query.running(query.Query(f"burst-{i}")):
            together[i] = run(questions[i])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(questions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert together == alone
    assert all(len(calls) >= 2 for _, calls in alone)
    assert small.unfinished() == 0 and large.unfinished() == 0


def test_cancelled_query_aborts_its_engine_request(pair):
    """A long Think request of a cancelled query is aborted: generate raises Aborted within a poll, the engine
    has no unfinished request, and the next request completes."""
    from mai.generation import Request
    from mai.serving import query

    _, large = pair
    q = query.Query("to-cancel")
    outcome = {}

    def worker():
        with query.running(q):
            t0 = time.perf_counter()
            try:
                large.generate(Request(QUESTION, [], "think", POST, max_new_tokens=3000, min_new_tokens=3000))
                outcome["result"] = "finished"
            except query.Aborted as err:
                outcome["result"], outcome["id"] = "aborted", str(err)
            outcome["seconds"] = time.perf_counter() - t0

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(1.0)
    assert large.unfinished() == 1  # the request is in the engine
    q.cancelled.set()
    thread.join(timeout=30)
    assert outcome["result"] == "aborted" and outcome["id"] == "to-cancel"
    assert outcome["seconds"] < 10  # 3000 forced tokens would take far longer
    deadline = time.time() + 5
    while large.unfinished() and time.time() < deadline:
        time.sleep(0.05)
    assert large.unfinished() == 0
    after = large.generate(Request(QUESTION, [], "simple", POST, max_new_tokens=5, min_new_tokens=5))
    assert after.output_tokens == 5
    with query.running(q):  # a cancelled query submits nothing more
        with pytest.raises(query.Aborted):
            large.generate(Request(QUESTION, [], "simple", POST, max_new_tokens=5))


def test_the_served_pair_is_sized_as_the_experiments_or_as_given_before_any_engine_starts(checkpoints):
    """pair_engine_args on generators without engines: no --kv-cache-gib gives mai.vllm_backend.fit_cpu_memory's
    split (each tiny model's one request is far below 1 GiB, so 1 GiB each); given sizes are kept; a given size
    below one --max-model-len request stops in one line."""
    from mai import MaiError
    from mai.serving.vllm_engine import pair_engine_args, prompt_side

    args = types.SimpleNamespace(dtype="fp32", max_model_len=4096, vllm_eager=True, kv_cache_gib=None)
    gens = [prompt_side(checkpoints[role], args) for role in ("small", "large")]
    assert all(g.llm is None for g in gens)
    sized = pair_engine_args(gens, args)
    assert [a["kv_cache_memory_bytes"] for a in sized] == [1 << 30, 1 << 30]
    assert all(a["enforce_eager"] for a in sized)
    args.kv_cache_gib = (0.25, 0.5)
    assert [a["kv_cache_memory_bytes"] for a in pair_engine_args(gens, args)] == [1 << 28, 1 << 29]
    args.kv_cache_gib = (0.25, 1e-4)
    with pytest.raises(MaiError, match="less than one --max-model-len request needs"):
        pair_engine_args(gens, args)
