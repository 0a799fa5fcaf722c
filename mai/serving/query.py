"""One served query, seen by the worker thread that runs its cascade and by the engine requests it makes.

The cascade (mai.cascade) is synchronous: each stage is a blocking ``generate(request)``. The server runs one
query's cascade in a worker thread under ``running(query)``; a generator that talks to an engine reads
``current()`` to tag its engine requests with the query's id, so that a client that goes away (the server
sets ``query.cancelled``) gets every engine request of its query aborted, and the blocked stage raises
``Aborted`` instead of returning.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading


class Aborted(Exception):
    """The query was cancelled (its client disconnected, or the server is stopping) before it finished."""


@dataclasses.dataclass
class Query:
    id: str
    cancelled: threading.Event = dataclasses.field(default_factory=threading.Event)
    key: str | None = None  # the API key it came with (per-key queue shares and turns), None without keys
    tokens: int = 0  # its largest stage, prompt + new tokens (mai.serving.budget): what it holds while active
    ticket: object = None  # its mai.serving.turns.Ticket while it runs on the transformers backend's turns
    turns: object = None  # the mai.serving.turns.Turns it takes turns in

    def check(self) -> None:
        """Between stages: stop here if the query was cancelled."""
        if self.cancelled.is_set():
            raise Aborted(self.id)

    def pause(self) -> None:
        """A yield point (after a prefill chunk, after a decoded token): another active query may take its turn
        here (mai.serving.turns); then stop if this one was cancelled."""
        if self.turns is not None:
            self.turns.pause(self.ticket)
        self.check()

    @contextlib.contextmanager
    def holding(self):
        """Keep the turn through the block (an attention capture changes the model for every caller)."""
        if self.ticket is None:
            yield
            return
        self.ticket.holds += 1
        try:
            yield
        finally:
            self.ticket.holds -= 1


_current: contextvars.ContextVar[Query | None] = contextvars.ContextVar("mai_serving_query", default=None)


def current() -> Query | None:
    """The query whose cascade this thread is running, or None outside the server (experiments, tests)."""
    return _current.get()


@contextlib.contextmanager
def running(query: Query):
    token = _current.set(query)
    try:
        yield query
    finally:
        _current.reset(token)
