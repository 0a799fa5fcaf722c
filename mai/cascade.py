"""The MAI cascade: mutual verification, then the small model's reasoning, then reasoning transfer.

    (i)   small and large answer with the Simple prompt; if their answers agree (mai.answers.Matcher: the
          paper's "Exact Matching or ANLS (as per benchmark)", or --agree strict), the large model's
          answer is returned.                                                              route "simple"
    (ii)  the small model reasons (Think prompt), and its answer is verified against the large model's
          Simple answer; if they agree, the large model's answer is returned.            route "reasoning"
          verify="answer":    the two-stage answer of Section 5.1 (A_think^s): a second stage continues
                              from the Think call's KV cache and asks for the short answer.
          verify="reasoning": the paper's simplified framework (R_think^s): the answer is read off the
                              reasoning itself ("The answer is ..."); a reasoning that names none has
                              no answer and does not agree.
    (iii) the small model's reasoning, whole or sparse, is prepended to the large model's Simple prompt;
          the large model's answer is returned.                                           route "transfer"
          Sparse transfer ranks the reasoning by the small model's attention, captured in the second
          stage's prefill (verify="answer") or in one forward on the kept cache (mai.transfer).

Every answer carries a trace: its route and, for each model call, the model, prompt mode, tokens and
stage times, plus totals. The large model's output tokens are the cost MAI exists to save.
"""
from __future__ import annotations

import dataclasses
import time

from mai.answers import AGREE_RULES, Matcher
from mai.attention import SparseOptions
from mai.generation import HFGenerator, Request, Result
from mai.transfer import QUERIES, ReasoningAttention, reasoning_attention, sparse_reasoning

ROUTES = ("simple", "reasoning", "transfer")
VERIFY = ("answer", "reasoning")  # Section 5.1's two-stage answer (A_think^s); the simplified framework (R_think^s)
TRANSFER = ("full", "sparse")


@dataclasses.dataclass
class CascadeConfig:
    think_tokens: int = 1024
    answer_tokens: int = 16  # the second stage's short answer
    verify: str = "answer"  # answer: two-stage answer from the cache; reasoning: read off the reasoning
    transfer: str = "full"  # full | sparse
    sparse: SparseOptions | None = None  # layer, delta, heads, sink (needed when transfer == "sparse")
    query: str = "answer"  # which position's attention ranks the reasoning (see mai.transfer)
    agree: str = "paper"  # paper: per benchmark as the paper says; strict: exact (mai.answers)

    def __post_init__(self):
        if self.verify not in VERIFY:
            raise ValueError(f"verify must be one of {VERIFY}, got {self.verify!r}")
        if self.agree not in AGREE_RULES:
            raise ValueError(f"agree must be one of {AGREE_RULES}, got {self.agree!r}")
        if self.query not in QUERIES:
            raise ValueError(f"query must be one of {QUERIES}, got {self.query!r}")
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
    answer: str | None = None  # the answer as verification compared it (Matcher.read)


@dataclasses.dataclass
class Trace:
    route: str
    prediction: str  # raw text of the returned answer
    answer: str  # its extracted form
    calls: list[Call]
    wall_seconds: float
    kept_tokens: int | None = None  # sparse transfer: reasoning tokens handed over
    reasoning_tokens: int | None = None  # transfer: the reasoning's tokens, a closing stop token not counted

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


def attention_call(att: ReasoningAttention, model: str) -> Call:
    """A sparse-transfer capture that ran a forward of its own, as a labelled call of the trace (one
    captured inside the second stage's prefill has none: its cost is in that call)."""
    return Call("small", model, "attention",
                dict(text="", input_tokens=att.input_tokens, output_tokens=0, cached_tokens=att.cached_tokens,
                     times=dict(preprocess=0.0, vision=0.0, prefill=att.seconds, decode=0.0),
                     latency=att.seconds, source=att.source))


class Cascade:
    """MAI over two generators (anything with generate(Request) -> Result); sparse transfer also needs the
    small one's transformers model, for its attention."""

    def __init__(self, small: HFGenerator, large, config: CascadeConfig,
                 small_name: str = "small", large_name: str = "large"):
        self.small, self.large, self.config = small, large, config
        self.names = {"small": small_name, "large": large_name}

    def matcher(self, agreement: type[Matcher], question: str) -> Matcher:
        """The benchmark's agreement rule (a Matcher class, ``Benchmark.agreement``) for one question, under
        the cascade's --agree rule."""
        return agreement(question, self.config.agree)

    def think_request(self, ask: dict) -> Request:
        cfg = self.config
        keep = cfg.verify == "answer" or cfg.transfer == "sparse"  # a second stage or a capture reuses it
        return Request(**ask, mode="think", max_new_tokens=cfg.think_tokens, keep_cache=keep)

    def second_stage_request(self, ask: dict, thought: Result) -> Request:
        """The two-stage answer; its prefill also records the attention sparse transfer may need."""
        cfg = self.config
        capture = (cfg.sparse.layer,) if cfg.transfer == "sparse" and cfg.query == "answer" else ()
        return Request(**ask, mode="answer", max_new_tokens=cfg.answer_tokens, reuse=thought, capture=capture)

    def reasoning_context(self, thought: Result, second: Result | None,
                          post_prompt: str) -> tuple[str, int | None, int, Call | None]:
        """What transfer hands the large model: (context, kept tokens, reasoning tokens, the capture's
        own call or None). Both transfers count the reasoning alike: its tokens without a stop token."""
        return self.reasoning_contexts(thought, second, post_prompt)[self.config.sparse.span
                                                                     if self.config.sparse else "token"]

    def reasoning_contexts(self, thought: Result, second: Result | None, post_prompt: str,
                           spans: tuple[str, ...] | None = None) -> dict[str, tuple]:
        """reasoning_context for each of ``spans`` (SparseOptions.span; default: the configured one) from ONE
        capture, so that the span variants of a sparse transfer differ only in what the selection keeps."""
        cfg = self.config
        n_reasoning = thought.content_tokens
        if cfg.transfer == "full":
            return {"token": (thought.text, None, n_reasoning, None)}
        att = reasoning_attention(self.small, thought, post_prompt, [cfg.sparse.layer], cfg.query, second)
        call = None if att.source == "second stage" else attention_call(att, self.names["small"])
        out = {}
        for span in spans or (cfg.sparse.span,):
            context, kept = sparse_reasoning(self.small.loaded.tokenizer, att,
                                             dataclasses.replace(cfg.sparse, span=span))
            out[span] = (context, kept, n_reasoning, call)
        return out

    def _call(self, role: str, request: Request, calls: list[Call], match: Matcher, mode: str | None = None,
              reasoning: bool = False):
        gen = self.small if role == "small" else self.large
        result: Result = gen.generate(request)
        answer = match.read(result.text, reasoning)
        calls.append(Call(role, self.names[role], mode or request.mode, result.summary(), answer))
        return result, answer

    def answer(self, question: str, images: list, agreement: type[Matcher], post_prompt: str, simple_tokens: int,
               route: str | None = None, think_prompt: str | None = None, simple_prompt: str | None = None) -> Trace:
        """agreement: how answers to this question are read and compared (the benchmark's Matcher class).
        route: force the decision (timing studies, mai.forced): every call of the stages up to that route
        is made as usual, and the cascade ends there whatever the answers say. think_prompt: the Think
        call's user text when the run chose a style (mai.prompts.think_text); simple_prompt: the Simple calls'
        (reasoning transfer's too), mai.prompts.simple_text."""
        if route is not None and route not in ROUTES:
            raise ValueError(f"a forced route must be one of {ROUTES}, got {route!r}")
        cfg, calls = self.config, []
        t0 = time.perf_counter()
        match = self.matcher(agreement, question)
        ask = dict(question=question, images=images, post_prompt=post_prompt, think_prompt=think_prompt,
                   simple_prompt=simple_prompt)
        simple = dict(mode="simple", max_new_tokens=simple_tokens)
        # (i) mutual verification at the Simple prompt.
        _, small_answer = self._call("small", Request(**ask, **simple), calls, match)
        large, large_answer = self._call("large", Request(**ask, **simple), calls, match)
        if self._ends("simple", route, match.agree(small_answer, large_answer)):
            return self._trace("simple", large, match, calls, t0)
        # (ii) the small model reasons; its answer, from the second stage or read off the reasoning, is verified.
        thought, small_answer = self._call("small", self.think_request(ask), calls, match, reasoning=True)
        second = None
        if cfg.verify == "answer":
            second, small_answer = self._call("small", self.second_stage_request(ask, thought), calls, match)
        if self._ends("reasoning", route, match.agree(small_answer, large_answer)):
            return self._trace("reasoning", large, match, calls, t0)
        # (iii) reasoning transfer to the large model's Simple prompt.
        context, kept, n_reasoning, capture = self.reasoning_context(thought, second, post_prompt)
        if capture is not None:
            calls.append(capture)
        thought.cache = None  # the KV cache is not needed any more
        final, _ = self._call("large", Request(**ask, **simple, context=context), calls, match, mode="transfer")
        trace = self._trace("transfer", final, match, calls, t0)
        trace.kept_tokens, trace.reasoning_tokens = kept, n_reasoning
        return trace

    @staticmethod
    def _ends(stage: str, route: str | None, agreed: bool) -> bool:
        """Whether the cascade ends at this stage: the answers agree, or the forced route is this stage."""
        return route == stage if route is not None else agreed

    @staticmethod
    def _trace(route, result: Result, match: Matcher, calls, t0) -> Trace:
        """Trace.answer is the returned text's extracted form, as the benchmark's rows record it."""
        return Trace(route, result.text, match.extract(result.text), calls, time.perf_counter() - t0)
