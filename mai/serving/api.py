"""OpenAI's chat-completions request, read into one MAI question, and the response built from a cascade trace.

MAI answers one question (text, and images for a vision-language pair) with fixed Simple and Think prompts,
so a request is read strictly: one user turn (text parts and image_url parts), no system or earlier turns,
and every mistake is refused in one line (ApiError -> 4xx with OpenAI's error JSON) rather than dropped.
Images come as data: URLs, or as file:// URLs under the one directory the operator allowed; remote URLs are
not fetched (the server reaches no network). Decoding is greedy, the paper's setting: sampling fields
(temperature, top_p, seed) are accepted and have no effect.

Field names and the error object follow OpenAI's API reference (chat.completion, chat.completion.chunk,
{"error": {"message", "type", "param", "code"}}), as vLLM 0.30's server writes them
(vllm/entrypoints/openai/protocol.py in .venv-vllm).
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import io
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

# max_tokens / max_completion_tokens above this are a client's mistake, not a budget: no served call comes near.
MAX_TOKENS_LIMIT = 1 << 20
# Nesting of a request body's JSON: a chat request nests 6 levels (body, messages, message, content, part,
# image_url); deeper is a client's mistake, refused before the parsed body is walked (Python's JSON decoder
# itself stops near 1000 levels with RecursionError, which must not become a 500).
MAX_JSON_DEPTH = 32


class ApiError(Exception):
    """A request the server refuses: HTTP status, one-line message, OpenAI error type and code."""

    def __init__(self, status: int, message: str, code: str, type: str = "invalid_request_error",
                 param: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.type, self.param = status, message, code, type, param

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


@dataclasses.dataclass
class ImageLimits:
    max_bytes: int = 10 * 1024 * 1024  # an encoded image (a data: URL's payload or a file)
    max_pixels: int = 16384 * 32 ** 2  # width x height: mai.images' "chat" policy's upper bound
    allow_dir: Path | None = None  # file:// URLs only under it; None: none allowed
    max_count: int = 1  # images in one request (vLLM's engines refuse more than their limit_mm_per_prompt)


@dataclasses.dataclass
class Chat:
    """One request, read: the question the cascade answers and how the answer is returned."""
    question: str
    images: list  # PIL RGB images, in the order of the message's parts
    max_tokens: int | None
    stream: bool = False
    include_usage: bool = False


def parse_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH):
    too_deep = False
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise ApiError(400, f"the request body is not valid JSON ({err})", "invalid_json") from None
    except RecursionError:
        too_deep = True  # nested past the decoder's own limit: deeper than ours
    if too_deep or json_depth(body) > max_depth:
        raise ApiError(400, f"the request body's JSON nests deeper than {max_depth} levels, the server's limit",
                       "json_too_deep")
    return body


def json_depth(value) -> int:
    """Nesting depth of parsed JSON (a scalar 0, [] or {} 1), walked without recursion."""
    depth, stack = 0, [(value, 0)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, (dict, list)):
            depth = max(depth, level + 1)
            stack.extend((child, level + 1) for child in (value.values() if isinstance(value, dict) else value))
    return depth


async def read_body(chunks, declared: str | None, limit: int) -> bytes:
    """The body from an async iterator of chunks (Starlette's request.stream()), or 413 once it passes
    `limit` bytes: by its Content-Length before anything is read, else while it arrives. The rest of an
    oversized body is read and dropped (never kept), so that the client, still sending, reads the 413."""
    too_large = ApiError(413, f"the request body is larger than the server's limit of {limit} bytes "
                         "(--max-body-bytes)", "body_too_large")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        async for _ in chunks:
            pass
        raise too_large
    parts, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            parts.clear()
            continue
        parts.append(chunk)
    if size > limit:
        raise too_large
    return b"".join(parts)


def parse_chat(body, served: str, limits: ImageLimits, sees_images: bool = True) -> Chat:
    """The request's one question, or an ApiError naming the first thing wrong with it."""
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object", "invalid_body")
    model = body.get("model")
    if model is not None and model != served:
        raise ApiError(404, f"the model '{model}' does not exist; this server serves '{served}' (GET /v1/models)",
                       "model_not_found", param="model")
    n = body.get("n", 1)
    if n not in (1, None):
        raise ApiError(400, f"n={n!r}: MAI returns one answer per request; send n=1 or leave it out",
                       "invalid_n", param="n")
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise ApiError(400, f"stream must be true or false, got {stream!r}", "invalid_stream", param="stream")
    options = body.get("stream_options") or {}
    include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
    max_tokens = _max_tokens(body)
    text, images = _user_turn(body.get("messages"), limits)
    if images and not sees_images:
        raise ApiError(400, "the request has image parts, but the served models are text-only and cannot see "
                       "images; send text parts only", "images_not_supported", param="messages")
    if not text.strip():
        raise ApiError(400, "the user turn has no text: MAI answers a question; add a text part",
                       "empty_question", param="messages")
    return Chat(text, images, max_tokens, stream, include_usage)


def _max_tokens(body: dict) -> int | None:
    for name in ("max_completion_tokens", "max_tokens"):  # the newer name wins, as in OpenAI's API
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS_LIMIT:
            raise ApiError(400, f"{name} must be an integer from 1 to {MAX_TOKENS_LIMIT}, got {value!r}",
                           "invalid_max_tokens", param=name)
        return value
    return None


def _user_turn(messages, limits: ImageLimits) -> tuple[str, list]:
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list of chat messages", "invalid_messages",
                       param="messages")
    roles = [m.get("role") if isinstance(m, dict) else None for m in messages]
    if "user" not in roles:
        raise ApiError(400, "messages has no user turn: send one message with role 'user' holding the question",
                       "no_user_turn", param="messages")
    if roles != ["user"]:
        raise ApiError(400, f"messages has roles {roles}: MAI answers one question with its own fixed prompts; "
                       "send exactly one message, role 'user' (no system or earlier turns)",
                       "unsupported_turns", param="messages")
    content = messages[0].get("content")
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list) or not content:
        raise ApiError(400, "the user turn's content must be a string or a non-empty list of parts",
                       "invalid_content", param="messages")
    texts, images = [], []
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if not isinstance(url, str):
                raise ApiError(400, f"content part {k}: image_url needs a url", "invalid_image", param="messages")
            if len(images) == limits.max_count:  # before decoding another one
                raise ApiError(400, f"content part {k}: more than {limits.max_count} image(s) in one request, the "
                               "server's limit (--max-images)", "too_many_images", param="messages")
            images.append(read_image(url, limits, f"content part {k}"))
        else:
            raise ApiError(400, f"content part {k} has type {kind!r}: only 'text' and 'image_url' parts are served",
                           "unsupported_content", param="messages")
    return "\n".join(texts), images


def read_image(url: str, limits: ImageLimits, where: str) -> Image.Image:
    """A data: URL's or an allowed file's image, decoded to RGB, within the size limits."""
    if url.startswith("data:"):
        header, sep, payload = url[5:].partition(",")
        if not sep or not header.startswith("image/") or not header.endswith(";base64"):
            raise ApiError(400, f"{where}: a data: URL must be data:image/<type>;base64,<data> "
                           f"(got data:{header[:40]})", "invalid_image", param="messages")
        if len(payload) * 3 // 4 > limits.max_bytes:
            raise _too_large(where, len(payload) * 3 // 4, limits)
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(400, f"{where}: the data: URL's payload is not valid base64", "invalid_image",
                           param="messages") from None
    elif url.startswith("file://"):
        data = _allowed_file(urllib.parse.unquote(urllib.parse.urlparse(url).path), limits, where)
    else:
        raise ApiError(400, f"{where}: only data: URLs (and file:// URLs under the server's --allow-image-dir) are "
                       "served; remote URLs are not fetched", "unsupported_image_url", param="messages")
    if len(data) > limits.max_bytes:
        raise _too_large(where, len(data), limits)
    return _decode(data, limits, where)


def _too_large(where: str, size: int, limits: ImageLimits) -> ApiError:
    return ApiError(413, f"{where}: the image has {size} bytes, over the server's limit of {limits.max_bytes} "
                    "(--max-image-bytes)", "image_too_large", param="messages")


def _allowed_file(path: str, limits: ImageLimits, where: str) -> bytes:
    if limits.allow_dir is None:
        raise ApiError(403, f"{where}: local image paths are not served (the server was started without "
                       "--allow-image-dir); send a data: URL", "local_path_not_allowed", param="messages")
    resolved = Path(path).resolve()  # symbolic links and .. resolved before the check
    if not resolved.is_relative_to(limits.allow_dir.resolve()):
        raise ApiError(403, f"{where}: {path} is outside the allowed image directory", "local_path_not_allowed",
                       param="messages")
    try:
        if resolved.stat().st_size > limits.max_bytes:
            raise _too_large(where, resolved.stat().st_size, limits)
        return resolved.read_bytes()
    except OSError as err:
        raise ApiError(400, f"{where}: cannot read {path} ({err.strerror})", "invalid_image",
                       param="messages") from None


def _decode(data: bytes, limits: ImageLimits, where: str) -> Image.Image:
    try:
        img = Image.open(io.BytesIO(data))
        pixels = img.size[0] * img.size[1]  # from the header, before the pixels are decoded
        if pixels > limits.max_pixels:
            raise ApiError(413, f"{where}: the image has {img.size[0]}x{img.size[1]} pixels, over the server's "
                           f"limit of {limits.max_pixels} (--max-image-pixels)", "image_too_large", param="messages")
        img.load()  # a truncated file fails here, not in the worker
        return img.convert("RGB")
    except ApiError:
        raise
    except Exception as err:  # PIL raises many types (UnidentifiedImageError, OSError, SyntaxError, DecompressionBomb)
        reason = " ".join(f"{type(err).__name__}: {err}".split())
        raise ApiError(400, f"{where}: not a readable image ({reason})", "invalid_image", param="messages") from None


# -- responses -------------------------------------------------------------------------------------------

def usage(trace) -> dict:
    """Tokens of every call of both models, as the trace's totals count them; cached_tokens: the prompt
    tokens whose KV a call reused (a second stage's first-stage prefix), counted in prompt_tokens too."""
    t = trace.totals()
    prompt = t["small_input_tokens"] + t["large_input_tokens"]
    completion = t["small_output_tokens"] + t["large_output_tokens"]
    cached = sum(c.result.get("cached_tokens", 0) for c in trace.calls)
    return dict(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion,
                prompt_tokens_details=dict(cached_tokens=cached))


def extension(trace, system: str) -> dict:
    """The one non-OpenAI field: which served system answered, its route and its whole trace."""
    return dict(system=system, route=trace.route, trace=trace.to_dict())


def completion(id: str, model: str, trace, finish_reason: str, system: str) -> dict:
    return dict(id=id, object="chat.completion", created=int(time.time()), model=model,
                choices=[dict(index=0, message=dict(role="assistant", content=trace.prediction),
                              logprobs=None, finish_reason=finish_reason)],
                usage=usage(trace), mai=extension(trace, system))


def stream_events(id: str, model: str, trace, finish_reason: str, system: str, include_usage: bool) -> list[str]:
    """A stream request's server-sent events, all at once: MAI's answer is known only when its cascade ends,
    so the answer is one content chunk (time to first token = time to the answer), then the finish chunk,
    the usage chunk when asked (with the trace), and [DONE]."""
    base = dict(id=id, object="chat.completion.chunk", created=int(time.time()), model=model)
    chunks = [dict(base, choices=[dict(index=0, delta=dict(role="assistant", content=trace.prediction),
                                       logprobs=None, finish_reason=None)]),
              dict(base, choices=[dict(index=0, delta={}, logprobs=None, finish_reason=finish_reason)])]
    if include_usage:
        chunks.append(dict(base, choices=[], usage=usage(trace), mai=extension(trace, system)))
    return [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]


# -- the declared schema (FastAPI's OpenAPI document, GET /openapi.json) ---------------------------------------
# What a client may send and what it gets back, as pydantic models. The handler reads requests with
# parse_chat (its one-line refusals name the first mistake); these models declare the same shapes for the
# schema, which tests/test_serving_fuzz.py fuzzes the live server from and checks every response against.

class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI's other fields are accepted and ignored


class ImageURL(_Open):
    url: str = Field(description="data:image/<type>;base64,<data>, or file:// under --allow-image-dir")
    detail: str | None = None


class TextPart(_Open):
    type: Literal["text"]
    text: str


class ImagePart(_Open):
    type: Literal["image_url"]
    image_url: ImageURL


class UserMessage(_Open):
    role: Literal["user"]
    content: str | list[TextPart | ImagePart] = Field(description="the question: text, or text and image parts")


class StreamOptions(_Open):
    include_usage: bool | None = None


class ChatCompletionRequest(_Open):
    """One question: MAI answers exactly one user turn with its own fixed prompts."""
    model: str | None = None
    messages: list[UserMessage] = Field(min_length=1, max_length=1)
    max_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS_LIMIT)
    max_completion_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS_LIMIT)
    n: Literal[1] | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(None, description="accepted; decoding is greedy")
    top_p: float | None = Field(None, description="accepted; decoding is greedy")
    seed: int | None = Field(None, description="accepted; decoding is greedy")


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None
    code: str | int | None


class ErrorResponse(BaseModel):
    error: ErrorBody


class AssistantMessage(BaseModel):
    role: Literal["assistant"]
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    logprobs: None
    finish_reason: Literal["stop", "length"]


class PromptTokensDetails(BaseModel):
    cached_tokens: int = Field(ge=0)


class Usage(BaseModel):
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)
    prompt_tokens_details: PromptTokensDetails


class MaiExtension(BaseModel):
    system: str
    route: str
    trace: dict[str, Any]


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    choices: list[Choice] = Field(min_length=1, max_length=1)
    usage: Usage
    mai: MaiExtension


class Model(BaseModel):
    id: str
    object: Literal["model"]
    created: int
    owned_by: str
    root: str
    mai: dict[str, Any]


class ModelList(BaseModel):
    object: Literal["list"]
    data: list[Model]


class Health(BaseModel):
    status: Literal["ok"]
    system: str
    queued: int = Field(ge=0)
    running: int = Field(ge=0)
