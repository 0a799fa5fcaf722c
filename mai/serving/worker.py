"""The bounded queue in front of the served system, and the threads that run its queries.

On the transformers backend ONE thread serves the queries in arrival order, each query's cascade stage by
stage (two models on one device: a second thread would only slice the same cores). On the vLLM backend N
threads (--max-concurrency) each run one query's cascade, so that the engines see N queries' stages at once
and batch them. A query waits in the queue until a thread takes it; past --max-queue waiting queries a new
one is refused (QueueFull -> 429), and once the server stops accepting (NotServing -> 503). A query cancelled
while it waits (its client went away, its time ran out) is dropped when its turn comes, never started, and
holds no place in the queue: a full queue drops its cancelled queries before it refuses a new one, so that
clients that send and leave cannot fill it for everyone else.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import threading
import time
from typing import Any, Callable

from mai.serving.query import Aborted, Query, running


class QueueFull(Exception):
    """The queue holds --max-queue waiting queries already."""


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
    def __init__(self, threads: int = 1, max_queue: int = 64):
        if threads < 1 or max_queue < 1:
            raise ValueError("a worker needs at least one thread and room for one waiting query")
        self.threads, self.max_queue = threads, max_queue
        self._waiting: collections.deque[Job] = collections.deque()
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
        return len(self._waiting)

    def busy(self) -> int:
        """Queries whose cascade is running."""
        return len(self._running)

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
            if len(self._waiting) >= self.max_queue:
                self._drop_cancelled()
            if len(self._waiting) >= self.max_queue:
                raise QueueFull(f"the queue is full ({self.max_queue} queries waiting, --max-queue); retry later")
            job = Job(query, run)
            self._waiting.append(job)
            self._cv.notify()
        return job

    def _drop_cancelled(self) -> None:
        """Waiting queries already cancelled leave the queue now, as their turn would drop them (under _cv)."""
        live = collections.deque()
        for job in self._waiting:
            if job.query.cancelled.is_set():
                job.future.set_exception(Aborted(job.query.id))
            else:
                live.append(job)
        self._waiting = live

    def stop(self, timeout: float = 10.0) -> None:
        """Refuse new queries, cancel every waiting and running one, and let the threads end."""
        with self._cv:
            self._accepting, self._stopping = False, True
            for job in [*self._waiting, *self._running]:
                job.query.cancelled.set()
            self._cv.notify_all()
        for thread in self._pool:
            thread.join(timeout)

    def _next(self) -> Job | None:
        with self._cv:
            while not self._waiting and not self._stopping:
                self._cv.wait()
            if not self._waiting:
                return None
            job = self._waiting.popleft()
            if not job.query.cancelled.is_set():
                job.started = time.perf_counter()
                self._running.add(job)
            return job

    def _loop(self) -> None:
        while (job := self._next()) is not None:
            if job.started is None:  # cancelled while it waited: dropped, never started
                job.future.set_exception(Aborted(job.query.id))
                continue
            try:
                with running(job.query):
                    job.query.check()
                    job.future.set_result(job.run())
            except Exception as err:  # the handler turns it into the response (Aborted, MaiError, a bug)
                job.future.set_exception(err)
            finally:
                with self._cv:
                    self._running.discard(job)
