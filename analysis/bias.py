"""How one-sided a model's answers are, beside what that one-sidedness scores (issue 37, part 3).

A model that gives one answer to almost every question scores the references' base rate of that answer and
agrees with any other model exactly as often as the other gives it: its accuracy and its agreements say
nothing about the questions. So every table that counts an accuracy or an agreement shows, per model, prompt
and task:

- the majority answer and its share of the answers (``Majority``), flagged "constant" at CONSTANT or above;
- the base rate: the share of questions whose reference is that answer (what always giving it would score);
- for a short (Simple) answer, how often it ran into its token cap (``cap_hits``): a cut-off answer is read
  for whatever number or option it reached, so agreements on it can be agreements on noise.

Two readings of an answer, each where it is what counts: ``scored_answer`` is the benchmark's own scoring
reading (lm-eval's flexible-extract: what the accuracy column scores, Table 7); the cascade's trace records
its matcher's reading (what mutual verification compares, analysis/claims.py's route rows).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from mai.benchmarks import get_benchmark
from mai.benchmarks._bbh import FALLBACK, BBHScoring
from mai.benchmarks.gsm8k import GSM8K, flexible
from mai.data import as_list
from mai.metrics import lmms_eval_response

CONSTANT = 0.90  # at or above this share of one answer a model is "constant" (the bound)
NONE = "(none)"  # an answer that reads as nothing: counted as an answer of its own, so a mute model is seen


@dataclass(frozen=True)
class Majority:
    """The most common answer of n, its count, and how many of the n questions it is the reference of."""
    answer: str
    count: int
    n: int
    base: int  # questions whose reference is `answer` (what answering it every time scores)

    @property
    def share(self) -> float:
        return self.count / self.n if self.n else float("nan")

    @property
    def base_rate(self) -> float:
        return self.base / self.n if self.n else float("nan")

    @property
    def constant(self) -> bool:
        return self.n > 0 and self.share >= CONSTANT

    def text(self, who: str = "") -> str:
        """"0.5B-S 'no' 200/200 (base rate 52%), constant"."""
        head = f"{who} " if who else ""
        flag = ", constant" if self.constant else ""
        return f"{head}'{self.answer}' {self.count}/{self.n} (base rate {100 * self.base_rate:.0f}%){flag}"


def scored_answer(bench, row: dict) -> str:
    """The answer the benchmark's accuracy scores in a row's raw output: BBH's and GSM8K's lm-eval
    flexible-extract; for another benchmark (scored on the whole response) the response itself."""
    response = lmms_eval_response(row.get("prediction") or "")
    if isinstance(bench, BBHScoring):
        answer = bench.reference_extract(response, row.get("question"), row.get("meta") or {})
    elif isinstance(bench, GSM8K):
        answer = flexible(response)
    else:
        answer = " ".join(response.split())
    return NONE if not answer or answer == FALLBACK else answer


def majority_scored(rows: list[dict]) -> Majority | None:
    """The majority of the rows' scored answers (rows of one benchmark, errors left out); its base rate is
    the benchmark's own score of that answer against each question's references."""
    ok = [r for r in rows if not r.get("error")]
    if not ok:
        return None
    bench = get_benchmark(ok[0]["benchmark"])
    answers = [scored_answer(bench, r) for r in ok]
    top, count = _top(answers)
    base = 0 if top == NONE else sum(
        bench.score(top, r["references"], r.get("question"), r.get("meta") or {}) for r in ok)
    return Majority(top, count, len(ok), int(base))


def majority_read(bench_name: str, answers: list[tuple[str, dict]]) -> Majority | None:
    """The majority of answers as the cascade's matcher read them ((read answer, its row) pairs: the trace
    records the reading); its base rate counts the questions whose reference the matcher reads as the same
    answer."""
    if not answers:
        return None
    bench = get_benchmark(bench_name)
    top, count = _top([a or NONE for a, _ in answers])
    base = 0
    if top != NONE:
        for _, row in answers:
            matcher = bench.matcher(row.get("question") or "")
            base += any(matcher.agree(top, matcher.read(ref)) for ref in as_list(row["references"]))
    return Majority(top, count, len(answers), base)


def reference_majority(rows: list[dict]) -> Majority | None:
    """The references' most common answer (one row a question): the best a constant answer could score."""
    seen = {}
    for r in rows:
        seen.setdefault(r["example_id"], as_list(r["references"])[0])
    if not seen:
        return None
    top, count = _top(list(seen.values()))
    return Majority(top, count, len(seen), count)


def simple_cap(config: dict, bench) -> int:
    """The token cap of a Simple answer: the run's --simple-tokens, never above the benchmark's own."""
    return min(config.get("simple_tokens") or bench.max_new_tokens, bench.max_new_tokens)


def cap_hits(tokens: list[int], cap: int) -> tuple[int, int]:
    """(answers that used every token of their cap, answers)."""
    return sum(t >= cap for t in tokens), len(tokens)


def _top(answers: list[str]) -> tuple[str, int]:
    """The most common answer and its count; a tie goes to the answer first given (stable across rebuilds)."""
    counts = Counter(answers)
    best = max(counts.values())
    return next(a for a in answers if counts[a] == best), best


# The trace mode of the small model's second answer, per MAI verification variant: the two-stage answer
# continues the reasoning's cache (Sec. 5.1); the simplified framework reads the reasoning itself.
SECOND_STAGE = {"answer": "answer", "reasoning": "think"}


@dataclass(frozen=True)
class Side:
    """One side of an agreement MAI counts: whose answers, their majority, and (a Simple answer) cap hits."""
    who: str
    majority: Majority
    cap: tuple[int, int] | None = None  # (answers that used their whole cap, answers)

    def text(self) -> str:
        cap = f", cap hit {self.cap[0]}/{self.cap[1]}" if self.cap and self.cap[0] else ""
        return self.majority.text(self.who) + cap


def agreement_sides(rows: list[dict], config: dict) -> dict[str, list[Side]]:
    """MAI rows of one benchmark and one verification variant -> for the routes decided by an agreement
    ('simple', 'reasoning'), each side whose answers that agreement compares, over the queries it compared
    them on: both Simple answers on every query; the small model's second answer and the large model's
    Simple answer on the queries that reached the second stage."""
    rows = [r for r in rows if not r.get("error") and r.get("trace")]
    if not rows:
        return {}
    bench = get_benchmark(rows[0]["benchmark"])
    cap = simple_cap(config, bench)
    second = SECOND_STAGE.get(rows[0].get("verify") or "answer", "answer")

    def call(r, role, mode):
        return next((t for t in r["trace"] if t.get("role") == role and t.get("mode") == mode), None)

    def side(pairs, name: str, simple: bool) -> Side | None:
        pairs = [(r, t) for r, t in pairs if t is not None]
        if not pairs:
            return None
        tokens = [(t.get("result") or {}).get("output_tokens") for _, t in pairs]
        hits = cap_hits([x for x in tokens if x is not None], cap) if simple else None
        top = majority_read(bench.name, [(t.get("answer"), r) for r, t in pairs])
        return Side(name.format(model=pairs[0][1].get("model")), top, hits)

    out = {"simple": [side([(r, call(r, role, "simple")) for r in rows], "{model}-S", True)
                      for role in ("small", "large")]}
    staged = [r for r in rows if call(r, "small", second) is not None]
    out["reasoning"] = [side([(r, call(r, "small", second)) for r in staged], "{model} after reasoning", False),
                        side([(r, call(r, "large", "simple")) for r in staged], "{model}-S at the second stage",
                             True)]
    return {route: [s for s in sides if s is not None] for route, sides in out.items()}
