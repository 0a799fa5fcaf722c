"""The HTTP app (FastAPI 0.136 on uvicorn 0.55, the stack of vLLM 0.30's own OpenAI server):

    POST /v1/chat/completions   one question -> the served system's answer, OpenAI's fields + "mai" (route, trace)
    GET  /v1/models             the one served model name
    GET  /health                200 while queries are accepted, else 503
    GET  /metrics               Prometheus text (mai.serving.metrics)

A request is read and checked on the event loop (mai.serving.api: a bad one is a 4xx with one line and
never reaches the queue), then queued for the worker (mai.serving.worker). While it waits or runs, the
handler listens for the client's disconnect as vLLM's server does (vllm/entrypoints/utils.py,
listen_for_disconnect: the ASGI receive channel yields "http.disconnect"): a client that goes away, or a
query past --request-timeout, sets the query's cancelled flag, so a waiting query is dropped and a running
one stops at its next stage (and, on transformers, at its next token).

The API key, when set (--api-key or MAI_API_KEY), guards /v1/* as vLLM's --api-key does: "Authorization:
Bearer <key>", else 401; /health and /metrics stay open for probes.
"""
from __future__ import annotations

import asyncio
import contextlib
import hmac
import time
import uuid

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from mai import MaiError
from mai.serving import api
from mai.serving.metrics import ServerMetrics
from mai.serving.query import Aborted, Query
from mai.serving.worker import NotServing, QueueFull, Worker

CLIENT_CLOSED = 499  # nginx's status for a client that closed the connection first; never sent, only counted


def error(status: int, message: str, code: str, type: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse(api.ApiError(status, message, code, type).body(), status_code=status)


async def _disconnected(request: Request) -> None:
    """Returns when the client goes away (the body is read already, so receive yields only that)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def create_app(system, worker: Worker, served: str, limits: api.ImageLimits, *, api_key: str | None = None,
               request_timeout: float = 600.0, sees_images: bool = True, on_shutdown=None) -> FastAPI:
    """The app over a ServedSystem (mai.serving.system) and a Worker not yet started: the app's lifespan
    starts it and, at shutdown, stops it (cancelling what it holds) and calls on_shutdown (the engines')."""
    metrics = ServerMetrics(worker)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        worker.start()
        try:
            yield
        finally:
            await asyncio.to_thread(worker.stop)
            if on_shutdown is not None:
                on_shutdown()

    app = FastAPI(title="MAI", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.metrics, app.state.worker, app.state.system = metrics, worker, system

    @app.middleware("http")
    async def authorize(request: Request, call_next):
        if api_key and request.url.path.startswith("/v1"):
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
                return error(401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "invalid_api_key",
                             "authentication_error")
        return await call_next(request)

    @app.get("/health")
    async def health():
        if not worker.accepting:
            return error(503, "not serving (starting or shutting down)", "not_ready", "server_error")
        return {"status": "ok", "system": app.state.system.name, "queued": worker.depth(), "running": worker.busy()}

    @app.get("/metrics")
    async def prometheus():
        return Response(metrics.render(), media_type=metrics.content_type)

    @app.get("/v1/models")
    async def models():
        return {"object": "list", "data": [{"id": served, "object": "model", "created": 0, "owned_by": "mai",
                                            "root": served, "mai": {"system": system.name, **system.models()}}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request):
        t0 = time.perf_counter()
        response = await _answer(request)
        if response.status_code != CLIENT_CLOSED:
            metrics.request_seconds.observe(time.perf_counter() - t0)
        metrics.requests.labels(str(response.status_code)).inc()
        return response

    async def _answer(request: Request) -> Response:
        system = app.state.system  # read per request: a test may swap in another system of the same models
        try:
            chat = api.parse_chat(api.parse_json(await request.body()), served, limits, sees_images)
        except api.ApiError as err:
            return JSONResponse(err.body(), status_code=err.status)
        query = Query(f"chatcmpl-{uuid.uuid4().hex}")
        try:
            job = worker.submit(query, lambda: system.answer(chat.question, chat.images, chat.max_tokens))
        except QueueFull as err:
            return error(429, str(err), "queue_full", "rate_limit_error")
        except NotServing as err:
            return error(503, str(err), "not_ready", "server_error")
        answer = asyncio.wrap_future(job.future)
        answer.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even when abandoned
        left = asyncio.ensure_future(_disconnected(request))
        try:
            done, _ = await asyncio.wait({answer, left}, timeout=request_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the server cancelled the handler (shutdown)
            query.cancelled.set()
            raise
        finally:
            left.cancel()
        if answer not in done:
            query.cancelled.set()
            if left in done:
                metrics.aborted.labels("disconnect").inc()
                return Response(status_code=CLIENT_CLOSED)
            metrics.aborted.labels("timeout").inc()
            return error(504, f"the query took longer than --request-timeout {request_timeout:g} s and was "
                         "cancelled", "timeout", "server_error")
        try:
            trace = answer.result()
        except Aborted:
            return error(503, "the query was cancelled (the server is shutting down)", "cancelled", "server_error")
        except MaiError as err:
            return error(400, str(err), "invalid_request")
        except Exception as err:  # a bug or an engine failure: one line to the client, the server goes on
            return error(500, f"the query failed: {type(err).__name__}: {' '.join(str(err).split())}",
                         "internal_error", "server_error")
        metrics.answered(trace, job)
        finish = system.finish_reason(trace, chat.max_tokens)
        if chat.stream:
            events = api.stream_events(query.id, served, trace, finish, system.name, chat.include_usage)
            return StreamingResponse(iter(events), media_type="text/event-stream")
        return JSONResponse(api.completion(query.id, served, trace, finish, system.name))

    return app
