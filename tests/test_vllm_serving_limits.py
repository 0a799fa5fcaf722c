"""The server on vLLM's CPU engine (mai.serving.vllm_engine) under bad traffic: issue 30's two requests, the schema
fuzz of tests/test_serving_fuzz.py, and a short scripts/bench_soak.py. The cpu preset's tiny random Qwen3-VL pair,
both engines in this process's event loop, served in-process on 127.0.0.1 as tests/test_serving.py serves the
transformers backend (the soak starts its own server process and its own offline engines, in a subprocess, so
that they are gone when it ends). The context checked is each engine's own (model_config.max_model_len: 16384
here, the server's default on vllm).

    .venv-vllm/bin/python -m pytest -q -m vllm_engine tests/test_vllm_serving_limits.py
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import use_vllm_cpu_engine_settings

use_vllm_cpu_engine_settings()

pytestmark = pytest.mark.vllm_engine
pytest.importorskip("vllm")

WORDS = 300_000


@pytest.fixture(scope="module")
def vllm_system():
    import torch

    from mai.serving import server

    threads = torch.get_num_threads()
    args = server.parse(["--preset", "cpu", "--backend", "vllm", "--kv-cache-gib", "0.25,0.25", "--threads", "1"])
    system, close, _ = server.build(args)
    yield system
    close()
    torch.set_num_threads(threads)


def test_the_issue_s_two_requests_are_4xx_within_a_second_and_the_next_is_served(vllm_system):
    from mai.serving.budget import Budget, context_message
    from test_serving import VALID, metric, serving

    assert (vllm_system.small.context, vllm_system.large.context) == (16384, 16384)
    huge = {"model": "mai", "messages": [{"role": "user", "content": "word " * WORDS}]}
    deep = b'{"model": "mai", "messages": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    with serving(vllm_system) as (base, _), httpx.Client(base_url=base, timeout=120) as http:
        for body, code in ((huge, "context_length_exceeded"), (deep, "json_too_deep")):
            t0 = time.perf_counter()
            r = http.post("/v1/chat/completions", **({"content": body} if isinstance(body, bytes) else {"json": body}))
            assert (r.status_code, r.json()["error"]["code"]) == (400, code) and time.perf_counter() - t0 < 1.0
        assert r.status_code == 400
        huge_message = http.post("/v1/chat/completions", json=huge).json()["error"]["message"]
        assert huge_message == ("stage 'small Simple' (small model tiny-small) cannot fit: "
                                + context_message(16384, WORDS, 8, at_least=True))
        ok = http.post("/v1/chat/completions", json=VALID)
        assert ok.status_code == 200, ok.text
        # The budget's count of the Simple prompt is the engine's own.
        calls = ok.json()["mai"]["trace"]["calls"]
        stages = Budget(vllm_system).stages(VALID["messages"][0]["content"], [])
        assert [stages[0].prompt_tokens, stages[1].prompt_tokens] == [c["result"]["input_tokens"] for c in calls[:2]]
        assert metric(base, 'mai_requests_total{status="400"}') == 3 and metric(base, "mai_queries_running") == 0


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_schema_fuzzing_finds_no_5xx_and_no_undeclared_response(vllm_system, mode):
    from test_serving import serving
    from test_serving_fuzz import CHAT, fuzz

    with serving(vllm_system) as (base, _):
        sent = fuzz(base, mode, 15)
    if mode == "positive":
        assert 200 in sent[CHAT], sent


@pytest.mark.opt_in
def test_a_short_soak_keeps_valid_answers_10_mai_s_and_the_server_clean():
    """scripts/bench_soak.py on vLLM (4 min 26 s of the engine suite's 12 at -n 2): opt-in, since each of its checks
    is made in CI by a cheaper test: bad requests' statuses (the two requests and the schema fuzz above, on the
    engines), a short query's answer beside a long one (below), the engines' answers equal 10_mai's on
    transformers (test_vllm_engine.py's test d), and the soak script itself (tests/test_bench_soak.py, on
    transformers)."""
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "scripts/bench_soak.py", "--preset", "cpu", "--backend", "vllm",
                          "--valid", "2", "--bad-per-valid", "4", "--client-timeout", "120", "--ready-timeout", "300",
                          "--server-arg=--kv-cache-gib", "--server-arg=0.25,0.25", "--server-arg=--threads",
                          "--server-arg=1"], cwd=root, capture_output=True, text=True, timeout=900)
    out = run.stdout
    summary = json.JSONDecoder().raw_decode(out[out.rindex("\n{\n") + 1:])[0]  # after vLLM's own log lines
    assert run.returncode == 0 and summary["failures"] == [], summary
    assert summary["answers_equal_10_mai"] == {"clean": 2, "mixed": 2, "long": 2, "of": 2}  # long: beside a long one
    assert summary["bad_statuses"]["over_context"] == [400] and summary["bad_statuses"]["timeout"] == [499]
    assert summary["requests_counted"] == summary["requests_expected"]


def test_a_short_query_behind_a_long_one_is_answered_within_3x_its_alone_latency(vllm_system):
    """Issue 40 on vLLM's terms: both queries active at once (--max-concurrency), the engines' chunked prefill
    (--max-num-batched-tokens 512, --long-prefill-token-threshold 256) interleaving the long prompt's chunks with the
    short one's decode steps; each answer is the one it gets alone."""
    import concurrent.futures

    from test_serving_fairness import SHORT, ask
    from test_serving import serving

    long = "word " * 12_000 + "Which word is it?"  # ~12,000 tokens, within the engines' 16,384
    with serving(vllm_system, threads=8) as (base, _), httpx.Client(base_url=base) as http:
        ask(http, SHORT)
        alone, alone_s = min((ask(http, SHORT) for _ in range(2)), key=lambda r: r[1])
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            behind = pool.submit(ask, http, long)  # first: its prompt is not in the prefix cache yet
            time.sleep(3.0)
            short, short_s = ask(http, SHORT)
            still = not behind.done()
            long_r, long_s = behind.result()
        long_alone = ask(http, long)[0]
    assert still, f"the long query ended ({long_s:.1f} s) before the short one was answered"
    assert short_s <= 3 * alone_s + 1.0, (short_s, alone_s)  # 1 s: more than one 256-token step here
    assert short.json()["choices"][0]["message"]["content"] == alone.json()["choices"][0]["message"]["content"]
    assert long_r.json()["choices"][0]["message"]["content"] == long_alone.json()["choices"][0]["message"]["content"]
    print(f"vllm: short alone {alone_s:.2f} s, behind a long one {short_s:.2f} s; long {long_s:.1f} s")


def test_forty_concurrent_long_queries_leave_a_short_one_its_turn_and_the_server_recovers(vllm_system):
    """Issue 40's second case on vLLM (tests/test_serving_fairness.py's, on the engines): a short query among 40
    long ones is answered within 60 s, as it is alone, and the server drains to nothing once they have gone."""
    from test_serving_fairness import forty_long_and_a_short

    seen = forty_long_and_a_short(vllm_system, leave_after=20.0)
    assert seen["drained"] and seen["short"].status_code == seen["after"].status_code == 200
    assert 1 <= seen["long_active"] <= 7  # one thread of --max-concurrency's 8 kept free for short queries
    assert seen["short_s"] < 60, seen
    assert seen["short"].json()["choices"][0]["message"]["content"] == \
        seen["alone"].json()["choices"][0]["message"]["content"]
