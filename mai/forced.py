"""Forced routes, for timing studies (experiments/10_mai.py --force-routes).

Random weights never agree, so MAI's latency at the paper's route fractions (Table 10: >= 55% end at the
Simple prompt, up to 15% after the small model's reasoning, < 30% reach reasoning transfer) cannot be
measured by letting the cascade decide. Forced, each example's route is drawn from given fractions,
deterministically from the example's id (the same example takes the same route in every run and every
shard), and the cascade makes every real call of that route (same prompts, the second stage on the kept
KV cache, the transfer prompt), only the decision is forced. Every call then decodes exactly its token
limit (min_new_tokens = max_new_tokens, as experiments/03 profiles), so lengths are --simple-tokens,
--think-tokens and --answer-tokens whatever the weights say. Accuracies of such a run mean nothing.
"""
from __future__ import annotations

import dataclasses
import hashlib

from mai import MaiError
from mai.cascade import ROUTES
from mai.evaluate import trace_output


def parse_fractions(text: str) -> dict[str, float]:
    """'simple=0.55,reasoning=0.15,transfer=0.30' -> {route: fraction}: every route, each >= 0, summing to 1."""
    fractions = {}
    for item in (t.strip() for t in str(text).split(",") if t.strip()):
        route, sep, value = item.partition("=")
        try:
            fractions[route.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep or route.strip() not in ROUTES:
            raise MaiError(f"route fractions are ROUTE=FRACTION with routes {', '.join(ROUTES)}; got '{item}'")
    if set(fractions) != set(ROUTES) or min(fractions.values()) < 0 or abs(sum(fractions.values()) - 1) > 1e-6:
        raise MaiError(f"route fractions must give simple, reasoning and transfer, each >= 0, summing to 1; "
                       f"got '{text}'")
    return fractions


def draw_route(example_id: str, fractions: dict[str, float], seed: int = 0) -> str:
    """The route of one example: a uniform number from a hash of (seed, id), placed on the cumulative fractions."""
    digest = hashlib.sha256(f"{seed}:{example_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2 ** 64
    cumulative = 0.0
    for route in ROUTES:
        cumulative += fractions[route]
        if u < cumulative:
            return route
    return next(r for r in reversed(ROUTES) if fractions[r] > 0)  # u at the top edge of rounding


class ForcedLengths:
    """A generator whose every call decodes exactly its max_new_tokens; anything else is the wrapped one's."""

    def __init__(self, inner):
        self.inner = inner

    @staticmethod
    def _forced(request):
        return dataclasses.replace(request, min_new_tokens=request.max_new_tokens)

    def generate(self, request):
        return self.inner.generate(self._forced(request))

    def generate_batch(self, requests):
        return self.inner.generate_batch([self._forced(r) for r in requests])

    def __getattr__(self, name):  # the model, tokenizer and helpers a cascade reads (sparse transfer)
        return getattr(self.inner, name)


def forced_cascade_system(cascade, fractions: dict[str, float], seed: int = 0, simple_tokens: int | None = None):
    """MAI with each example's route drawn from `fractions` (see the module doc); rows say `forced_route`."""
    def run(example, bench, images):
        route = draw_route(example.id, fractions, seed)
        max_simple = min(bench.max_new_tokens, simple_tokens or bench.max_new_tokens)
        trace = cascade.answer(example.question, images, bench.agreement, bench.post_prompt, max_simple, route=route,
                               think_prompt=example.think_prompt, simple_prompt=example.simple_prompt)
        return {**trace_output(trace), "forced_route": route}
    return run

