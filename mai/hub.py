"""Is the Hugging Face hub reachable? Answered in seconds, not after huggingface_hub's retries.

huggingface_hub retries a failed request five times with exponential backoff (about 25 s before
`load_dataset` or `from_pretrained` gives up on a machine without network). Datasets and checkpoints
ask `unreachable()` first and turn its answer into one clear line.
"""
from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlparse

PROBE_ENV = "MAI_HUB_PROBE_TIMEOUT"  # seconds for the reachability probe; 0 disables it


def offline_mode() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_DATASETS_OFFLINE", "0") in ("1", "true", "TRUE")


def proxy_configured() -> bool:
    return any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"))


def probe(timeout: float) -> str | None:
    """None when a TCP connection to the hub endpoint opens within `timeout` s, else the reason.

    DNS lookups have no timeout of their own, hence the thread.
    """
    from huggingface_hub import constants

    url = urlparse(constants.ENDPOINT)
    host = url.hostname or "huggingface.co"
    port = url.port or (80 if url.scheme == "http" else 443)
    result: list[str | None] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(None)
        except OSError as exc:
            result.append(f"{host}:{port} unreachable ({type(exc).__name__}: {exc})")

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    if not result:
        return f"{host}:{port} did not answer within {timeout:g} s"
    return result[0]


def unreachable() -> str | None:
    """Why the hub cannot be reached, or None (reachable, or offline mode / a proxy: let the library decide)."""
    if offline_mode() or proxy_configured():
        return None
    timeout = float(os.environ.get(PROBE_ENV, "5"))
    return probe(timeout) if timeout > 0 else None


def connection_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean 'no route to the hub' across huggingface_hub, httpx and requests."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

        types += [LocalEntryNotFoundError, OfflineModeIsEnabled]
    except ImportError:  # pragma: no cover - older huggingface_hub
        pass
    try:
        import httpx

        types.append(httpx.TransportError)
    except ImportError:  # pragma: no cover
        pass
    try:
        import requests

        types += [requests.exceptions.ConnectionError, requests.exceptions.Timeout]
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)
