"""The issue's two requests against the server on vLLM's CPU engine (mai.serving.vllm_engine): the cpu preset's
tiny random Qwen3-VL pair, both engines in this process's event loop, served in-process on 127.0.0.1 as
tests/test_serving.py serves the transformers backend. The context checked is each engine's own
(model_config.max_model_len: 16384 here, the server's default on vllm).

    .venv-vllm/bin/python -m pytest -q -m vllm_engine tests/test_vllm_serving_limits.py
"""
import time

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
