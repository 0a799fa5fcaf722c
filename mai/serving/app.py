"""The HTTP app (FastAPI 0.136 on uvicorn 0.55, the stack of vLLM 0.30's own OpenAI server):

    POST /v1/chat/completions   one question -> the served system's answer, OpenAI's fields + "mai" (route, trace)
    GET  /v1/models             the one served model name
    GET  /health                200 while queries are accepted, else 503
    GET  /metrics               Prometheus text (mai.serving.metrics)

A request is read and checked before it is queued, and a bad one is a 4xx with one line that never reaches the
queue: a body past --max-body-bytes is 413 before it is parsed, JSON nested past api.MAX_JSON_DEPTH is 400, a
request the API does not serve is refused by mai.serving.api, and one whose stages cannot fit their models'
contexts is 400 in vLLM's words (mai.serving.budget; its tokenizing runs off the event loop). Then it is queued
for the worker (mai.serving.worker). While it waits or runs, the
handler listens for the client's disconnect as vLLM's server does (vllm/entrypoints/utils.py,
listen_for_disconnect: the ASGI receive channel yields "http.disconnect"): a client that goes away, or a
query past --request-timeout, sets the query's cancelled flag, so a waiting query is dropped and a running
one stops at its next stage (and, on transformers, at its next token).

The request and response bodies are declared as pydantic models (mai.serving.api) in the OpenAPI document,
GET /openapi.json, which tests/test_serving_fuzz.py fuzzes the live server from.

The API keys, when set (--api-key, one or more, or MAI_API_KEY), guard /v1/* as vLLM's --api-key does:
"Authorization: Bearer <key>" with any of them, else 401; /health and /metrics stay open for probes. The key a
query came with decides its share of the queue and its turn among the keys (mai.serving.worker).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import time
import uuid
from typing import Callable

from fastapi import APIRouter, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from mai import MaiError
from mai.serving import api
from mai.serving.budget import Budget, ContextExceeded
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


@dataclasses.dataclass(frozen=True)
class Settings:
    """What the handlers need besides the system and the worker (app.state.settings)."""

    served: str  # the model name clients send and /v1/models lists
    limits: api.ImageLimits
    api_keys: tuple[str, ...] = ()  # any of them opens /v1/*; none: open
    request_timeout: float = 600.0
    sees_images: bool = True
    on_shutdown: Callable[[], None] | None = None  # the engines' close, after the worker stopped
    max_body_bytes: int = 16 << 20


router = APIRouter()


def create_app(system, worker: Worker, served: str, limits: api.ImageLimits, *, api_key=None,
               request_timeout: float = 600.0, sees_images: bool = True, on_shutdown=None,
               max_body_bytes: int = 16 << 20) -> FastAPI:
    """The app over a ServedSystem (mai.serving.system) and a Worker not yet started: the app's lifespan
    starts it and, at shutdown, stops it (cancelling what it holds) and calls on_shutdown (the engines')."""
    app = FastAPI(title="MAI", version="1", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.system, app.state.worker, app.state.metrics = system, worker, ServerMetrics(worker)
    keys = (api_key,) if isinstance(api_key, str) else tuple(api_key or ())
    app.state.settings = Settings(served, limits, keys, request_timeout, sees_images, on_shutdown, max_body_bytes)
    app.middleware("http")(authorize)
    app.include_router(router)
    app.openapi = lambda: openapi(app)
    return app


def openapi(app: FastAPI) -> dict:
    """FastAPI's document, with the chat request's body declared: the handler reads the raw body itself (its
    size limit comes before any parsing), so FastAPI cannot see the model in its signature."""
    if app.openapi_schema is None:
        doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
        schema = api.ChatCompletionRequest.model_json_schema(ref_template="#/components/schemas/{model}")
        components = doc.setdefault("components", {}).setdefault("schemas", {})
        components.update(schema.pop("$defs", {}))
        # The one model name served (else 404): a fuzzer made from the document then sends it.
        schema["properties"]["model"] = {"anyOf": [{"enum": [app.state.settings.served]}, {"type": "null"}]}
        components["ChatCompletionRequest"] = schema
        doc["paths"]["/v1/chat/completions"]["post"]["requestBody"] = {"required": True, "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/ChatCompletionRequest"}}}}
        app.openapi_schema = doc
    return app.openapi_schema


def _errors(*statuses: int) -> dict:
    return {status: {"model": api.ErrorResponse} for status in statuses}


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI):
    app.state.worker.start()
    try:
        yield
    finally:
        await asyncio.to_thread(app.state.worker.stop)
        if app.state.settings.on_shutdown is not None:
            app.state.settings.on_shutdown()


async def authorize(request: Request, call_next):
    keys = request.app.state.settings.api_keys
    request.state.api_key = None
    if keys and request.url.path.startswith("/v1"):
        given = request.headers.get("authorization", "").encode()
        # Every key compared (no early exit), so the time taken says nothing about which one nearly matched.
        matched = [k for k in keys if hmac.compare_digest(given, f"Bearer {k}".encode())]
        if not matched:
            return error(401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "invalid_api_key",
                         "authentication_error")
        request.state.api_key = matched[0]
    return await call_next(request)


@router.get("/health", response_model=api.Health, responses=_errors(503))
async def health(request: Request):
    state = request.app.state
    if not state.worker.accepting:
        return error(503, "not serving (starting or shutting down)", "not_ready", "server_error")
    return {"status": "ok", "system": state.system.name, "queued": state.worker.depth(), "running": state.worker.busy()}


@router.get("/metrics", response_class=PlainTextResponse)
async def prometheus(request: Request):
    metrics = request.app.state.metrics
    return Response(metrics.render(), media_type=metrics.content_type)


@router.get("/v1/models", response_model=api.ModelList, responses=_errors(401))
async def models(request: Request):
    served, system = request.app.state.settings.served, request.app.state.system
    return {"object": "list", "data": [{"id": served, "object": "model", "created": 0, "owned_by": "mai",
                                        "root": served, "mai": {"system": system.name, **system.models()}}]}


# A stream request's answer is server-sent events (api.stream_events): each event's data is one
# chat.completion.chunk as JSON, then "[DONE]".
SSE_EVENT = {"type": "object", "properties": {"data": {"type": "string"}}, "required": ["data"]}
CHAT_RESPONSES = {200: {"model": api.ChatCompletion, "content": {"text/event-stream": {"schema": SSE_EVENT}}},
                  **_errors(400, 401, 403, 404, 413, 429, 500, 503, 504)}


@router.post("/v1/chat/completions", response_model=api.ChatCompletion, responses=CHAT_RESPONSES)
async def chat_completions(request: Request):
    metrics = request.app.state.metrics
    t0 = time.perf_counter()
    response = await _answer(request)
    if response.status_code != CLIENT_CLOSED:
        metrics.request_seconds.observe(time.perf_counter() - t0)
    metrics.requests.labels(str(response.status_code)).inc()
    return response


async def _answer(request: Request) -> Response:
    """Parse, queue, wait for the answer or the client's disconnect or the timeout, and render the reply."""
    state, settings = request.app.state, request.app.state.settings
    system = state.system  # read per request: a test may swap in another system of the same models
    try:
        raw = await api.read_body(request.stream(), request.headers.get("content-length"), settings.max_body_bytes)
        chat = api.parse_chat(api.parse_json(raw), settings.served, settings.limits, settings.sees_images)
        stages = await asyncio.to_thread(Budget(system).check, chat.question, chat.images, chat.max_tokens)
    except ContextExceeded as err:
        return JSONResponse(err.api_error().body(), status_code=400)
    except api.ApiError as err:
        return JSONResponse(err.body(), status_code=err.status)
    # The key it came with (queue shares, turns across keys) and its size (admission: mai.serving.worker).
    query = Query(f"chatcmpl-{uuid.uuid4().hex}", key=getattr(request.state, "api_key", None),
                  tokens=max((s.prompt_tokens + s.new_tokens for s in stages), default=0))
    try:
        job = state.worker.submit(query, lambda: system.answer(chat.question, chat.images, chat.max_tokens))
    except QueueFull as err:
        return error(429, str(err), "queue_full", "rate_limit_error")
    except NotServing as err:
        return error(503, str(err), "not_ready", "server_error")
    waited = await _wait(request, query, job, settings.request_timeout, state.metrics)
    if isinstance(waited, Response):
        return waited
    state.metrics.answered(waited, job)
    finish = system.finish_reason(waited, chat.max_tokens)
    if chat.stream:
        events = api.stream_events(query.id, settings.served, waited, finish, system.name, chat.include_usage)
        return StreamingResponse(iter(events), media_type="text/event-stream")
    return JSONResponse(api.completion(query.id, settings.served, waited, finish, system.name))


async def _wait(request: Request, query: Query, job, timeout: float, metrics: ServerMetrics):
    """The query's trace, or the Response that ends the request instead: the client left (counted, never
    sent), the timeout passed (504), the query was cancelled at shutdown (503) or failed (400/500). Either
    of the first two sets the query's cancelled flag, so the worker drops or stops it."""
    answer = asyncio.wrap_future(job.future)
    answer.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even when abandoned
    left = asyncio.ensure_future(_disconnected(request))
    try:
        done, _ = await asyncio.wait({answer, left}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
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
        return error(504, f"the query took longer than --request-timeout {timeout:g} s and was cancelled",
                     "timeout", "server_error")
    try:
        return answer.result()
    except Aborted:
        return error(503, "the query was cancelled (the server is shutting down)", "cancelled", "server_error")
    except ContextExceeded as err:  # a transfer prompt whose real reasoning did not fit (Checked)
        return JSONResponse(err.api_error().body(), status_code=400)
    except MaiError as err:
        return error(400, str(err), "invalid_request")
    except Exception as err:  # a bug or an engine failure: one line to the client, the server goes on
        return error(500, f"the query failed: {type(err).__name__}: {' '.join(str(err).split())}",
                     "internal_error", "server_error")
