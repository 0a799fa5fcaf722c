"""Every request's cost bounded before it is queued (mai.serving.budget, mai.serving.api's body and nesting limits)
and a running query stopped between layers (mai.serving.system), on the transformers backend with the cpu preset's
tiny random Qwen3-VL pair, served in-process on 127.0.0.1 as tests/test_serving.py serves it."""
from __future__ import annotations

import dataclasses
import json
import threading
import time

import httpx
import pytest

from mai.cascade import Cascade
from mai.generation import HFGenerator, Request
from mai.serving.budget import Budget, context_message
from mai.serving.query import Aborted, Query, running
from mai.serving.system import Checked, StoppableGenerator, layers, stops_between_layers
from test_serving import VALID, alone, image_message, metric, serving, system  # noqa: F401  (the module's fixture)

pytest.importorskip("uvicorn")
WORDS = 300_000  # the question of issue 30: far past the cpu preset's 32,768-token context (the checkpoints' 262,144)


def with_contexts(system, small: int, large: int):
    """The same models with other contexts (as --max-model-len would set them)."""
    small_gen = Checked(system.small.generator, "small", system.cascade.names["small"], small)
    large_gen = Checked(system.large.generator, "large", system.cascade.names["large"], large)
    cascade = Cascade(small_gen, large_gen, system.cascade.config, *system.models().values())
    return dataclasses.replace(system, small=small_gen, large=large_gen, cascade=cascade)


def post(http: httpx.Client, body) -> tuple[httpx.Response, float]:
    t0 = time.perf_counter()
    r = http.post("/v1/chat/completions", **({"content": body} if isinstance(body, bytes) else {"json": body}))
    return r, time.perf_counter() - t0


def test_the_issue_s_two_requests_are_4xx_within_a_second_and_the_next_is_served(system):
    huge = {"model": "mai", "messages": [{"role": "user", "content": "word " * WORDS}]}
    deep = b'{"model": "mai", "messages": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    with serving(system) as (base, _), httpx.Client(base_url=base, timeout=60) as http:
        r, seconds = post(http, huge)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "context_length_exceeded")
        assert r.json()["error"]["message"] == ("stage 'small Simple' (small model tiny-small) cannot fit: "
                                                + context_message(32768, WORDS, 8, at_least=True))
        assert seconds < 1.0
        r, seconds = post(http, deep)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "json_too_deep") and seconds < 1.0
        r, _ = post(http, VALID)
        assert r.status_code == 200
        assert r.json()["choices"][0]["message"]["content"] == alone(system, VALID["messages"][0]["content"], [])["text"]
        assert metric(base, 'mai_requests_total{status="400"}') == 2 and metric(base, "mai_queue_depth") == 0


def test_json_nested_past_the_limit_is_refused_and_within_it_read():
    from mai.serving import api

    assert api.json_depth({"a": [{"b": [1]}]}) == 4 and api.json_depth(3) == 0
    nested = json.dumps(json.loads("[" * api.MAX_JSON_DEPTH + "]" * api.MAX_JSON_DEPTH)).encode()
    assert api.json_depth(api.parse_json(nested)) == api.MAX_JSON_DEPTH
    for body in (b"[" * (api.MAX_JSON_DEPTH + 1) + b"]" * (api.MAX_JSON_DEPTH + 1), b"[" * 100_000):
        with pytest.raises(api.ApiError) as refused:
            api.parse_json(body)
        assert (refused.value.status, refused.value.code) == (400, "json_too_deep")


def test_a_body_past_the_limit_is_413_by_its_length_or_as_it_arrives(system):
    limit = 4096
    body = json.dumps({**VALID, "messages": [{"role": "user", "content": "x" * limit}]}).encode()
    with serving(system, max_body_bytes=limit) as (base, _), httpx.Client(base_url=base, timeout=60) as http:
        declared = http.post("/v1/chat/completions", content=body)
        streamed = http.post("/v1/chat/completions", content=iter([body[:1000], body[1000:]]))  # chunked: no length
        for r in (declared, streamed):
            assert (r.status_code, r.json()["error"]["code"]) == (413, "body_too_large")
            assert f"limit of {limit} bytes (--max-body-bytes)" in r.json()["error"]["message"]
        assert http.post("/v1/chat/completions", json=VALID).status_code == 200


def test_the_budget_counts_each_stage_s_prompt_as_the_model_reads_it(system, chart_image):
    for images in ([], [chart_image]):
        question = "Which bar is the tallest?"
        stages = {s.name: s for s in Budget(system).stages(question, images)}
        trace = alone(system, question, images)["trace"]  # random weights: every route is transfer
        calls = {(c["role"], c["mode"]): c["result"] for c in trace}
        assert stages["small Simple"].prompt_tokens == calls["small", "simple"]["input_tokens"]
        assert stages["large Simple"].prompt_tokens == calls["large", "simple"]["input_tokens"]
        assert stages["small Think"].prompt_tokens == calls["small", "think"]["input_tokens"]
        # The second stage: the Think prompt, the whole reasoning budget (spent here), the answer request.
        assert calls["small", "think"]["output_tokens"] == system.think_tokens
        assert stages["small answer"].prompt_tokens == calls["small", "answer"]["input_tokens"]
        assert [s.new_tokens for s in stages.values()] == [8, 8, system.think_tokens, 16, 8]


def test_a_stage_that_cannot_fit_is_named_in_vllm_s_words(system):
    think = Budget(system).stages("Which bar is the tallest?", [])[2]
    # Simple fits (33 + 8 tokens), the reasoning budget does not (46 + 32).
    tight = with_contexts(system, think.prompt_tokens + think.new_tokens - 1, 262144)
    with serving(tight) as (base, _), httpx.Client(base_url=base, timeout=60) as http:
        r, _ = post(http, VALID)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "context_length_exceeded")
        assert r.json()["error"]["message"] == (
            "stage 'small Think' (small model tiny-small) cannot fit: "
            + context_message(think.prompt_tokens + think.new_tokens - 1, think.prompt_tokens, think.new_tokens))
        assert metric(base, "mai_queries_running") == 0 and metric(base, 'mai_routes_total{route="transfer"}') == 0


def test_a_transfer_prompt_longer_than_its_budget_is_refused_before_it_runs(system):
    question = VALID["messages"][0]["content"]
    counted = Budget(system).stages(question, [])[-1]
    real = alone(system, question, [])["trace"][-1]["result"]["input_tokens"]
    # The random weights' 32-token reasoning reads back as more tokens than its budget: the check before the
    # queue passes, the one before the transfer stage does not.
    assert real > counted.prompt_tokens
    tight = with_contexts(system, 262144, counted.prompt_tokens + counted.new_tokens)
    with serving(tight) as (base, _), httpx.Client(base_url=base, timeout=60) as http:
        r, _ = post(http, VALID)
        assert (r.status_code, r.json()["error"]["code"]) == (400, "context_length_exceeded")
        assert r.json()["error"]["message"] == (
            "stage 'large transfer' (large model tiny-large) cannot fit: "
            + context_message(counted.prompt_tokens + counted.new_tokens, real, counted.new_tokens))


def test_a_cancelled_forward_stops_at_the_next_layer(system):
    generator = system.large.generator
    model, ran, query = generator.loaded.model, [], Query("q")
    blocks = layers(model)
    assert len(blocks) == 2 + 6  # the tiny large model's vision blocks and decoder layers

    def count(module, args):
        ran.append(module)
        if len(ran) == 4:  # inside the prefill's fourth decoder layer (a text prompt runs no vision block)
            query.cancelled.set()

    with stops_between_layers(model, query):
        handles = [block.register_forward_pre_hook(count) for block in blocks]
        try:
            with running(query), pytest.raises(Aborted):
                generator.generate(Request(question="Which bar is the tallest?", max_new_tokens=8))
        finally:
            for handle in handles:
                handle.remove()
    assert len(ran) == 4  # the layer after the one that saw the cancellation never ran
    assert not any(block._forward_pre_hooks for block in blocks)  # the hooks are gone after


def test_a_long_prompt_prefilled_in_chunks_answers_as_one_pass_does(system):
    loaded = system.large.generator.loaded
    chunked = StoppableGenerator(loaded, 0, prefill_chunk=1000)
    request = Request(question="Is the sky blue on a clear day at noon? " * 250, max_new_tokens=8)
    passes = []  # the tokens each forward pass of the first decoder layer saw

    def seen(module, args, kwargs):
        passes.append((args[0] if args else kwargs["hidden_states"]).shape[1])

    handle = layers(loaded.model)[2].register_forward_pre_hook(seen, with_kwargs=True)
    try:
        with running(Query("q")):
            got = chunked.generate(request)
        n, prefill = got.input_tokens, passes[:]
        passes.clear()
        want = HFGenerator(loaded, 0).generate(request)
    finally:
        handle.remove()
    assert n > 2500 and prefill[:4] == [1000, 1000, n - 1 - 2000, 1]  # three chunks, then generate's last token
    assert passes[0] == n  # unchunked: one pass over the prompt
    assert (got.text, got.input_tokens, got.output_tokens) == (want.text, want.input_tokens, want.output_tokens)


def test_a_long_legal_prefill_past_the_timeout_frees_the_worker_within_a_chunk(system):
    # 24,000 tokens: one pass over them takes seconds per layer here; a layer over one 2,048-token chunk a tenth.
    long = {"model": "mai", "messages": [{"role": "user", "content": "word " * 24_000}]}
    with serving(system, request_timeout=1.0) as (base, app), httpx.Client(base_url=base, timeout=60) as http:
        r, seconds = post(http, long)
        assert (r.status_code, r.json()["error"]["code"]) == (504, "timeout")
        t0 = time.perf_counter()
        while metric(base, "mai_queries_running") and time.perf_counter() - t0 < 20:
            time.sleep(0.05)
        freed = time.perf_counter() - t0
        assert metric(base, "mai_queries_running") == 0
        assert freed < 1.5, freed
        app.state.settings = dataclasses.replace(app.state.settings, request_timeout=60)
        assert post(http, VALID)[0].status_code == 200


def test_cancelled_queries_hold_no_place_in_a_full_queue():
    from mai.serving.worker import QueueFull, Worker

    worker, release = Worker(1, max_queue=2), threading.Event()
    worker.start()
    try:
        busy = worker.submit(Query("busy"), lambda: release.wait(30))
        while not worker.busy():
            time.sleep(0.01)
        gone = [worker.submit(Query(f"gone{i}"), lambda: "never") for i in range(2)]
        with pytest.raises(QueueFull):
            worker.submit(Query("refused"), lambda: "no room")
        for job in gone:  # their clients left
            job.query.cancelled.set()
        kept = worker.submit(Query("kept"), lambda: "answered")
        assert worker.depth() == 1
        for job in gone:
            with pytest.raises(Aborted):
                job.future.result(timeout=5)
        release.set()
        assert busy.future.result(timeout=30) is True and kept.future.result(timeout=30) == "answered"
    finally:
        release.set()
        worker.stop()


def test_each_preset_serves_its_own_context_and_the_checkpoint_s_by_flag(system):
    from mai.serving import server

    assert (system.small.context, system.large.context) == (32768, 32768)  # the cpu preset's (server.PRESET_CONTEXT)
    loaded = system.small.loaded
    assert server.served_context(loaded, None, "cpu") == 32768
    assert server.served_context(loaded, "checkpoint", "cpu") == 262144  # --max-model-len checkpoint
    assert server.served_context(loaded, None, "paper") == 262144  # no preset context: the checkpoint's
    assert server.served_context(loaded, 1000, "cpu") == 1000
    assert server.vllm_context(None, "cpu") == 16384 and server.vllm_context(None, "cpu-real") == 16384
    assert server.vllm_context("checkpoint", "cpu") is None
    with pytest.raises(Exception, match="greater than tiny-small's context"):
        server.served_context(loaded, 300_000, "cpu")
