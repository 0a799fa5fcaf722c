"""Fair service on the transformers backend (issue 40): active queries take turns a prefill chunk or a decoded token
at a time (mai.serving.turns), long queries are admitted within a token budget (mai.serving.worker), API keys
share the queue. The cpu preset's tiny random Qwen3-VL pair (fp32, one torch thread), served in-process on
127.0.0.1 as tests/test_serving.py serves it. Timing checks are ratios with the issue's margins: 3x a short
query's alone latency plus the longest turn any query held (one chunk's time)."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time

import httpx
import pytest

from mai.serving.query import Aborted, Query
from mai.serving.system import StoppableGenerator
from mai.serving.worker import QueueFull, Worker
from test_serving import alone, metric, serving, system  # noqa: F401  (the module's fixture)

pytest.importorskip("uvicorn")
SHORT = "Is 4 even?"
LONG_WORDS = 4000  # ~4,000 tokens: over 100x the short query's prompt; several seconds of MAI on the tiny pair


def ask(http: httpx.Client, question: str, timeout: float = 120) -> tuple[httpx.Response, float]:
    t0 = time.perf_counter()
    r = http.post("/v1/chat/completions", json={"model": "mai", "messages": [{"role": "user", "content": question}]},
                  timeout=timeout)
    return r, time.perf_counter() - t0


def chunked(system, chunk: int = 512):
    """The same models, prefilled in chunks of `chunk` tokens (--prefill-chunk), so that a long prompt has many."""
    from mai.cascade import Cascade
    from mai.serving.system import Checked

    gens = [Checked(StoppableGenerator(g.generator.loaded, 0, chunk), g.role, g.model, g.context)
            for g in (system.small, system.large)]
    cascade = Cascade(*gens, system.cascade.config, *system.models().values())
    return dataclasses.replace(system, small=gens[0], large=gens[1], cascade=cascade)


def test_a_short_query_behind_a_long_one_waits_about_one_chunk_and_both_answer_as_alone(system):
    served = chunked(system)
    long = "word " * LONG_WORDS + "Which word is it?"
    with serving(served, threads=8) as (base, app), httpx.Client(base_url=base) as http:
        ask(http, SHORT)  # warm
        alone_s = min(ask(http, SHORT)[1] for _ in range(2))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            t0 = time.perf_counter()
            behind = pool.submit(ask, http, long)
            time.sleep(3.0)
            short, short_s = ask(http, SHORT)
            still = not behind.done()
            long_r, long_s = behind.result()
        turn = app.state.worker.turns.longest
    assert short.status_code == long_r.status_code == 200
    assert still, f"the long query ended ({long_s:.1f} s) before the short one was answered"
    assert short_s <= 3 * alone_s + turn, (short_s, alone_s, turn)
    assert short.json()["choices"][0]["message"]["content"] == alone(system, SHORT, [])["text"]
    assert long_r.json()["choices"][0]["message"]["content"] == alone(system, long, [])["text"]
    print(f"short alone {alone_s:.2f} s, behind a long one {short_s:.2f} s (longest turn {turn:.2f} s); "
          f"long {long_s:.1f} s since {time.perf_counter() - t0:.1f} s")


def forty_long_and_a_short(system, leave_after: float = 25.0) -> dict:
    """40 long but legal queries at once (each prompt its own, so that no prefix cache serves them), their clients
    leaving after `leave_after` s; a short query sent once they are queued or running; then the server drained.
    Also run on vLLM's engines (tests/test_vllm_serving_limits.py)."""
    def long_query(i: int):
        try:
            ask(http, f"Query {i}. " + "word " * LONG_WORDS + "Which word is it?", timeout=leave_after)
        except httpx.TimeoutException:
            gave_up.append(i)

    gave_up = []
    with serving(system, threads=8, max_queue=64) as (base, app), httpx.Client(base_url=base) as http:
        ask(http, SHORT)  # warm
        alone, alone_s = min((ask(http, SHORT) for _ in range(2)), key=lambda r: r[1])
        with concurrent.futures.ThreadPoolExecutor(40) as pool:
            longs = [pool.submit(long_query, i) for i in range(40)]
            deadline = time.time() + 20
            while metric(base, "mai_queue_depth") + metric(base, "mai_queries_running") < 40 and time.time() < deadline:
                time.sleep(0.1)
            worker = app.state.worker
            long_active = worker.busy()
            short, short_s = ask(http, SHORT)
            for future in longs:
                future.result()
        t0 = time.perf_counter()
        while (metric(base, "mai_queries_running") or metric(base, "mai_queue_depth")) and time.perf_counter() - t0 < 30:
            time.sleep(0.1)
        drained = metric(base, "mai_queries_running") == metric(base, "mai_queue_depth") == 0
        after, _ = ask(http, SHORT)
    print(f"short alone {alone_s:.2f} s, behind 40 long ones {short_s:.2f} s ({long_active} long active, "
          f"{len(gave_up)} clients gave up)")
    return dict(alone=alone, alone_s=alone_s, short=short, short_s=short_s, after=after, drained=drained,
                long_active=long_active, longest_turn=worker.turns.longest if worker.turns else 0.0)


def test_forty_concurrent_long_queries_leave_a_short_one_its_turn_and_the_server_recovers(system):
    seen = forty_long_and_a_short(system)
    assert seen["drained"] and seen["short"].status_code == seen["after"].status_code == 200
    assert 1 <= seen["long_active"] <= 7  # within the token budget, and one thread kept free for short queries
    assert seen["short_s"] < 60 and seen["short_s"] <= 3 * seen["alone_s"] + seen["longest_turn"], seen
    assert seen["short"].json()["choices"][0]["message"]["content"] == alone(system, SHORT, [])["text"]


def test_api_keys_share_the_queue_and_are_taken_in_turn():
    worker, release, order = Worker(1, max_queue=4, keys=2), threading.Event(), []
    worker.start()
    try:
        busy = worker.submit(Query("busy", key="a"), lambda: release.wait(30))
        while not worker.busy():
            time.sleep(0.01)
        burst = [worker.submit(Query(f"a{i}", key="a"), lambda i=i: order.append(f"a{i}")) for i in range(2)]
        with pytest.raises(QueueFull, match="share of --max-queue"):  # key a holds its 2 of 4 already
            worker.submit(Query("a2", key="a"), lambda: None)
        other = [worker.submit(Query(f"b{i}", key="b"), lambda i=i: order.append(f"b{i}")) for i in range(2)]
        release.set()
        for job in [busy, *burst, *other]:
            job.future.result(timeout=30)
        assert order == ["a0", "b0", "a1", "b1"]
    finally:
        release.set()
        worker.stop()


def test_a_long_query_waits_for_room_and_short_ones_pass_it():
    worker, release, order = Worker(3, max_queue=8, max_active_tokens=10_000, short_tokens=100), threading.Event(), []
    worker.start()
    try:
        first = worker.submit(Query("long0", tokens=6000), lambda: release.wait(30))
        while not worker.busy():
            time.sleep(0.01)
        waiting = worker.submit(Query("long1", tokens=6000), lambda: order.append("long1"))
        short = worker.submit(Query("short", tokens=50), lambda: order.append("short"))
        short.future.result(timeout=10)
        assert order == ["short"] and worker.depth() == 1  # long1 does not fit beside long0
        release.set()
        waiting.future.result(timeout=10)
        assert order == ["short", "long1"] and first.future.result(timeout=10) is True
    finally:
        release.set()
        worker.stop()


def test_a_cancelled_query_waiting_for_its_turn_leaves_at_once():
    from mai.serving.turns import Ticket, Turns

    turns = Turns()
    holder, waiter = Query("holder"), Query("waiter")
    a, b = Ticket(holder), Ticket(waiter)
    turns.acquire(a)
    got = []

    def wait_turn():
        try:
            turns.acquire(b)
            waiter.check()
        except Aborted:
            got.append("aborted")
        finally:
            turns.release(b)

    thread = threading.Thread(target=wait_turn)
    thread.start()
    time.sleep(0.1)
    waiter.cancelled.set()
    turns.pause(a)  # the holder's next yield point: the cancelled query goes first, then gives the turn back
    thread.join(5)
    assert got == ["aborted"]
    turns.pause(a)
    turns.release(a)
