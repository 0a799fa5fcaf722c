"""Turns: on the transformers backend the active queries take turns on the one set of cores, a prefill chunk or a
decoded token at a time, so that a short query waits for about one step of each query ahead of it, not for
their whole cascades.

Each active query runs its cascade in its own worker thread (mai.serving.worker), but only the thread that holds
the turn computes. The holder gives the turn up at its yield points (Query.pause, called by
mai.serving.system.StoppableGenerator after each prefill chunk and each decoded token) and waits until the
scheduler hands it back. Between two yield points a query runs undisturbed, so each query makes exactly the
forward passes it makes alone, in order, and its greedy tokens are the same. What a model keeps between forward
passes (Qwen's M-RoPE offsets, Family.position_state) is saved with the query when it gives the turn up and put
back when it takes the turn again. A query that is recording attention (Request.capture swaps the model's
attention function) keeps the turn until that call ends.

Policy: short queries first, least attained service within each, with ageing. The next turn goes to the waiting
query with the smallest
    attained + (HEADSTART if long) - AGEING * (now - started)
where attained is the time it has held the turn, started when it became active, and a query is long when its
largest stage (prompt + new tokens) is more than one prefill chunk (mai.serving.worker). A new short query has
attained nothing, so it runs at once (after the holder's current step) and keeps the turn while it stays the
least served: it finishes in about its own time even behind long ones. The prompt's length is the one thing
known of a query's work before it runs (how long MAI's cascade reasons is not), so a long query starts as if it
had been served HEADSTART seconds already: young long queries, which have had little service yet, do not share
the turn with a short one that came after them. Equal long queries share the cores in turn. Ageing bounds
starvation: every second a query waits lowers its key by AGEING, so a long query that short ones keep overtaking
gets the turn back within HEADSTART / AGEING seconds. A cancelled query is served first: it raises Aborted at
once, unwinds and leaves.
"""
from __future__ import annotations

import threading
import time

# Seconds of priority a query gains per second since it became active, and the service a long query is
# counted as having had when it starts (see the module doc).
AGEING = 0.1
HEADSTART = 20.0


class Ticket:
    """One active query's place in the turns."""

    def __init__(self, query, started: float | None = None, long: bool = False):
        self.query, self.long = query, long
        self.started = time.perf_counter() if started is None else started
        self.attained = 0.0  # seconds it has held the turn
        self.since: float | None = None  # when it took the turn it holds (None: not holding)
        self.state: list | None = None  # the models' position state when it gave the turn up
        self.holds = 0  # > 0: pause() keeps the turn (an attention capture is running)

    def key(self, now: float) -> float:
        if self.query.cancelled.is_set():
            return float("-inf")
        return self.attained + HEADSTART * self.long - AGEING * (now - self.started)


class Turns:
    def __init__(self, models=()):
        self._cv = threading.Condition()
        self._holder: Ticket | None = None
        self._last: Ticket | None = None  # the previous holder
        self._wanting: list[Ticket] = []
        self.models = list(models)  # mai.models.LoadedModel: whose position state travels with the turn
        self.longest = 0.0  # the longest step between two yield points (s): what a query waits behind another
        self.switches = 0  # times the turn passed from one query to another

    def acquire(self, ticket: Ticket) -> None:
        with self._cv:
            self._wait(ticket)
        self._restore(ticket)

    def release(self, ticket: Ticket) -> None:
        with self._cv:
            if self._holder is not ticket:
                return
            self._account(ticket)
            self._holder = None
            self._pick()

    def pause(self, ticket: Ticket) -> None:
        """A yield point: keep the turn while no other query wants it (or while an attention capture runs);
        else give it to the query with the smallest key, which may be this one again."""
        if self._holder is not ticket:
            return
        if ticket.holds or not self._wanting:
            self._account(ticket)  # a step ends here even when nobody waits: `longest` is one step's time
            ticket.since = time.perf_counter()
            return
        self._save(ticket)
        with self._cv:
            self._account(ticket)
            self._holder = None
            self._wanting.append(ticket)
            self._pick()
            self._wait(ticket)
        self._restore(ticket)
        ticket.query.check()  # cancelled while it waited: stop here (Aborted), holding the turn to unwind

    def _wait(self, ticket: Ticket) -> None:  # under _cv
        if ticket not in self._wanting and self._holder is not ticket:
            self._wanting.append(ticket)
        self._pick()
        while self._holder is not ticket:
            self._cv.wait(0.05)
            self._pick()  # a waiting query cancelled since: it goes first
        ticket.since = time.perf_counter()

    def _pick(self) -> None:  # under _cv
        if self._holder is None and self._wanting:
            now = time.perf_counter()
            best = min(self._wanting, key=lambda t: t.key(now))
            self._wanting.remove(best)
            self._holder = best
            self.switches += best is not self._last
            self._last = best
            self._cv.notify_all()

    def _account(self, ticket: Ticket) -> None:  # under _cv
        held = time.perf_counter() - ticket.since
        ticket.attained += held
        self.longest = max(self.longest, held)
        ticket.since = None

    def _save(self, ticket: Ticket) -> None:
        ticket.state = [{name: getattr(lm.model.model, name, None) for name in lm.family.position_state}
                        for lm in self.models]

    def _restore(self, ticket: Ticket) -> None:
        if ticket.state is None:
            return
        for lm, state in zip(self.models, ticket.state):
            for name, value in state.items():
                setattr(lm.model.model, name, value)
