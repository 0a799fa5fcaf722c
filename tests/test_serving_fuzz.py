"""The server fuzzed from its own schema: schemathesis 4.32 reads GET /openapi.json of a live server on 127.0.0.1
(the cpu preset's tiny random Qwen3-VL pair, transformers backend; tests/test_vllm_serving_limits.py runs the same
on vLLM's CPU engine) and sends what it generates from the declared request bodies, valid ones (positive) and
ones that break the schema (negative). Any 5xx, any status or content type the schema does not declare, any body
that does not conform to its declared model fails the test, and so does a server that is not healthy and idle
afterwards.

Bounded: a fixed seed, EXAMPLES per operation and mode, no Hypothesis deadline (a valid request runs the
cascade: about a second on 2 busy cores), each request's client timeout 60 s.
"""
from __future__ import annotations

import httpx
import pytest

from test_serving import metric, serving, system  # noqa: F401  (the module's fixture)

SEED = 30
EXAMPLES = {"positive": 30, "negative": 30}  # per operation; the chat operation's cost the rest
CHAT = "POST /v1/chat/completions"


def fuzz(base: str, mode: str, examples: int = 30) -> dict[str, list[int]]:
    """Fuzz every operation of the server at `base` in one generation mode; the statuses each got. Fails
    (raises) on the first failed check; the server must be healthy and idle after."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, seed, settings
    from schemathesis.checks import not_a_server_error
    from schemathesis.generation import GenerationMode
    from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                                   status_code_conformance)

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    operations = {op.ok().label: op.ok() for op in schema.get_all_operations()}
    assert set(operations) == {"GET /health", "GET /metrics", "GET /v1/models", CHAT}
    if mode == "negative":  # only the chat request has a body (the GETs have nothing to break)
        operations = {CHAT: operations[CHAT]}
    sent = {}
    for label, operation in operations.items():
        @seed(SEED)
        @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=GenerationMode(mode)))
        def run(case):
            response = case.call_and_validate(base_url=base, checks=checks, timeout=60)
            sent.setdefault(label, []).append(response.status_code)

        run()
    assert all(sent.get(label) for label in operations), sent
    health = httpx.get(f"{base}/health", timeout=10)
    assert health.status_code == 200 and (health.json()["queued"], health.json()["running"]) == (0, 0)
    # Every chat request the fuzzer sent is counted once, by the status it got.
    for status in set(sent[CHAT]):
        assert metric(base, f'mai_requests_total{{status="{status}"}}') == sent[CHAT].count(status)
    return sent


@pytest.mark.parametrize("mode", sorted(EXAMPLES))
def test_schema_fuzzing_finds_no_5xx_and_no_undeclared_response(system, mode):
    with serving(system) as (base, _):
        sent = fuzz(base, mode, EXAMPLES[mode])
    if mode == "positive":  # the seed's valid requests reach the cascade, not only the refusals
        assert 200 in sent[CHAT], sent
