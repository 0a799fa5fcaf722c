"""The paper's claims beside what our runs measured: one row per claim, one column per benchmark, and a figure.

    python -m analysis.claims --preset cpu-real          # reads runs/{10,07,08,09,12}_*/cpu-real
    python -m analysis.claims --preset cpu-real --readme # and replaces the README's copy of the table

Writes paper_tables/claims.<preset>.{md,tex} and figures/claims.<preset>.{png,pdf,json} (one panel per judged
or compared row: the paper's bound as a line, ours as a point with its 95% interval per task, coloured by
verdict); with --readme, the README's findings paragraph (analysis/findings.py) between the claims marks.

Each claim is read from the run of the experiment that measures it (Table 10: routes, MAI's accuracy against
the large model's Simple answer and Full RT, speedup over the large model reasoning; Table 7: the large model
reasoning against its own Simple answer; Table 8: reasoning
transfer against the large model's Simple answer; Table 9's attention-mass rows: the share of reasoning tokens
holding 80% of the attention, App. B.7; Table 12: speculative decoding, and MAI's speedup as Table 12 measures
it). Each row names the run, and for MAI which transfer (full or sparse) and which verification it read.

Beside the paper's claims (issue 37): MAI's accuracy against the large model reasoning's next to each speed
row (the accuracy the speedup is bought against); premise rows, judged like claims, for what MAI assumes of
the pair (the small model's reasoning beats its Simple answer; the transfer MAI uses beats the large model's
Simple answer), each naming the claims that rest on it; the paper's own GPU speedup (Table 12's 2.40x) set
beside ours and never judged; and an answer-bias row (analysis/bias.py, never judged): each model and
prompt's majority answer, its share and base rate, the Simple answers' cap hits. Wherever an agreement or an
accuracy is counted, a side giving one answer to CONSTANT (90%) or more of a task is named after the verdict.
One row per measurement: Table 8's "better, or mildly worse" is one row read against both bounds.

Verdicts come from 95% intervals, never from point estimates (the first CPU runs answered 3-6 questions a task): on
a task a claim "holds" when its whole interval is on the paper's side of the bound, "does not hold" when it is
wholly on the other side, and otherwise "cannot tell"; a band ("about 20%") holds when the interval lies inside
it. The "here" column counts the tasks of each verdict. The intervals:

- a fraction (routes): Wilson's score interval (Wilson 1927), which keeps its coverage at n=6 where the normal
  approximation does not;
- a difference of two systems' accuracies on the same questions: Newcombe's hybrid score interval for paired
  proportions (Newcombe 1998, Stat. Med. 17:2635-2650, method 10; as in Fagerland, Lydersen & Laake 2017,
  Statistical Analysis of Contingency Tables, ch. 8), which uses the pairing through the phi correlation of
  the two systems' right/wrong answers (the benchmark's own per-question score; MMBench's each row alone, not
  CircularEval). Chosen over a paired bootstrap because at n=4-6 a bootstrap interval collapses to a point
  when two systems answer alike (it never sees a question they would split on); a benchmark whose
  per-question scores are not 0/1 (InfoVQA's ANLS) gets the paired percentile bootstrap;
- a latency ratio (speedup, speculative decoding's slowdown): the ratio of means and the ratio of medians,
  each with a paired percentile bootstrap over queries (Efron & Tibshirani 1993, ch. 13; seed SEED, DRAWS
  draws). The verdict reads the ratio of means' interval, the paper's statistic; the medians show how far one
  slow query moves it (runs/10_mai/cpu-real-bigbench, date_understanding: 3.68x by means, 15.8x by medians). At n=3
  (runs/12_speculative_decoding/cpu-real-bigbench) a percentile bootstrap has 10 distinct resamples and is narrower
  than a 95% interval should be: a verdict there says what those three queries show;
- App. B.7's attention share: Student's t interval over the questions, each question's share averaged over
  the run's layers (a question is the independent unit; layers of one question are not).

The rules are the paper's words made numeric where it gives a number, and stated where it does not
("mildly", "comparable": within MILD_PP points; "about 20%": B7_BAND). Nothing here is tuned.
"""
from __future__ import annotations

import argparse
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from analysis import bias, paper_numbers, report, style
from analysis.table10 import latency_sample, same_examples
from mai import model_specs
from mai.benchmarks import get_benchmark

NAME = "claims"
MILD_PP = 5.0  # "degrades only mildly" / "comparable": within this many accuracy points (our reading)
B7_BAND = (0.15, 0.25)  # "about 20%" of the reasoning tokens (our reading of App. B.7's "about")
RUNS = {"10": "10_mai", "07": "07_prompt_modes", "08": "08_reasoning_transfer", "09": "09_layer_ablation",
        "12": "12_speculative_decoding"}
SEED, DRAWS = 0, 10_000  # the bootstrap's: fixed, so a rebuilt table is the same table
# Resampling a handful of queries gives an interval far narrower than the truth (one query: zero width), so
# below this many the bootstrap gives none and the verdict is 'cannot tell' (a partial latency sample).
MIN_BOOTSTRAP = 10
HOLDS, NOT, UNSURE = "holds", "does not hold", "cannot tell"
NOT_JUDGED = "not judged"  # a figure set beside ours (the paper's GPU speedup, the answer bias): never a verdict
# What a row is: the paper's claim; a premise MAI rests on (judged the same way); a number of the paper's compared
# with ours; the answers' bias behind the agreement and accuracy rows.
CLAIM, PREMISE, COMPARE, BIAS = "claim", "premise", "compare", "bias"


# ---------------------------------------------------------------------------------------------- intervals

def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion k/n (k may be fractional: a mean of 0/1 scores x n)."""
    if n <= 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_paired(x: list[float], y: list[float], z: float = 1.96) -> tuple[float, float]:
    """95% interval of mean(x) - mean(y) for 0/1 scores of the same questions (x[i], y[i]: question i):
    Newcombe (1998) method 10, Wilson intervals of both proportions squared-and-added with the phi
    correlation of the pairs (phi corrected towards 0 by n/2 when positive, as Newcombe gives it)."""
    n = len(x)
    if n == 0:
        return float("nan"), float("nan")
    a = sum(1 for u, v in zip(x, y) if u and v)  # both right
    b = sum(1 for u, v in zip(x, y) if u and not v)  # x right, y wrong
    c = sum(1 for u, v in zip(x, y) if v and not u)
    d = n - a - b - c
    p1, p2 = (a + b) / n, (a + c) / n
    (l1, u1), (l2, u2) = wilson(a + b, n, z), wilson(a + c, n, z)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    cross = a * d - b * c
    phi = 0.0 if margins == 0 or 0 <= cross <= n / 2 else (cross - n / 2 if cross > 0 else cross) / math.sqrt(margins)
    lo = p1 - p2 - math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    hi = p1 - p2 + math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return max(-1.0, lo), min(1.0, hi)


def bootstrap(stat, *columns) -> tuple[float, float]:
    """95% percentile interval of stat over DRAWS resamples of the questions (paired: one index draws every
    column's value of that question); stat takes arrays of shape (DRAWS, n) and returns DRAWS values."""
    n = len(columns[0])
    if n < MIN_BOOTSTRAP:
        return float("nan"), float("nan")
    idx = np.random.default_rng(SEED).integers(0, n, size=(DRAWS, n))
    values = stat(*(np.asarray(c, dtype=float)[idx] for c in columns))
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def t_interval(values: list[float]) -> tuple[float, float]:
    """95% Student t interval of the mean of values (nan below two values)."""
    n = len(values)
    if n < 2:
        return float("nan"), float("nan")
    m, sd = float(np.mean(values)), float(np.std(values, ddof=1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return m - half, m + half


# ---------------------------------------------------------------------------------------------- verdicts

@dataclass(frozen=True)
class Bound:
    """The paper's side of a number: at least lo (above lo when strict), up to hi (under hi when strict), or
    both (a band). `words`: how the paper's column states it."""
    words: str
    lo: float | None = None
    hi: float | None = None
    strict: bool = False

    def verdict(self, lo: float, hi: float) -> str:
        """holds: the whole interval [lo, hi] on the paper's side; does not hold: wholly on the other; else
        cannot tell (a nan interval cannot tell)."""
        if lo != lo or hi != hi:
            return UNSURE
        above = lambda v, b: v > b if self.strict else v >= b  # noqa: E731  (on the paper's side of b)
        inside = (self.lo is None or above(lo, self.lo)) and (self.hi is None or above(self.hi, hi))
        outside = (self.lo is not None and not above(hi, self.lo)) or (self.hi is not None and not above(self.hi, lo))
        return HOLDS if inside else NOT if outside else UNSURE


@dataclass
class Cell:
    """One claim on one task: the estimate, its 95% interval, the questions it was measured on, the verdict
    and the table's text."""
    estimate: float
    lo: float
    hi: float
    n: int
    verdict: str
    text: str
    value: str  # the estimate and its interval alone (text without n, the verdict and the flags)
    detail: dict = field(default_factory=dict)  # the parts analysis/findings.py words (accuracies, sides)


def cell(estimate: float, interval: tuple[float, float], n: int, bound: Bound | None, text: str,
         flags: str = "", **detail) -> Cell:
    """A cell judged by `bound` (None: shown, not judged); `flags` (the constant-answer notes) follow the
    verdict, so a reader sees them before trusting it."""
    verdict = NOT_JUDGED if bound is None else bound.verdict(*interval)
    said = "" if bound is None else f": {verdict}"
    return Cell(float(estimate), float(interval[0]), float(interval[1]), n, verdict,
                f"{text}, n={n}{said}{flags}", text, detail)


def summary(cells: dict[str, Cell]) -> str:
    """'holds on 1, does not hold on 0, cannot tell on 2 of 3 tasks'."""
    if not cells:
        return "not measured"
    count = {v: sum(c.verdict == v for c in cells.values()) for v in (HOLDS, NOT, UNSURE)}
    return (f"holds on {count[HOLDS]}, does not hold on {count[NOT]}, cannot tell on {count[UNSURE]} "
            f"of {len(cells)} tasks")


@dataclass
class Claim:
    claim: str  # the paper's words, with its table
    paper: str  # the paper's number or bound
    read: str  # which run, transfer and verification the numbers come from
    unit: str  # "%" (fractions in [0, 1]), "points" (accuracy differences), "x" (latency ratios)
    bound: Bound
    cells: dict[str, Cell]
    title: str  # the figure panel's
    key: str = ""  # a stable name (analysis/findings.py looks rows up by it)
    kind: str = CLAIM  # CLAIM, PREMISE (judged like a claim), COMPARE or BIAS (shown, never judged)
    affects: tuple[str, ...] = ()  # a premise: the keys of the claims that rest on it
    here: str | None = None  # the "here" column when the verdict count alone does not say it

    def record(self) -> dict:
        return dict(claim=self.claim, paper=self.paper, read=self.read,
                    **{b: c.text for b, c in self.cells.items()}, here=self.here or summary(self.cells))


# ---------------------------------------------------------------------------------------------- cells

def fraction_cell(hits: int, n: int, bound: Bound, right: int | None = None, flags: str = "", **detail) -> Cell:
    """hits of n with Wilson's interval; `right`: how many of the hits were answered right (a route's
    accuracy, beside its share)."""
    p = hits / n if n else float("nan")
    lo, hi = wilson(hits, n)
    correct = f", {right}/{hits} right" if right is not None and hits else ""
    return cell(p, (lo, hi), n, bound, f"{100 * p:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]{correct}", flags,
                hits=hits, right=right, **detail)


def paired_scores(rows: list[dict], bench: str, pick_x, pick_y) -> tuple[list[float], list[float]]:
    """The benchmark's own per-question scores (its scoring of the raw output, as the tables' accuracy) of
    two systems on the questions both answered without error, in the same order."""
    def scored(pick):
        mine = [r for r in rows if r.get("benchmark") == bench and not r.get("error") and pick(r)]
        return dict(zip((r["example_id"] for r in mine), get_benchmark(bench).row_scores(mine)))
    x, y = scored(pick_x), scored(pick_y)
    both = [q for q in x if q in y]
    return [x[q] for q in both], [y[q] for q in both]


def constant_flags(rows: list[dict], bench: str, picks: dict) -> str:
    """'; 0.5B-S 'no' 200/200 (base rate 52%), constant' for each system (name -> row filter) whose scored
    answers on the benchmark are CONSTANT or more one answer: its accuracy is then that answer's base rate."""
    flags = []
    for name, pick in picks.items():
        top = bias.majority_scored([r for r in rows if r.get("benchmark") == bench and pick(r)])
        if top is not None and top.constant:
            flags.append(top.text(name))
    return "".join(f"; {f}" for f in flags)


def interval_text(lo: float, hi: float, spec: str, over: str) -> str:
    """'[lo, hi]' in the given format, or why there is none (a NaN bound: too few to bootstrap)."""
    return f"[{lo:{spec}}, {hi:{spec}}]" if lo == lo else f"[no interval under {MIN_BOOTSTRAP} {over}]"


def difference_cell(x: list[float], y: list[float], names: tuple[str, str], bound: Bound, flags: str = "") -> Cell:
    """Accuracy of x minus accuracy of y in points, with the paired interval (module docstring)."""
    binary = all(v in (0, 1) for v in (*x, *y))
    lo, hi = newcombe_paired(x, y) if binary else bootstrap(lambda a, b: (a - b).mean(axis=1), x, y)
    mx, my = (100 * float(np.mean(v)) if v else float("nan") for v in (x, y))
    how = "" if binary else " (bootstrap)"
    interval = interval_text(100 * lo, 100 * hi, "+.0f", "questions")
    return cell(mx - my, (100 * lo, 100 * hi), len(x), bound,
                f"{mx - my:+.0f} {interval} points{how} ({names[0]} {mx:.0f}, {names[1]} {my:.0f})", flags,
                x=mx, y=my, names=names)


def ratio_cell(num: list[float], den: list[float], bound: Bound, extra: str = "") -> Cell:
    """mean(num) / mean(den) and median(num) / median(den) over the same queries, each with its paired
    bootstrap interval; the verdict reads the ratio of means' interval."""
    means = float(np.mean(num) / np.mean(den))
    medians = float(np.median(num) / np.median(den))
    lo, hi = bootstrap(lambda a, b: a.mean(axis=1) / b.mean(axis=1), num, den)
    mlo, mhi = bootstrap(lambda a, b: np.median(a, axis=1) / np.median(b, axis=1), num, den)
    return cell(means, (lo, hi), len(num), bound,
                f"means {means:.2f}x {interval_text(lo, hi, '.2f', 'queries')}, "
                f"medians {medians:.2f}x {interval_text(mlo, mhi, '.2f', 'queries')}{extra}")


def paired_latency(rows: list[dict], bench: str, pick_num, pick_den) -> tuple[list[float], list[float]]:
    def latency(pick):
        return {r["example_id"]: float(r["latency"]) for r in rows if r.get("benchmark") == bench
                and not r.get("error") and r.get("latency") is not None and pick(r)}
    num, den = latency(pick_num), latency(pick_den)
    both = [q for q in num if q in den]
    return [num[q] for q in both], [den[q] for q in both]


# ---------------------------------------------------------------------------------------------- claims

def transfer_words(config: dict) -> str:
    """'sparse transfer (layer 10, delta 0.8)' or 'full transfer', from the run's config.json."""
    cascade = config.get("cascade") or {}
    if (cascade.get("transfer") or config.get("transfer")) == "sparse":
        sparse = cascade.get("sparse") or {}
        return (f"sparse transfer (layer {sparse.get('layer', config.get('sparse_layer'))}, delta "
                f"{sparse.get('delta', config.get('delta'))})")
    return "full transfer"


def _is_mai(verify):
    return lambda r: r.get("kind") == "MAI" and (r.get("verify") or "answer") == verify


def _kind(kind):
    return lambda r: r.get("kind") == kind


def _name(rows: list[dict], bench: str, kind: str) -> str:
    return next(r["system"] for r in rows if r.get("benchmark") == bench and r.get("kind") == kind)


def route_flags(sides: list[bias.Side]) -> str:
    """The sides of an agreement that answer one answer (constant), and any Simple answer that ran into its
    cap: what the agreement count rests on."""
    return "".join(f"; {s.text()}" for s in sides if s.majority.constant or (s.cap and s.cap[0]))


def table10_claims(loaded, benches: list[str], run: str, run_dir: Path | None = None) -> dict[str, Claim]:
    config, rows, _ = loaded
    # Each number over the questions its systems answered without error: the routes over MAI's, a comparison
    # over the pair's (paired_scores, paired_latency). Once every system has answered every question this is
    # Table 10's common set (same_examples); before, a baseline still running does not shrink MAI's n.
    rows = [r for r in rows if not r.get("error")]
    verifies = list(dict.fromkeys((r.get("verify") or "answer") for r in rows if r.get("kind") == "MAI"))
    # The two-stage answer of Sec. 5.1 is the paper's MAI; a run of the simplified variant alone is read as such.
    verify = "answer" if "answer" in verifies or not verifies else verifies[0]
    read = f"runs/{RUNS['10']}/{run}: MAI verify={verify}, {transfer_words(config)}"
    mai = _is_mai(verify)
    out = {}
    bounds = paper_numbers.TABLE10_ROUTES
    least = bounds["simple_agreement_min"]
    for route, bound, what, title in (
            ("simple", Bound(f"at least {100 * least:.0f}%", lo=least),
             "agree on the Simple answers (mutual verification)", "agree on Simple answers"),
            ("reasoning", Bound(f"up to {100 * bounds['after_reasoning_max']:.0f}%", hi=bounds["after_reasoning_max"]),
             "agree after the small model's reasoning (second stage)", "agree after small reasoning"),
            ("transfer", Bound(f"under {100 * bounds['transfer_max']:.0f}%", hi=bounds["transfer_max"], strict=True),
             "reach reasoning transfer", "reach reasoning transfer")):
        cells = {}
        for b in benches:
            mine = [r for r in rows if r.get("benchmark") == b and mai(r)]
            if mine:
                scores = get_benchmark(b).row_scores(mine)
                took = [s for r, s in zip(mine, scores) if r.get("route") == route]
                sides = bias.agreement_sides(mine, config).get(route, [])
                cells[b] = fraction_cell(len(took), len(mine), bound, int(sum(took)), route_flags(sides),
                                         sides=sides)
        out[f"t10_{route}"] = Claim(
            f"{bound.words} of queries {what} (Table 10; beside each share, how many of its queries were "
            f"answered right, and any side of the agreement that gives one answer to "
            f"{100 * bias.CONSTANT:.0f}% or more of them: constant)", bound.words, read, "%", bound, cells,
            f"Table 10: {bound.words} {title}", key=f"t10_{route}")
    # MAI against the large model's Simple answer, Full RT and the large model reasoning, on the same questions.
    for key, other, bound, claim, paper, title in (
            ("t10_vs_large_s", "large-S", Bound("difference >= 0 points", lo=0.0),
             "MAI at least as accurate as the large model's Simple answer (Table 10, Sec. 6)",
             "MAI >= large-S (difference >= 0 points)", "Table 10: MAI - large-S >= 0 points"),
            ("t10_vs_full_rt", "Full RT", Bound(f"within +-{MILD_PP:.0f} points", lo=-MILD_PP, hi=MILD_PP),
             f"MAI comparable to Full RT (our reading: within {MILD_PP:.0f} points) (Table 10, Sec. 6)",
             f"MAI {paper_numbers.TABLE10_CHARTQA['MAI']} vs Full RT {paper_numbers.TABLE10_CHARTQA['Full RT']} "
             f"(ChartQA)", f"Table 10: MAI - Full RT within +-{MILD_PP:.0f} points"),
            ("t10_vs_large_r", "large-R", Bound("difference >= 0 points", lo=0.0),
             "MAI's accuracy at least the large model reasoning's, the accuracy its speedup is bought against "
             "(Table 10)", "MAI >= large-R (difference >= 0 points)", "Table 10: MAI - large-R >= 0 points")):
        cells = {}
        for b in benches:
            x, y = paired_scores(rows, b, mai, _kind(other))
            if x:
                name = _name(rows, b, other)
                flags = constant_flags(rows, b, {"MAI": mai, name: _kind(other)})
                cells[b] = difference_cell(x, y, ("MAI", name), bound, flags)
        out[key] = Claim(claim, paper, read, "points", bound, cells, title, key=key)
    # Table 10's own speedup over the large model reasoning (Table 12 measures it again: table12_claims), at
    # batch size 1 (the paper's setting): a stage-major run's times are batch shares, so its latencies come from
    # its batch-1 sample (runs/10_mai/<run>-latency, analysis/table10.latency_sample), and without one the claim
    # is not measured.
    bound = Bound("faster: speedup > 1x", lo=1.0, strict=True)
    cells, timed, where = {}, rows, read
    if config.get("order", "example") == "stage":
        sample = latency_sample(Path(run_dir))
        timed, where = (sample[0], f"runs/{sample[1]['run_dir']} (batch 1)") if sample else ([], read)
    for b in benches:
        large_r, m = paired_latency(timed, b, _kind("large-R"), mai)
        if large_r:
            cells[b] = ratio_cell(large_r, m, bound)
    device = (config.get("provenance") or {}).get("gpu") or "CPU, transformers, batch 1"
    out["t10_speedup"] = Claim(f"MAI faster than the large model reasoning (Table 10; ours: {device})",
                               "> 1x (Table 10's values not transcribed)", where, "x", bound, cells,
                               "Table 10: MAI faster than large-R (speedup > 1x)", key="t10_speedup")
    return out


def bias_row(loaded, benches: list[str], run: str) -> Claim:
    """Per task, every model and prompt's majority answer (the benchmark's scoring reading), its share and
    its base rate, the references' most common answer, and the Simple answers' cap hits: shown, not judged."""
    config, rows, _ = loaded
    rows = [r for r in rows if not r.get("error")]
    models = list(dict.fromkeys(r.get("model") for r in rows if r.get("model")))
    cells, constant = {}, {}
    for b in benches:
        mine = [r for r in rows if r.get("benchmark") == b]
        if not mine:
            continue
        bench = get_benchmark(b)
        refs = bias.reference_majority(mine)
        parts = [f"references '{refs.answer}' {refs.count}/{refs.n}"]
        shares, flagged, capped = [], [], []
        for model in models:
            for mode in ("simple", "think"):
                group = [r for r in mine if r.get("model") == model and r.get("mode") == mode]
                top = bias.majority_scored(group)
                if top is None:
                    continue
                who = f"{model}-{'S' if mode == 'simple' else 'R'}"
                cap = bias.simple_cap(config, bench) if mode == "simple" else config.get("think_tokens")
                hit, n = bias.cap_hits([r["output_tokens"] for r in group if r.get("output_tokens") is not None],
                                       cap or float("inf"))
                parts.append(top.text(who) + (f", cap hit {hit}/{n}" if cap and hit else ""))
                shares.append(top.share)
                if top.constant:
                    constant.setdefault(who, []).append(b)
                    flagged.append((who, top))
                if cap and hit:
                    capped.append((who, hit, n, cap))
        cells[b] = cell(max(shares), (float("nan"), float("nan")), refs.n, None, "; ".join(parts),
                        constant=flagged, caps=capped)
    here = ("constant: " + "; ".join(f"{who} on {len(tasks)} of {len(cells)} tasks" for who, tasks in constant.items())
            if constant else f"no model gives one answer to {100 * bias.CONSTANT:.0f}% of a task")
    return Claim(f"answer bias, not a claim: each model and prompt's most common answer, its share and its base "
                 f"rate (the questions whose reference it is), 'constant' at {100 * bias.CONSTANT:.0f}% or more; "
                 f"the Simple answers' cap hits ({bias.simple_cap(config, get_benchmark(benches[0]))} tokens)",
                 "-", f"runs/{RUNS['07']}/{run}: the benchmark's scoring reading of each answer", "%",
                 Bound("constant at 90%", lo=bias.CONSTANT), cells, "Answer bias: the majority answer's share",
                 key="bias", kind=BIAS, here=here)


def table07_claims(loaded, benches: list[str], run: str) -> dict[str, Claim]:
    """"More reasoning tokens help large models" (Table 7): the largest model's reasoning prompt (R) against its
    own Simple prompt (S), on the same questions; and the same for the smallest model, the premise of MAI's
    second stage (the small model reasons because its reasoning answers better than its Simple answer)."""
    config, rows, _ = loaded
    prompt = (f"Think prompt {config.get('think_prompt', 'instruction')} ({config.get('think_tokens')} tokens) "
              f"against Simple")
    bound = Bound("difference > 0 points", lo=0.0, strict=True)
    out = {}
    for key, spec in (("premise_small_reasoning", config["models"][0]), ("t7", config["models"][-1])):
        model = model_specs.model_label(spec)
        think = lambda r, m=model: r.get("model") == m and r.get("mode") == "think"  # noqa: E731
        simple = lambda r, m=model: r.get("model") == m and r.get("mode") == "simple"  # noqa: E731
        cells = {}
        for b in benches:
            x, y = paired_scores(rows, b, think, simple)
            if x:
                flags = constant_flags(rows, b, {f"{model}-R": think, f"{model}-S": simple})
                cells[b] = difference_cell(x, y, (f"{model}-R", f"{model}-S"), bound, flags)
        read = f"runs/{RUNS['07']}/{run}: {model}, {prompt}"
        if key == "t7":
            out[key] = Claim("more reasoning tokens help the large model: its reasoning prompt beats its Simple "
                             "prompt (Table 7)", "R above S for the large models (Table 7's values not "
                             "transcribed)", read, "points", bound, cells, "Table 7: large-R - large-S > 0 points",
                             key=key)
        else:
            out[key] = Claim("premise of MAI's second stage: the small model's reasoning beats its Simple answer "
                             "(else agreeing after reasoning adds no accuracy); bears on Table 10's agreement "
                             "after reasoning and MAI against large-S and large-R", "assumed (Sec. 5.1)", read,
                             "points", bound, cells, "Premise: small-R - small-S > 0 points", key=key, kind=PREMISE,
                             affects=("t10_reasoning", "t10_vs_large_s", "t10_vs_large_r"))
    return out


def table08_claims(loaded, benches: list[str], run: str, mai_transfer: str) -> dict[str, Claim]:
    """Table 8's claim (full transfer) as one row, and the premise of the transfer MAI's Table 10 run used
    (sparse transfer from the same run) when that is not the full one."""
    _, rows, _ = loaded
    out = {}
    beats = Bound("difference > 0 points", lo=0.0, strict=True)
    mild = Bound(f"difference >= -{MILD_PP:.0f} points", lo=-MILD_PP)
    cells = {}
    for b in benches:
        x, y = paired_scores(rows, b, _kind("transfer"), _kind("large-S"))
        if x:
            name = _name(rows, b, "large-S")
            c = difference_cell(x, y, ("transfer", name), beats)
            # The paper's "mildly worse elsewhere" is the same measurement read against a second bound.
            c.text += f"; worse by at most {MILD_PP:.0f} points: {mild.verdict(c.lo, c.hi)}"
            cells[b] = c
    within = {v: sum(mild.verdict(c.lo, c.hi) == v for c in cells.values()) for v in (HOLDS, NOT, UNSURE)}
    out["t8"] = Claim(
        "the small model's reasoning prepended to the large model's Simple prompt beats the large model's Simple "
        f"answer, and loses at most mildly (our reading: {MILD_PP:.0f} points) where it does not (Table 8); also "
        "the premise of MAI's transfer route with full transfer (Table 12)",
        f"better on 4 of 6 tasks, at most {MILD_PP:.0f} points worse on the rest",
        f"runs/{RUNS['08']}/{run}: full transfer (the small model's whole reasoning), no verification", "points",
        beats, cells, "Table 8: transfer - large-S > 0 points", key="t8",
        affects=("t12_vs_target",),
        here=(summary(cells) + f"; at most {MILD_PP:.0f} points worse: holds on {within[HOLDS]}, does not hold on "
              f"{within[NOT]}, cannot tell on {within[UNSURE]}") if cells else None)
    if mai_transfer.startswith("sparse"):
        cells = {}
        for b in benches:
            x, y = paired_scores(rows, b, _kind("sparse transfer"), _kind("large-S"))
            if x:
                cells[b] = difference_cell(x, y, ("sparse transfer", _name(rows, b, "large-S")), beats)
        out["premise_transfer"] = Claim(
            f"premise of MAI's transfer route: the transfer its Table 10 run uses ({mai_transfer}) beats the large "
            "model's Simple answer (else the transfer route answers no better than large-S); bears on MAI against "
            "large-S, Full RT and large-R (Table 10)", "assumed (Sec. 5.2; Table 9)",
            f"runs/{RUNS['08']}/{run}: {mai_transfer}, no verification", "points", beats, cells,
            "Premise: sparse transfer - large-S > 0 points", key="premise_transfer", kind=PREMISE,
            affects=("t10_vs_large_s", "t10_vs_full_rt", "t10_vs_large_r"))
    return out


def table09_claim(loaded, benches: list[str], run: str) -> Claim:
    config, rows, _ = loaded
    delta = config.get("delta", 0.8)
    paper = paper_numbers.APPENDIX_B7["fraction_of_tokens_for_80pct_mass"]
    bound = Bound(f"{100 * B7_BAND[0]:.0f}-{100 * B7_BAND[1]:.0f}%", lo=B7_BAND[0], hi=B7_BAND[1])
    layers = sorted({int(k) for r in rows if r.get("fractions") for k in r["fractions"]})
    cells = {}
    for b in benches:
        per_question: dict[str, list[float]] = {}
        for r in rows:
            if r.get("benchmark") == b and r.get("fractions") and not r.get("error"):
                per_question.setdefault(r["example_id"], []).extend(r["fractions"].values())
        shares = [float(np.mean(v)) for v in per_question.values()]  # each question's share, over the layers
        if shares:
            m = float(np.mean(shares))
            lo, hi = t_interval(shares)
            lo, hi = max(0.0, lo), min(1.0, hi)  # a share lies in [0, 1] whatever t says at n=3
            cells[b] = cell(m, (lo, hi), len(shares), bound, f"{100 * m:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]")
    return Claim(f"about {100 * paper:.0f}% of the reasoning tokens hold {100 * delta:.0f}% of the attention mass, "
                 f"across layers (App. B.7; 'about' read as {bound.words})", f"top {100 * paper:.0f}% hold ~80%",
                 f"runs/{RUNS['09']}/{run}: the small model's own reasoning, delta {delta}, mean over layers "
                 f"{', '.join(map(str, layers))}", "%", bound, cells,
                 f"App. B.7: about {100 * paper:.0f}% of tokens hold {100 * delta:.0f}% of attention", key="b7")


def table12_claims(loaded, benches: list[str], run: str) -> dict[str, Claim]:
    config, rows, _ = loaded
    rows, _ = same_examples(rows)
    cascade = config.get("cascade") or {}
    verify = cascade.get("verify") or "answer"
    verify = "+".join(verify) if isinstance(verify, list) else verify  # a run of both variants lists them
    targets = {r["system"] for r in rows if r.get("kind") == "target"}
    target = ", ".join(sorted(targets)) or "-"
    run_dir = f"runs/{RUNS['12']}/{run}"
    out = {}
    # Speculative decoding's latency against the target alone; the rejection is shown, not judged: the paper
    # gives no bound for "high".
    bound = Bound("slower: latency ratio > 1x", lo=1.0, strict=True)
    cells = {}
    for b in benches:
        spec, alone = paired_latency(rows, b, _kind("speculative"), _kind("target"))
        if spec:
            ok = [r for r in rows if r.get("benchmark") == b and r.get("kind") == "speculative" and not r.get("error")]
            proposed = sum(r.get("draft_proposed") or 0 for r in ok)
            accepted = sum(r.get("draft_accepted") or 0 for r in ok)
            extra = f"; rejection {100 - 100 * accepted / proposed:.0f}% of draft tokens" if proposed else ""
            cells[b] = ratio_cell(spec, alone, bound, extra)
    out["t12_speculative"] = Claim(
        "token-level speculative decoding (small drafts for large) is slower than the large model decoding alone, "
        "with a high draft rejection (Table 12; verdict on the latency)",
        f"{paper_numbers.TABLE12['spec_decode_slowdown']:.2f}x latency, "
        f"{100 * paper_numbers.TABLE12['draft_rejection_rate']:.0f}% rejection (ChartQA)",
        f"{run_dir}: target {target} alone and with the small model's drafts", "x", bound, cells,
        "Table 12: speculative decoding slower than the target (> 1x)", key="t12_speculative")
    # MAI against the large model reasoning as Table 12 measures it: its target must reason (-R).
    if not targets or not all(t.endswith("-R") for t in targets):
        return out
    read = f"{run_dir}: target {target}; MAI verify={verify}, {transfer_words(config)}"
    bound = Bound("difference >= 0 points", lo=0.0)
    cells = {}
    for b in benches:
        x, y = paired_scores(rows, b, _kind("MAI"), _kind("target"))
        if x:
            name = _name(rows, b, "target")
            flags = constant_flags(rows, b, {"MAI": _kind("MAI"), name: _kind("target")})
            cells[b] = difference_cell(x, y, ("MAI", name), bound, flags)
    out["t12_vs_target"] = Claim("MAI's accuracy at least the large model reasoning's, the accuracy its speedup is "
                                 "bought against (Table 12)", "MAI >= target (difference >= 0 points)", read,
                                 "points", bound, cells, "Table 12: MAI - target reasoning >= 0 points",
                                 key="t12_vs_target")
    bound = Bound("faster: speedup > 1x", lo=1.0, strict=True)
    paper = paper_numbers.TABLE12["mai_vllm_speedup_over_8b_r"]
    cells, compared = {}, {}
    for b in benches:
        alone, m = paired_latency(rows, b, _kind("target"), _kind("MAI"))
        if alone:
            c = cells[b] = ratio_cell(alone, m, bound)
            # The paper's figure is vLLM on an H100 with other models and tasks: set beside ours as the ratio
            # of the two, never judged.
            interval = interval_text(c.lo / paper, c.hi / paper, ".2f", "queries")
            compared[b] = cell(c.estimate / paper, (c.lo / paper, c.hi / paper), c.n, None,
                               f"ours / the paper's: {c.estimate / paper:.2f} {interval} "
                               f"(ours {c.estimate:.2f}x by means against {paper:.2f}x)")
    device = (config.get("provenance") or {}).get("gpu") or "CPU, transformers, batch 1"
    out["t12_speedup"] = Claim(f"MAI faster than the large model reasoning (Table 12; ours: {device})",
                               "faster (its 2.40x on an H100: next row)", read, "x", bound, cells,
                               "Table 12: MAI faster than the target reasoning (> 1x)", key="t12_speedup")
    out["t12_vs_paper"] = Claim(
        f"Table 12's speedup itself, {paper:.2f}x (vLLM on an H100, Qwen3-VL 2B/8B, ChartQA), beside ours: a GPU "
        "figure on another pair, compared, not judged", f"{paper:.2f}x (vLLM, H100)", read, "x",
        Bound(f"the paper's {paper:.2f}x", lo=1.0), compared, f"Table 12: our speedup / the paper's {paper:.2f}x",
        key="t12_vs_paper", kind=COMPARE,
        here=f"compared on {len(compared)} task{'s' * (len(compared) != 1)}, not judged" if compared else None)
    return out


# ---------------------------------------------------------------------------------------------- build

# The table's order: what MAI's routes count and the answers behind them, the premises, then the paper's claims
# (each MAI accuracy row next to the speed row it qualifies), the paper's own figures last.
ORDER = ("t10_simple", "t10_reasoning", "t10_transfer", "bias", "premise_small_reasoning", "premise_transfer", "t7",
         "t8", "t10_vs_large_s", "t10_vs_full_rt", "t10_vs_large_r", "t10_speedup", "b7", "t12_speculative",
         "t12_vs_target", "t12_speedup", "t12_vs_paper")


def _load(runs: Path, key: str, run_name: str):
    path = runs / RUNS[key] / run_name
    if not (path / "results.jsonl").exists():
        return None
    return report.load_run(path)


def build(runs: Path, run_name: str, report_dir) -> dict:
    loaded = {key: _load(Path(runs), key, run_name) for key in RUNS}
    if loaded["10"] is None:
        raise SystemExit(f"error: no Table 10 run at {Path(runs) / RUNS['10'] / run_name}: run "
                         f"experiments/10_mai.py --preset {run_name} first")
    config, rows10, described = loaded["10"]
    # The tasks are whatever the runs answered (never a list written here), in the paper's order.
    benches = sorted({r["benchmark"] for x in loaded.values() if x for r in x[1] if r.get("benchmark")},
                     key=report.benchmark_rank)
    found = table10_claims(loaded["10"], benches, run_name, Path(runs) / RUNS["10"] / run_name)
    if loaded["07"] is not None:
        found.update(table07_claims(loaded["07"], benches, run_name))
        found["bias"] = bias_row(loaded["07"], benches, run_name)
    if loaded["08"] is not None:
        found.update(table08_claims(loaded["08"], benches, run_name, transfer_words(config)))
    if loaded["09"] is not None:
        found["b7"] = table09_claim(loaded["09"], benches, run_name)
    if loaded["12"] is not None:
        found.update(table12_claims(loaded["12"], benches, run_name))
    claims = [found[k] for k in ORDER if k in found]
    df = pd.DataFrame.from_records([c.record() for c in claims],
                                   columns=["claim", "paper", "read", *benches, "here"]).fillna("-")
    note = (report.provenance_note(config, described, rows10).split(" Accuracy is")[0]
            + " Each cell: our estimate, its 95% interval, the questions it was measured on (n) and the verdict"
              " the interval allows: 'holds' when the whole interval is on the paper's side of its bound,"
              " 'does not hold' when wholly on the other side, else 'cannot tell'. Intervals: Wilson for"
              " fractions; Newcombe's paired score interval (1998, method 10) for differences of two systems'"
              " accuracy on the same questions; a paired bootstrap over queries (seed"
              f" {SEED}, {DRAWS} draws) for latency ratios, the verdict on the ratio of means; Student's t over"
              " questions for App. B.7's share. Premise rows test what MAI assumes of the pair (judged as claims);"
              " the answer-bias row and the paper's GPU speedup are shown, not judged. A model or side whose answers"
              f" are {100 * bias.CONSTANT:.0f}% or more one answer is named after the verdict ('constant', with"
              " that answer's base rate): its accuracy is the base rate and its agreements track the other side."
              " The paper's numbers are Qwen3-VL 2B/8B on vision benchmarks (H100); ours are the runs named in"
              " each row.")
    tables = report.write_table(df, report_dir, NAME, config, note, "The paper's claims beside our measurements")
    # The figure reads every run above: its footer and sidecar name each one's commit, not Table 10's alone.
    latency = _load(Path(runs), "10", f"{run_name}-latency")  # Table 10's batch-1 sample, read by its claims
    commits = list(dict.fromkeys(x[0].get("provenance", {}).get("git_commit")
                                 for x in [*loaded.values(), latency] if x))
    drawn = {**config, "provenance": {**config.get("provenance", {}), "git_commit": commits}}
    figure = plot([c for c in claims if c.kind != BIAS], benches, report.figure_path(report_dir, NAME, config),
                  drawn, described, note)
    return dict(tables=tables, figures=[figure], markdown=tables[0].read_text(), frame=df, claims=claims,
                readme=readme_summary(claims, benches, config))


VERDICT_MARKERS = {HOLDS: "o", NOT: "X", UNSURE: "s", NOT_JUDGED: "D"}


@style.themed
def plot(claims: list[Claim], benches: list[str], path: Path, config: dict, described: dict, note: str) -> Path:
    """One panel per claim: the paper's bound as a dashed line (a band shaded), ours per task as a point
    with its 95% interval, coloured and shaped by the verdict."""
    ncols = min(3, len(claims))
    nrows = -(-len(claims) // ncols)
    width = max(3.0, 0.5 * len(benches) + 1.6)
    fig, axes = style.figure(nrows, ncols, width=width, height=2.9)
    fig.set_size_inches(width * ncols + 1.6, 2.9 * nrows + 0.6)
    flat = axes.ravel()
    for ax in flat[len(claims):]:
        fig.delaxes(ax)
    scale = {"%": 100.0, "points": 1.0, "x": 1.0}
    for ax, c in zip(flat, claims):
        k = scale[c.unit]
        b = c.bound
        if b.lo is not None and b.hi is not None:
            ax.axhspan(k * b.lo, k * b.hi, color="0.88", zorder=0, label="the paper's band")
        line = "the paper's value" if c.kind == COMPARE else "the paper's bound"
        for edge in (b.lo, b.hi):
            if edge is not None:
                ax.axhline(k * edge, color="0.3", ls="--" if c.kind != COMPARE else ":", lw=1, zorder=1, label=line)
        for i, bench in enumerate(benches):
            if bench in c.cells:
                x = c.cells[bench]
                err = [[k * max(0.0, x.estimate - x.lo)], [k * max(0.0, x.hi - x.estimate)]] if x.lo == x.lo else None
                ax.errorbar(i, k * x.estimate, yerr=err, fmt=VERDICT_MARKERS[x.verdict], ms=6, capsize=3,
                            color=style.VERDICT_COLORS[x.verdict], zorder=3, label=x.verdict)
        ax.set_xlim(-0.5, len(benches) - 0.5)
        ax.set_xticks(range(len(benches)), benches)
        style.benchmark_ticks(ax, rotation=45)
        ax.set_ylabel("ours / the paper's" if c.kind == COMPARE else
                      {"%": "%", "points": "accuracy difference (points)", "x": "latency ratio (x)"}[c.unit])
        if c.unit == "%":
            ax.set_ylim(-3, 103)
        if c.unit == "x" and c.cells:  # ratios from 0.7x to 27x: a log axis once they span more than a decade
            span = [v for x in c.cells.values() for v in (x.lo, x.hi, x.estimate) if v == v] + [b.lo or 1.0]
            if min(span) > 0 and max(span) / min(span) > 10:
                style.log_axis(ax, "y")
        if not c.cells:  # the run has no rows of the systems this claim compares yet
            ax.text(0.5, 0.5, "not measured yet", transform=ax.transAxes, ha="center", va="center", color="0.4")
        ax.set_title("\n".join(textwrap.wrap(c.title, 40)), fontsize=9)
    order = ["the paper's bound", "the paper's band", "the paper's value", HOLDS, NOT, UNSURE, NOT_JUDGED]
    seen = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    labels = [x for x in order if x in seen]
    style.outside_legend(fig, [seen[x] for x in labels], labels, title="verdict (95% interval)")
    fig.suptitle("The paper's claims beside ours: estimate and 95% interval per task", fontsize=10)
    data = [dict(claim=c.claim, key=c.key, kind=c.kind, read=c.read, unit=c.unit,
                 bound=dict(lo=c.bound.lo, hi=c.bound.hi, strict=c.bound.strict, words=c.bound.words),
                 tasks={b: dict(estimate=x.estimate, lo=x.lo, hi=x.hi, n=x.n, verdict=x.verdict)
                        for b, x in c.cells.items()}) for c in claims]
    return style.save(fig, path, config, described, note, data=dict(claims=data))


README_MARKS = ("<!-- claims table: python -m analysis.claims --readme -->", "<!-- end of claims table -->")


def readme_summary(claims: list[Claim], benches: list[str], config: dict) -> str:
    """The README's results: the findings paragraph (analysis/findings.py), then where every row, interval
    and n is (the full table, its figure and the Pareto figure carry the rest)."""
    from analysis import findings  # findings reads this module's rows: imported here, not above

    preset = config.get("preset")
    return "\n".join([findings.paragraph(claims, preset), "",
                      f"Each row with its interval, n, verdict and the run it reads: "
                      f"[paper_tables/claims.{preset}.md](paper_tables/claims.{preset}.md) (a premise row tests what "
                      "MAI assumes of the pair; a model giving one answer to 90% of a task is flagged constant); "
                      "every table: [results](docs/results.md)."])


def update_readme(readme: Path, body: str) -> None:
    """Put the claims' short form between the README's two marks, so the README's copy is rebuilt from the
    runs like every other table, never typed."""
    text = readme.read_text()
    start, end = README_MARKS
    if start not in text or end not in text:
        raise SystemExit(f"error: {readme} lacks the marks {start} ... {end}")
    head, rest = text.split(start, 1)
    text = head + start + "\n" + body + "\n" + end + rest.split(end, 1)[1]
    readme.write_text(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="cpu-real", help="the run name of every experiment read (default cpu-real)")
    ap.add_argument("--runs", default="runs", help="runs directory (default: runs)")
    ap.add_argument("--report-dir", help="where paper_tables/ and figures/ go (default: RUNS/claims/PRESET; the "
                    "repository's own: --report-dir .)")
    ap.add_argument("--readme", action="store_true",
                    help="also replace the README's findings paragraph (between the claims marks)")
    args = ap.parse_args(argv)
    out = build(Path(args.runs), args.preset, args.report_dir or Path(args.runs) / "claims" / args.preset)
    if args.readme:
        update_readme(Path(__file__).resolve().parent.parent / "README.md", out["readme"])
    print(out["markdown"])


if __name__ == "__main__":
    main()
