"""The MAI cascade: mutual verification, then the small model's reasoning, then reasoning transfer.

    (i)   small and large answer with the Simple prompt; if their extracted answers agree (the benchmark's
          matcher, mai.answers.answers_agree), the large model's answer is returned.      route "simple"
    (ii)  the small model reasons (Think prompt), then answers in a second stage that continues from its
          KV cache; if that answer agrees with the large model's Simple answer, it is returned.
          verify="reasoning" (the paper's variant) skips the second stage and compares the answer read
          from the reasoning itself ("The answer is ...").                                route "reasoning"
    (iii) the small model's reasoning, whole or sparse, is prepended to the large model's Simple prompt;
          the large model's answer is returned.                                           route "transfer"

Every answer carries a trace: its route and, for each model call, the model, prompt mode, tokens and
stage times, plus totals. The large model's output tokens are the cost MAI exists to save.
"""
from __future__ import annotations

import dataclasses
import time
from mai import answers
from mai.attention import SparseOptions
from mai.generation import HFGenerator, Request, Result
from mai.transfer import reasoning_attention, sparse_reasoning

ROUTES = ("simple", "reasoning", "transfer")
VERIFY = ("answer", "reasoning")
TRANSFER = ("full", "sparse")


@dataclasses.dataclass
class CascadeConfig:
    think_tokens: int = 1024
    answer_tokens: int = 16  # the second stage's short answer
    verify: str = "answer"  # answer: two-stage answer from the cache; reasoning: read it from the reasoning
    transfer: str = "full"  # full | sparse
    sparse: SparseOptions | None = None  # layer, delta, heads, sink (needed when transfer == "sparse")
    query: str = "answer"  # which position's attention ranks the reasoning (see mai.transfer)

    def __post_init__(self):
        if self.verify not in VERIFY:
            raise ValueError(f"verify must be one of {VERIFY}, got {self.verify!r}")
        if self.transfer not in TRANSFER:
            raise ValueError(f"transfer must be one of {TRANSFER}, got {self.transfer!r}")
        if self.transfer == "sparse" and self.sparse is None:
            raise ValueError("sparse transfer needs SparseOptions(layer=..., delta=...)")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["sparse"] = self.sparse.to_dict() if self.sparse else None
        return d


@dataclasses.dataclass
class Call:
    role: str  # small | large
    model: str
    mode: str  # simple | think | answer | transfer | attention
    result: dict  # Result.summary(): text, tokens, stage times, latency
    answer: str | None = None


@dataclasses.dataclass
class Trace:
    route: str
    prediction: str  # raw text of the returned answer
    answer: str  # its extracted form
    calls: list[Call]
    wall_seconds: float
    kept_tokens: int | None = None  # sparse transfer: reasoning tokens handed over
    reasoning_tokens: int | None = None

    def totals(self) -> dict:
        out = {"latency": 0.0}
        for role in ("small", "large"):
            calls = [c for c in self.calls if c.role == role]
            out[f"{role}_calls"] = len(calls)
            out[f"{role}_input_tokens"] = sum(c.result["input_tokens"] for c in calls)
            out[f"{role}_output_tokens"] = sum(c.result["output_tokens"] for c in calls)
            out[f"{role}_latency"] = sum(c.result["latency"] for c in calls)
            out["latency"] += out[f"{role}_latency"]
        return out

    def to_dict(self) -> dict:
        return dict(route=self.route, prediction=self.prediction, answer=self.answer,
                    calls=[dataclasses.asdict(c) for c in self.calls], kept_tokens=self.kept_tokens,
                    reasoning_tokens=self.reasoning_tokens, wall_seconds=self.wall_seconds, **self.totals())


class Cascade:
    """MAI over two generators (anything with generate(Request) -> Result); sparse transfer also needs the
    small one's transformers model, for its attention."""

    def __init__(self, small: HFGenerator, large, config: CascadeConfig,
                 small_name: str = "small", large_name: str = "large"):
        self.small, self.large, self.config = small, large, config
        self.names = {"small": small_name, "large": large_name}

    def _call(self, role: str, request: Request, calls: list[Call], metric: str, mode: str | None = None):
        gen = self.small if role == "small" else self.large
        result: Result = gen.generate(request)
        answer = answers.extract_answer(result.text, metric)
        calls.append(Call(role, self.names[role], mode or request.mode, result.summary(), answer))
        return result, answer

    def answer(self, question: str, images: list, metric: str, post_prompt: str, simple_tokens: int,
               route: str | None = None) -> Trace:
        """route: force the decision (timing studies, mai.forced): every call of the stages up to that route
        is made as usual, and the cascade ends there whatever the answers say."""
        if route is not None and route not in ROUTES:
            raise ValueError(f"a forced route must be one of {ROUTES}, got {route!r}")
        cfg, calls = self.config, []
        t0 = time.perf_counter()
        ask = dict(question=question, images=images, post_prompt=post_prompt)
        # (i) mutual verification at the Simple prompt.
        _, small_answer = self._call("small", Request(**ask, mode="simple", max_new_tokens=simple_tokens),
                                     calls, metric)
        large, large_answer = self._call("large", Request(**ask, mode="simple", max_new_tokens=simple_tokens),
                                         calls, metric)
        if self._ends("simple", route, small_answer, large_answer, metric):
            return self._trace("simple", large, large_answer, calls, t0)
        # (ii) the small model reasons; its answer, from the cache or read off the reasoning, is verified.
        keep = cfg.verify == "answer" or cfg.transfer == "sparse"
        thought, small_answer = self._call("small", Request(**ask, mode="think", max_new_tokens=cfg.think_tokens,
                                                            keep_cache=keep), calls, metric)
        if cfg.verify == "answer":
            _, small_answer = self._call("small", Request(**ask, mode="answer", max_new_tokens=cfg.answer_tokens,
                                                          reuse=thought), calls, metric)
        if self._ends("reasoning", route, small_answer, large_answer, metric):
            return self._trace("reasoning", large, large_answer, calls, t0)
        # (iii) reasoning transfer to the large model's Simple prompt.
        context, kept, n_reasoning = thought.text, None, thought.output_tokens
        if cfg.transfer == "sparse":
            att = reasoning_attention(self.small, thought, post_prompt, [cfg.sparse.layer], cfg.query)
            calls.append(Call("small", self.names["small"], "attention",
                              dict(text="", input_tokens=att.input_tokens, output_tokens=0, cached_tokens=0,
                                   times=dict(preprocess=0.0, vision=0.0, prefill=att.seconds, decode=0.0),
                                   latency=att.seconds)))
            context, kept = sparse_reasoning(self.small.loaded.tokenizer, att, cfg.sparse)
            n_reasoning = len(att.reasoning_ids)
        final, final_answer = self._call("large", Request(**ask, mode="simple", max_new_tokens=simple_tokens,
                                                          context=context), calls, metric, mode="transfer")
        trace = self._trace("transfer", final, final_answer, calls, t0)
        trace.kept_tokens, trace.reasoning_tokens = kept, n_reasoning
        return trace

    @staticmethod
    def _ends(stage: str, route: str | None, small_answer, large_answer, metric: str) -> bool:
        """Whether the cascade ends at this stage: the answers agree, or the forced route is this stage."""
        return route == stage if route is not None else answers.answers_agree(small_answer, large_answer, metric)

    @staticmethod
    def _trace(route, result: Result, answer: str, calls, t0) -> Trace:
        return Trace(route, result.text, answer, calls, time.perf_counter() - t0)
