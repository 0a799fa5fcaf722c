"""The server's Prometheus metrics, on a registry of its own (prometheus_client 0.26: CollectorRegistry,
generate_latest), so that several apps in one process (tests) do not share counters.

    mai_requests_total{status}                 chat requests answered, by HTTP status ("499": the client left)
    mai_queries_aborted_total{reason}          queries cancelled before their answer: disconnect, timeout
    mai_routes_total{route}                    answered queries by route (simple, reasoning, transfer; a
                                               baseline's route is its system name)
    mai_tokens_total{role,model,kind}          tokens of every call, kind input or output
    mai_queue_depth / mai_queries_running      queries waiting for a worker thread / running
    mai_request_seconds                        arrival to response (queue wait included)
    mai_answer_seconds                         the query's cascade alone, start to answer (the trace's wall time)
    mai_queue_wait_seconds                     arrival to the start of the cascade
"""
from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Seconds: a tiny model's query on a CPU (tens of ms) up to a real pair's reasoning under load (minutes).
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)


class ServerMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, worker=None):
        r = self.registry = CollectorRegistry()
        self.requests = Counter("mai_requests", "Chat completion requests by HTTP status", ["status"], registry=r)
        self.aborted = Counter("mai_queries_aborted", "Queries cancelled before their answer", ["reason"],
                               registry=r)
        self.routes = Counter("mai_routes", "Answered queries by route", ["route"], registry=r)
        self.tokens = Counter("mai_tokens", "Tokens of every model call", ["role", "model", "kind"], registry=r)
        self.request_seconds = Histogram("mai_request_seconds", "Arrival to response", buckets=BUCKETS, registry=r)
        self.answer_seconds = Histogram("mai_answer_seconds", "The query's cascade, start to answer",
                                        buckets=BUCKETS, registry=r)
        self.queue_wait_seconds = Histogram("mai_queue_wait_seconds", "Arrival to the start of the cascade",
                                            buckets=BUCKETS, registry=r)
        if worker is not None:
            Gauge("mai_queue_depth", "Queries waiting for a worker thread", registry=r).set_function(worker.depth)
            Gauge("mai_queries_running", "Queries whose cascade is running", registry=r).set_function(worker.busy)

    def answered(self, trace, job) -> None:
        self.routes.labels(trace.route).inc()
        for call in trace.calls:
            for kind in ("input", "output"):
                self.tokens.labels(call.role, call.model, kind).inc(call.result[f"{kind}_tokens"])
        self.answer_seconds.observe(trace.wall_seconds)
        if job.started is not None:
            self.queue_wait_seconds.observe(job.started - job.enqueued)

    def render(self) -> bytes:
        return generate_latest(self.registry)
