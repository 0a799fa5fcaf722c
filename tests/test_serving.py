"""`python -m mai serve` on the transformers backend, spoken to with the official openai client and httpx.

The server runs in-process (uvicorn in a thread) on 127.0.0.1 with the cpu preset's tiny random Qwen3-VL pair
(one torch thread): answers mean nothing, routes and token counts are real. Every answer is compared with the
same question run alone the way experiments/10_mai.py runs it (mai.evaluate.cascade_system over plain
HFGenerators of the same models).
"""
from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import dataclasses
import io
import re
import socket
import threading
import time

import httpx
import pytest
import torch
from PIL import Image

from mai.cascade import Cascade
from mai.data import Example
from mai.evaluate import cascade_system, model_system
from mai.generation import HFGenerator
from mai.serving import api
from mai.serving.app import create_app
from mai.serving.system import ServedSystem, StoppableGenerator
from mai.serving.turns import Turns
from mai.serving.worker import Worker

uvicorn = pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")

VALID = {"model": "mai", "messages": [{"role": "user", "content": "Which bar is the tallest?"}]}


@pytest.fixture(scope="module")
def system():
    from mai.serving import server

    threads = torch.get_num_threads()
    args = server.parse(["--preset", "cpu", "--threads", "1"])
    built, close, sees = server.build(args)
    assert close is None and sees
    yield built
    torch.set_num_threads(threads)


def slow(system: ServedSystem, think_tokens: int = 4000) -> ServedSystem:
    """The same models with a reasoning budget the tiny models take tens of seconds to spend (random weights
    never agree, so every query reasons)."""
    cascade = Cascade(system.small, system.large, dataclasses.replace(system.cascade.config, think_tokens=think_tokens),
                      system.cascade.names["small"], system.cascade.names["large"])
    return dataclasses.replace(system, cascade=cascade)


def worker(system, threads: int = 1, max_queue: int = 16, keys: int = 0) -> Worker:
    """The server's worker (mai.serving.server.make_worker): on transformers with more than one thread, the
    active queries take turns (mai.serving.turns); admitted within the larger model's context."""
    turns = None
    if threads > 1 and isinstance(system.small.generator, StoppableGenerator):
        turns = Turns([system.small.loaded, system.large.loaded])
    return Worker(threads, max_queue, max_active_tokens=max(system.small.context, system.large.context), keys=keys,
                  turns=turns)


@contextlib.contextmanager
def serving(system, max_queue: int = 16, limits: api.ImageLimits | None = None, threads: int = 1, keys: int = 0,
            **kw):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(system, worker(system, threads, max_queue, keys), "mai", limits or api.ImageLimits(), **kw)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        thread.join(60)


def client(base: str, **kw) -> "openai.OpenAI":
    return openai.OpenAI(base_url=f"{base}/v1", api_key=kw.pop("api_key", "unused"), max_retries=0, timeout=120, **kw)


def png_url(image: Image.Image) -> str:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def image_message(question: str, image: Image.Image) -> list[dict]:
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": png_url(image)}},
                                         {"type": "text", "text": question}]}]


def metric(base: str, name: str) -> float:
    """One sample of GET /metrics (0 when absent)."""
    text = httpx.get(f"{base}/metrics").text
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def alone(system: ServedSystem, question: str, images: list) -> dict:
    """The question through 10_mai's MAI system (mai.evaluate.cascade_system) over plain generators."""
    small, large = HFGenerator(system.small.loaded, 0), HFGenerator(system.large.loaded, 0)
    cascade = Cascade(small, large, system.cascade.config, *system.models().values())
    example = Example("q", system.bench.name, question, [], images)
    return cascade_system(cascade, system.simple_tokens)(example, system.bench, images)


def test_text_and_image_answers_are_10_mai_s_with_usage_from_the_trace(system, chart_image):
    with serving(system) as (base, _):
        c = client(base)
        assert [m.id for m in c.models.list().data] == ["mai"]
        text = c.chat.completions.create(**VALID)
        image = c.chat.completions.create(model="mai", messages=image_message("Which bar is the tallest?", chart_image))
        for response, images in ((text, []), (image, [chart_image])):
            mai = response.model_extra["mai"]
            trace = mai["trace"]
            ref = alone(system, "Which bar is the tallest?", images)
            assert response.choices[0].message.content == ref["text"] == trace["prediction"]
            assert mai["route"] == ref["route"] == trace["route"]
            assert [call["role"] for call in trace["calls"]] == [call["role"] for call in ref["trace"]]
            prompt = trace["small_input_tokens"] + trace["large_input_tokens"]
            completion = trace["small_output_tokens"] + trace["large_output_tokens"]
            assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (prompt, completion)
            assert response.usage.total_tokens == prompt + completion
            assert response.usage.prompt_tokens == sum(c["result"]["input_tokens"] for c in trace["calls"])
        # The image's tokens reach the prompt: the image request's Simple prompt is longer.
        assert image.model_extra["mai"]["trace"]["calls"][0]["result"]["input_tokens"] > \
            text.model_extra["mai"]["trace"]["calls"][0]["result"]["input_tokens"]
        routes = [r.model_extra["mai"]["route"] for r in (text, image)]
        for route in set(routes):
            assert metric(base, f'mai_routes_total{{route="{route}"}}') == routes.count(route)
        assert metric(base, 'mai_requests_total{status="200"}') == 2
        out = sum(r.usage.completion_tokens for r in (text, image))
        assert out == sum(metric(base, f'mai_tokens_total{{kind="output",model="{m}",role="{r}"}}')
                          for r, m in system.models().items())
        # A stream request: the same answer, in one chunk, with the usage chunk when asked.
        chunks = list(c.chat.completions.create(**VALID, stream=True, stream_options={"include_usage": True}))
        assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == \
            text.choices[0].message.content
        assert chunks[-1].usage.completion_tokens == text.usage.completion_tokens


def test_a_concurrent_burst_answers_each_query_as_alone(system, chart_image):
    questions = [("What is the highest value?", []), ("Is a tomato a fruit?", []), ("How many bars?", []),
                 ("Which bar is red?", [chart_image]), ("What is the sum?", [chart_image]),
                 ("Which is lowest?", [chart_image.rotate(90)])]
    with serving(system, threads=8) as (base, app):  # all six active at once, in turns
        c = client(base)

        def ask(q):
            question, images = q
            messages = image_message(question, images[0]) if images else [{"role": "user", "content": question}]
            return c.chat.completions.create(model="mai", messages=messages)

        with concurrent.futures.ThreadPoolExecutor(len(questions)) as pool:
            responses = list(pool.map(ask, questions))
        assert metric(base, 'mai_requests_total{status="200"}') == len(questions)
        assert app.state.worker.turns.switches > len(questions)  # they were interleaved, not run one by one
    for (question, images), response in zip(questions, responses):
        ref = alone(system, question, images)
        assert response.choices[0].message.content == ref["text"]
        assert response.model_extra["mai"]["route"] == ref["route"]


def test_a_baseline_system_answers_as_10_mai_s_baseline(system):
    large_r = dataclasses.replace(system, name="large-R")
    with serving(large_r) as (base, _):
        response = client(base).chat.completions.create(**VALID)
    example = Example("q", system.bench.name, VALID["messages"][0]["content"], [], [])
    ref = model_system(HFGenerator(system.large.loaded, 0).generate, "large", "think", system.think_tokens,
                       system.simple_tokens)(example, system.bench, [])
    assert response.choices[0].message.content == ref["text"]
    assert response.model_extra["mai"]["route"] == "large-R"
    assert response.usage.completion_tokens == ref["output_tokens"]


def noise_png(side: int) -> str:
    return png_url(Image.frombytes("RGB", (side, side), bytes(torch.randint(0, 256, (side * side * 3,),
                                                                           dtype=torch.uint8).tolist())))


def test_each_bad_request_is_one_line_and_the_server_keeps_serving(system, tmp_path):
    outside = tmp_path / "outside.png"
    Image.new("RGB", (8, 8)).save(outside)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    user = lambda content: {"model": "mai", "messages": [{"role": "user", "content": content}]}  # noqa: E731
    image = lambda url: user([{"type": "image_url", "image_url": {"url": url}},  # noqa: E731
                              {"type": "text", "text": "What is shown?"}])
    cases = [
        (b'{"model": "mai", "messages": [', 400, "invalid_json"),
        ({**VALID, "model": "gpt-4o"}, 404, "model_not_found"),
        ({"model": "mai", "messages": [{"role": "system", "content": "Be brief."}]}, 400, "no_user_turn"),
        ({"model": "mai", "messages": []}, 400, "invalid_messages"),
        (image("data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nnot a png").decode()), 400,
         "invalid_image"),
        (image("data:image/png;base64,@@@"), 400, "invalid_image"),
        (image(noise_png(200)), 413, "image_too_large"),
        (image("data:text/plain;base64," + base64.b64encode(b"hello").decode()), 400, "invalid_image"),
        (image(f"file://{outside}"), 403, "local_path_not_allowed"),
        (image(f"file://{allowed}/../outside.png"), 403, "local_path_not_allowed"),
        (image("https://example.com/a.png"), 400, "unsupported_image_url"),
        ({**VALID, "max_tokens": 0}, 400, "invalid_max_tokens"),
        ({**VALID, "max_tokens": "8"}, 400, "invalid_max_tokens"),
        ({**VALID, "max_completion_tokens": api.MAX_TOKENS_LIMIT + 1}, 400, "invalid_max_tokens"),
        ({**VALID, "n": 2}, 400, "invalid_n"),
        (user([{"type": "image_url", "image_url": {"url": png_url(Image.new("RGB", (8, 8)))}}] * 2
              + [{"type": "text", "text": "Which is larger?"}]), 400, "too_many_images"),
    ]
    limits = api.ImageLimits(max_bytes=20_000, allow_dir=allowed)
    with serving(system, limits=limits) as (base, _), httpx.Client(base_url=base, timeout=120) as http:
        for body, status, code in cases:
            r = (http.post("/v1/chat/completions", content=body) if isinstance(body, bytes)
                 else http.post("/v1/chat/completions", json=body))
            error = r.json()["error"]
            assert (r.status_code, error["code"]) == (status, code), error
            assert error["message"] and "\n" not in error["message"]
            ok = http.post("/v1/chat/completions", json={**VALID, "max_tokens": 2})
            assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] is not None
            assert ok.json()["mai"]["trace"]["calls"][1]["result"]["output_tokens"] <= 2
        assert metric(base, 'mai_requests_total{status="200"}') == len(cases)


def test_an_allowed_local_image_equals_its_data_url(system, tmp_path, chart_image):
    chart_image.save(tmp_path / "chart.png")
    with serving(system, limits=api.ImageLimits(allow_dir=tmp_path)) as (base, _):
        c = client(base)
        by_path = c.chat.completions.create(model="mai", messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"file://{tmp_path}/chart.png"}}, {"type": "text", "text": "Q?"}]}])
        by_data = c.chat.completions.create(model="mai", messages=image_message("Q?", chart_image))
    calls = [[(c["result"]["text"], c["result"]["input_tokens"], c["result"]["output_tokens"])
              for c in r.model_extra["mai"]["trace"]["calls"]] for r in (by_path, by_data)]
    assert calls[0] == calls[1]
    assert by_path.choices[0].message.content == by_data.choices[0].message.content


def test_the_api_key_guards_v1_as_vllm_s_does(system):
    with serving(system, api_key="sesame") as (base, _):
        with pytest.raises(openai.AuthenticationError):
            client(base, api_key="wrong").chat.completions.create(**VALID)
        assert httpx.get(f"{base}/health").status_code == 200  # probes stay open
        assert client(base, api_key="sesame").chat.completions.create(**VALID).choices[0].message.content is not None


def test_a_client_that_disconnects_frees_the_worker(system):
    with serving(slow(system)) as (base, app):
        with pytest.raises(httpx.TimeoutException):
            httpx.post(f"{base}/v1/chat/completions", json=VALID, timeout=2.0)
        # The query's 4000-token reasoning (about a minute here) stops at its next token once the client is gone.
        t0 = time.perf_counter()
        while metric(base, "mai_queries_running") and time.perf_counter() - t0 < 20:
            time.sleep(0.1)
        assert metric(base, "mai_queries_running") == 0
        assert metric(base, 'mai_queries_aborted_total{reason="disconnect"}') == 1
        assert metric(base, 'mai_requests_total{status="499"}') == 1
        app.state.system = system  # the cpu preset's own budget again: the next query is answered at once
        r = httpx.post(f"{base}/v1/chat/completions", json=VALID, timeout=120)
        assert r.status_code == 200, r.text
        assert r.json()["mai"]["trace"]["wall_seconds"] < 30


def test_a_full_queue_answers_429_and_a_timeout_504(system):
    with serving(slow(system), max_queue=1, request_timeout=6) as (base, app), httpx.Client(base_url=base) as http:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first = pool.submit(http.post, "/v1/chat/completions", json=VALID, timeout=60)
            while metric(base, "mai_queries_running") < 1:
                time.sleep(0.05)
            second = pool.submit(http.post, "/v1/chat/completions", json=VALID, timeout=60)
            while metric(base, "mai_queue_depth") < 1:
                time.sleep(0.05)
            full = http.post("/v1/chat/completions", json=VALID, timeout=60)
            assert full.status_code == 429
            assert full.json()["error"]["code"] == "queue_full" and "--max-queue" in full.json()["error"]["message"]
            # Both outlive --request-timeout: the running one is cut short, the waiting one dropped unstarted.
            assert [f.result().status_code for f in (first, second)] == [504, 504]
        t0 = time.perf_counter()
        while metric(base, "mai_queries_running") and time.perf_counter() - t0 < 20:
            time.sleep(0.1)
        assert metric(base, 'mai_queries_aborted_total{reason="timeout"}') == 2
        assert metric(base, 'mai_requests_total{status="429"}') == 1
        app.state.system = system
        assert http.post("/v1/chat/completions", json=VALID, timeout=120).status_code == 200


@pytest.mark.parametrize("flags, message", [
    (["--max-concurrency", "0"], "--max-concurrency must be at least 1"),
    (["--max-active-tokens", "0"], "--max-active-tokens must be at least 1"),
    (["--max-model-len", "all"], "--max-model-len: wants a number of tokens or 'checkpoint'"),
    (["--max-queue", "0"], "--max-queue must be at least 1"),
    (["--max-images", "0"], "--max-images must be at least 1"),
    (["--max-body-bytes", "0"], "--max-body-bytes must be at least 1"),
    (["--max-model-len", "0"], "--max-model-len must be at least 1"),
    (["--prefill-chunk", "-1"], "--prefill-chunk must be 0 (no chunks) or a number of tokens"),
    (["--port", "70000"], "--port must lie in 1..65535"),
    (["--request-timeout", "0"], "--request-timeout must be a positive number"),
    (["--kv-cache-gib", "1"], "--kv-cache-gib: wants SMALL,LARGE"),
    (["--benchmark", "nope"], "unknown benchmark 'nope'"),
    (["--allow-image-dir", "/no/such/dir"], "--allow-image-dir /no/such/dir is not a directory"),
    (["--system", "huge-R"], "argument --system: invalid choice"),
    pytest.param(["--backend", "vllm"], "the vLLM backend needs vllm", marks=pytest.mark.skipif(
        __import__("importlib").util.find_spec("vllm") is not None, reason="vLLM is installed here")),
])
def test_a_bad_flag_stops_the_server_in_one_line_before_any_model_loads(flags, message, capsys):
    from mai.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["serve", "--preset", "cpu", *flags])
    assert stop.value.code in (1, 2)
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def test_an_image_for_text_only_models_is_refused():
    body = {"messages": image_message("What is shown?", Image.new("RGB", (8, 8)))}
    with pytest.raises(api.ApiError) as refused:
        api.parse_chat(body, "mai", api.ImageLimits(), sees_images=False)
    assert (refused.value.status, refused.value.code) == (400, "images_not_supported")
    assert api.parse_chat(body, "mai", api.ImageLimits()).images[0].size == (8, 8)


def test_images_past_the_request_limit_are_refused_and_within_it_kept_in_order():
    parts = [{"type": "image_url", "image_url": {"url": png_url(Image.new("RGB", (8 + k, 8)))}} for k in range(3)]
    body = {"messages": [{"role": "user", "content": parts + [{"type": "text", "text": "Which is widest?"}]}]}
    with pytest.raises(api.ApiError) as refused:
        api.parse_chat(body, "mai", api.ImageLimits(max_count=2))
    assert (refused.value.status, refused.value.code) == (400, "too_many_images")
    assert "content part 2" in refused.value.message and "--max-images" in refused.value.message
    chat = api.parse_chat(body, "mai", api.ImageLimits(max_count=3))
    assert [im.size for im in chat.images] == [(8, 8), (9, 8), (10, 8)]
