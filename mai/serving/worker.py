"""The bounded queue in front of the served system, the threads that run its queries, and who goes next.

--max-concurrency threads each run one active query's cascade. On the vLLM backend they run at once, so that the
engines see the active queries' stages together and batch them (vLLM's chunked prefill interleaves a long
prompt with the others' decode steps). On the transformers backend the threads take turns (mai.serving.turns):
one computes at a time and the turn passes at every prefill chunk and decoded token, least served first, so a
short query is not held for a long one's whole cascade.

Admission (a query waiting -> active), so that long queries cannot fill the threads or the memory:
- A query's size is its largest stage, prompt + new tokens (mai.serving.budget), what its KV cache may hold.
  A query no larger than one prefill chunk (`short_tokens`) is admitted whenever a thread is free; a larger one
  only while the active queries' sizes and its own sum to at most `max_active_tokens` (--max-active-tokens),
  or when nothing else is active, and never into the last free thread (kept for short ones). A long query that
  does not fit yet waits; shorter ones behind it pass it.
- With API keys (--api-key, several), waiting queries are taken in turn across keys (round robin), oldest first
  within a key; each key may hold at most its share of --max-queue waiting (max_queue // keys), so that one
  key's burst cannot fill the queue for the others (QueueFull -> 429 past it).

Past --max-queue waiting queries a new one is refused (QueueFull -> 429), and once the server stops accepting
(NotServing -> 503). A query cancelled while it waits (its client went away, its time ran out) is dropped when
the queue is next scanned, never started, and holds no place in the queue: a full queue drops its cancelled
queries before it refuses a new one, so that clients that send and leave cannot fill it for everyone else.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import threading
import time
from typing import Any, Callable

from mai.serving.query import Aborted, Query, running
from mai.serving.turns import Ticket, Turns

# A query no larger than this many tokens is "short" (admitted whenever a thread is free): one prefill chunk.
SHORT_TOKENS = 2048


class QueueFull(Exception):
    """The queue holds --max-queue waiting queries already (or the key's share of them)."""


class NotServing(Exception):
    """The server is starting or shutting down."""


@dataclasses.dataclass(eq=False)  # a job is itself, hashable by identity
class Job:
    query: Query
    run: Callable[[], Any]  # the query's whole cascade, called in a worker thread under running(query)
    future: concurrent.futures.Future = dataclasses.field(default_factory=concurrent.futures.Future)
    enqueued: float = dataclasses.field(default_factory=time.perf_counter)
    started: float | None = None  # when a thread took it (perf_counter); None while it waits


class Worker:
    def __init__(self, threads: int = 1, max_queue: int = 64, *, max_active_tokens: int | None = None,
                 short_tokens: int = SHORT_TOKENS, keys: int = 0, turns: Turns | None = None):
        if threads < 1 or max_queue < 1:
            raise ValueError("a worker needs at least one thread and room for one waiting query")
        self.threads, self.max_queue = threads, max_queue
        self.max_active_tokens, self.short_tokens = max_active_tokens, short_tokens
        self.share = max(1, max_queue // keys) if keys > 1 else max_queue  # waiting queries per key
        self.turns = turns  # the transformers backend's; None: the threads run at once (vLLM)
        self._waiting: dict[Any, collections.deque[Job]] = {}  # key -> its waiting jobs, oldest first
        self._order: collections.deque = collections.deque()  # keys with waiting jobs, next in turn first
        self._running: set[Job] = set()
        self._cv = threading.Condition()
        self._accepting = False
        self._stopping = False
        self._pool: list[threading.Thread] = []

    @property
    def accepting(self) -> bool:
        return self._accepting

    def depth(self) -> int:
        """Queries waiting for a thread."""
        return sum(len(jobs) for jobs in self._waiting.values())

    def busy(self) -> int:
        """Queries whose cascade is running (active)."""
        return len(self._running)

    def active_tokens(self) -> int:
        return sum(job.query.tokens for job in self._running)

    def start(self) -> None:
        self._pool = [threading.Thread(target=self._loop, name=f"mai-worker-{i}", daemon=True)
                      for i in range(self.threads)]
        for thread in self._pool:
            thread.start()
        self._accepting = True

    def submit(self, query: Query, run: Callable[[], Any]) -> Job:
        with self._cv:
            if not self._accepting:
                raise NotServing("the server is not accepting queries (starting or shutting down); retry later")
            mine = self._waiting.get(query.key, ())
            if self.depth() >= self.max_queue or len(mine) >= self.share:
                self._drop_cancelled()
                mine = self._waiting.get(query.key, ())
            if self.depth() >= self.max_queue:
                raise QueueFull(f"the queue is full ({self.max_queue} queries waiting, --max-queue); retry later")
            if len(mine) >= self.share:
                raise QueueFull(f"this API key has {self.share} queries waiting, its share of --max-queue "
                                f"{self.max_queue}; retry later")
            job = Job(query, run)
            if query.key not in self._waiting:
                self._waiting[query.key] = collections.deque()
                self._order.append(query.key)
            self._waiting[query.key].append(job)
            self._cv.notify_all()
        return job

    def _drop_cancelled(self) -> None:
        """Waiting queries already cancelled leave the queue now, as their turn would drop them (under _cv)."""
        for key in list(self._order):
            live = collections.deque()
            for job in self._waiting[key]:
                if job.query.cancelled.is_set():
                    job.future.set_exception(Aborted(job.query.id))
                else:
                    live.append(job)
            self._waiting[key] = live
            if not live:
                del self._waiting[key]
                self._order.remove(key)

    def stop(self, timeout: float = 10.0) -> None:
        """Refuse new queries, cancel every waiting and running one, and let the threads end."""
        with self._cv:
            self._accepting, self._stopping = False, True
            for job in [*(j for jobs in self._waiting.values() for j in jobs), *self._running]:
                job.query.cancelled.set()
            self._cv.notify_all()
        for thread in self._pool:
            thread.join(timeout)

    def _fits(self, job: Job) -> bool:
        if job.query.tokens <= self.short_tokens or not self._running:
            return True
        long = sum(1 for j in self._running if j.query.tokens > self.short_tokens)
        if self.threads > 1 and long >= self.threads - 1:  # one thread stays free for short queries
            return False
        return self.max_active_tokens is None or self.active_tokens() + job.query.tokens <= self.max_active_tokens

    def _admissible(self) -> Job | None:
        """The next waiting job that fits, keys in turn, oldest first within a key; it leaves the queue (under
        _cv). Cancelled jobs leave it too."""
        self._drop_cancelled()
        for _ in range(len(self._order)):
            key = self._order[0]
            self._order.rotate(-1)  # this key goes last, whether or not it has a job that fits now
            jobs = self._waiting[key]
            job = next((j for j in jobs if self._fits(j)), None)
            if job is not None:
                jobs.remove(job)
                if not jobs:
                    del self._waiting[key]
                    self._order.remove(key)
                return job
        return None

    def _next(self) -> Job | None:
        with self._cv:
            while not self._stopping:
                job = self._admissible()
                if job is not None:
                    job.started = time.perf_counter()
                    self._running.add(job)
                    return job
                self._cv.wait(0.25)  # woken by a submit or a finished query; the timeout drops cancelled ones
            return None

    def _loop(self) -> None:
        while (job := self._next()) is not None:
            query = job.query
            try:
                with running(query):
                    if self.turns is not None:
                        long = query.tokens > self.short_tokens
                        query.ticket, query.turns = Ticket(query, job.started, long), self.turns
                        self.turns.acquire(query.ticket)
                    query.check()
                    job.future.set_result(job.run())
            except Exception as err:  # the handler turns it into the response (Aborted, MaiError, a bug)
                job.future.set_exception(err)
            finally:
                if self.turns is not None and query.ticket is not None:
                    self.turns.release(query.ticket)
                with self._cv:
                    self._running.discard(job)
                    self._cv.notify_all()
