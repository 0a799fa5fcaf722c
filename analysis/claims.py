"""The paper's claims beside what our runs measured: one row per claim, one column per benchmark, and a figure.

    python -m analysis.claims --preset cpu-real          # reads runs/{10,07,08,09,12}_*/cpu-real
    python -m analysis.claims --preset cpu-real --readme # and replaces the README's copy of the table

Writes paper_tables/claims.<preset>.{md,tex} and figures/claims.<preset>.{png,pdf,json} (one panel per claim:
the paper's bound as a line, ours as a point with its 95% interval per task, coloured by verdict).

Each claim is read from the run of the experiment that measures it (Table 10: routes, MAI's accuracy against
the large model's Simple answer and Full RT, speedup over the large model reasoning; Table 7: the large model
reasoning against its own Simple answer; Table 8: reasoning
transfer against the large model's Simple answer; Table 9's attention-mass rows: the share of reasoning tokens
holding 80% of the attention, App. B.7; Table 12: speculative decoding, and MAI's speedup as Table 12 measures
it). Each row names the run, and for MAI which transfer (full or sparse) and which verification it read.

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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from analysis import paper_numbers, report, style
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
    value: str  # the estimate and its interval alone (text without n and the verdict)


def cell(estimate: float, interval: tuple[float, float], n: int, bound: Bound, text: str) -> Cell:
    verdict = bound.verdict(*interval)
    return Cell(float(estimate), float(interval[0]), float(interval[1]), n, verdict, f"{text}, n={n}: {verdict}",
                text)


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

    def record(self) -> dict:
        return dict(claim=self.claim, paper=self.paper, read=self.read,
                    **{b: c.text for b, c in self.cells.items()}, here=summary(self.cells))


# ---------------------------------------------------------------------------------------------- cells

def fraction_cell(hits: int, n: int, bound: Bound) -> Cell:
    p = hits / n if n else float("nan")
    lo, hi = wilson(hits, n)
    return cell(p, (lo, hi), n, bound, f"{100 * p:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]")


def paired_scores(rows: list[dict], bench: str, pick_x, pick_y) -> tuple[list[float], list[float]]:
    """The benchmark's own per-question scores (its scoring of the raw output, as the tables' accuracy) of
    two systems on the questions both answered without error, in the same order."""
    def scored(pick):
        mine = [r for r in rows if r.get("benchmark") == bench and not r.get("error") and pick(r)]
        return dict(zip((r["example_id"] for r in mine), get_benchmark(bench).row_scores(mine)))
    x, y = scored(pick_x), scored(pick_y)
    both = [q for q in x if q in y]
    return [x[q] for q in both], [y[q] for q in both]


def interval_text(lo: float, hi: float, spec: str, over: str) -> str:
    """'[lo, hi]' in the given format, or why there is none (a NaN bound: too few to bootstrap)."""
    return f"[{lo:{spec}}, {hi:{spec}}]" if lo == lo else f"[no interval under {MIN_BOOTSTRAP} {over}]"


def difference_cell(x: list[float], y: list[float], names: tuple[str, str], bound: Bound) -> Cell:
    """Accuracy of x minus accuracy of y in points, with the paired interval (module docstring)."""
    binary = all(v in (0, 1) for v in (*x, *y))
    lo, hi = newcombe_paired(x, y) if binary else bootstrap(lambda a, b: (a - b).mean(axis=1), x, y)
    mx, my = (100 * float(np.mean(v)) if v else float("nan") for v in (x, y))
    how = "" if binary else " (bootstrap)"
    interval = interval_text(100 * lo, 100 * hi, "+.0f", "questions")
    return cell(mx - my, (100 * lo, 100 * hi), len(x), bound,
                f"{mx - my:+.0f} {interval} points{how} ({names[0]} {mx:.0f}, {names[1]} {my:.0f})")


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


def table10_claims(loaded, benches: list[str], run: str, run_dir: Path | None = None) -> list[Claim]:
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
    out = []
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
            routes = [r.get("route") for r in rows if r.get("benchmark") == b and mai(r)]
            if routes:
                cells[b] = fraction_cell(sum(x == route for x in routes), len(routes), bound)
        out.append(Claim(f"{bound.words} of queries {what} (Table 10)", bound.words, read, "%", bound, cells,
                         f"Table 10: {bound.words} {title}"))
    # MAI against the large model's Simple answer and Full RT, on the same questions.
    for other, bound, claim, paper, title in (
            ("large-S", Bound("difference >= 0 points", lo=0.0),
             "MAI at least as accurate as the large model's Simple answer (Table 10, Sec. 6)",
             "MAI >= large-S (difference >= 0 points)", "Table 10: MAI - large-S >= 0 points"),
            ("Full RT", Bound(f"within +-{MILD_PP:.0f} points", lo=-MILD_PP, hi=MILD_PP),
             f"MAI comparable to Full RT (our reading: within {MILD_PP:.0f} points) (Table 10, Sec. 6)",
             f"MAI {paper_numbers.TABLE10_CHARTQA['MAI']} vs Full RT {paper_numbers.TABLE10_CHARTQA['Full RT']} "
             f"(ChartQA)", f"Table 10: MAI - Full RT within +-{MILD_PP:.0f} points")):
        cells = {}
        for b in benches:
            x, y = paired_scores(rows, b, mai, _kind(other))
            if x:
                name = next(r["system"] for r in rows if r.get("benchmark") == b and r.get("kind") == other)
                cells[b] = difference_cell(x, y, ("MAI", name), bound)
        out.append(Claim(claim, paper, read, "points", bound, cells, title))
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
    out.append(Claim(f"MAI faster than the large model reasoning (Table 10; ours: {device})",
                     "> 1x (Table 10's values not transcribed)", where, "x", bound, cells,
                     "Table 10: MAI faster than large-R (speedup > 1x)"))
    return out


def table07_claim(loaded, benches: list[str], run: str) -> Claim:
    """"More reasoning tokens help large models" (Table 7): the largest model's reasoning prompt (R) against its
    own Simple prompt (S), on the same questions."""
    config, rows, _ = loaded
    large = model_specs.model_label(config["models"][-1])
    bound = Bound("difference > 0 points", lo=0.0, strict=True)
    cells = {}
    for b in benches:
        x, y = paired_scores(rows, b, lambda r: r.get("model") == large and r.get("mode") == "think",
                             lambda r: r.get("model") == large and r.get("mode") == "simple")
        if x:
            cells[b] = difference_cell(x, y, (f"{large}-R", f"{large}-S"), bound)
    return Claim("more reasoning tokens help the large model: its reasoning prompt beats its Simple prompt "
                 "(Table 7)", "R above S for the large models (Table 7's values not transcribed)",
                 f"runs/{RUNS['07']}/{run}: {large}, Think prompt {config.get('think_prompt', 'instruction')} "
                 f"({config.get('think_tokens')} tokens) against Simple", "points", bound, cells,
                 "Table 7: large-R - large-S > 0 points")


def table08_claims(loaded, benches: list[str], run: str) -> list[Claim]:
    _, rows, _ = loaded
    read = f"runs/{RUNS['08']}/{run}: full transfer (the small model's whole reasoning), no verification"
    out = []
    for bound, claim, paper, title in (
            (Bound("difference > 0 points", lo=0.0, strict=True),
             "the small model's reasoning prepended to the large model's Simple prompt beats the large model's "
             "Simple answer (Table 8)", "better on 4 of 6 tasks", "Table 8: transfer - large-S > 0 points"),
            (Bound(f"difference >= -{MILD_PP:.0f} points", lo=-MILD_PP),
             f"... and loses at most mildly (our reading: {MILD_PP:.0f} points) where it does not beat it (Table 8)",
             f"no task worse by more than {MILD_PP:.0f} points",
             f"Table 8: transfer - large-S >= -{MILD_PP:.0f} points")):
        cells = {}
        for b in benches:
            x, y = paired_scores(rows, b, _kind("transfer"), _kind("large-S"))
            if x:
                name = next(r["system"] for r in rows if r.get("benchmark") == b and r.get("kind") == "large-S")
                cells[b] = difference_cell(x, y, ("transfer", name), bound)
        out.append(Claim(claim, paper, read, "points", bound, cells, title))
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
                 f"App. B.7: about {100 * paper:.0f}% of tokens hold {100 * delta:.0f}% of attention")


def table12_claims(loaded, benches: list[str], run: str) -> list[Claim]:
    config, rows, _ = loaded
    rows, _ = same_examples(rows)
    cascade = config.get("cascade") or {}
    verify = cascade.get("verify") or "answer"
    verify = "+".join(verify) if isinstance(verify, list) else verify  # a run of both variants lists them
    targets = {r["system"] for r in rows if r.get("kind") == "target"}
    target = ", ".join(sorted(targets)) or "-"
    run_dir = f"runs/{RUNS['12']}/{run}"
    out = []
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
    out.append(Claim("token-level speculative decoding (small drafts for large) is slower than the large model "
                     "decoding alone, with a high draft rejection (Table 12; verdict on the latency)",
                     f"{paper_numbers.TABLE12['spec_decode_slowdown']:.2f}x latency, "
                     f"{100 * paper_numbers.TABLE12['draft_rejection_rate']:.0f}% rejection (ChartQA)",
                     f"{run_dir}: target {target} alone and with the small model's drafts", "x", bound, cells,
                     "Table 12: speculative decoding slower than the target (> 1x)"))
    # MAI's speedup over the large model reasoning as Table 12 measures it: its target must reason (-R).
    if targets and all(t.endswith("-R") for t in targets):
        bound = Bound("faster: speedup > 1x", lo=1.0, strict=True)
        cells = {}
        for b in benches:
            alone, m = paired_latency(rows, b, _kind("target"), _kind("MAI"))
            if alone:
                cells[b] = ratio_cell(alone, m, bound)
        device = (config.get("provenance") or {}).get("gpu") or "CPU, transformers, batch 1"
        out.append(Claim(f"MAI faster than the large model reasoning (Table 12; ours: {device})",
                         f"{paper_numbers.TABLE12['mai_vllm_speedup_over_8b_r']:.2f}x (vLLM, H100)",
                         f"{run_dir}: target {target}; MAI verify={verify}, {transfer_words(config)}", "x",
                         bound, cells, "Table 12: MAI faster than the target reasoning (> 1x)"))
    return out


# ---------------------------------------------------------------------------------------------- build

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
    claims = table10_claims(loaded["10"], benches, run_name, Path(runs) / RUNS["10"] / run_name)
    if loaded["08"] is not None:
        claims[3:3] = table08_claims(loaded["08"], benches, run_name)
    if loaded["07"] is not None:
        claims[3:3] = [table07_claim(loaded["07"], benches, run_name)]
    if loaded["09"] is not None:
        claims.append(table09_claim(loaded["09"], benches, run_name))
    if loaded["12"] is not None:
        claims += table12_claims(loaded["12"], benches, run_name)
    df = pd.DataFrame.from_records([c.record() for c in claims],
                                   columns=["claim", "paper", "read", *benches, "here"]).fillna("-")
    note = (report.provenance_note(config, described, rows10).split(" Accuracy is")[0]
            + " Each cell: our estimate, its 95% interval, the questions it was measured on (n) and the verdict"
              " the interval allows: 'holds' when the whole interval is on the paper's side of its bound,"
              " 'does not hold' when wholly on the other side, else 'cannot tell'. Intervals: Wilson for"
              " fractions; Newcombe's paired score interval (1998, method 10) for differences of two systems'"
              " accuracy on the same questions; a paired bootstrap over queries (seed"
              f" {SEED}, {DRAWS} draws) for latency ratios, the verdict on the ratio of means; Student's t over"
              " questions for App. B.7's share. The paper's numbers are Qwen3-VL 2B/8B on vision benchmarks"
              " (H100); ours are the runs named in each row.")
    tables = report.write_table(df, report_dir, NAME, config, note, "The paper's claims beside our measurements")
    figure = plot(claims, benches, report.figure_path(report_dir, NAME, config), config, described, note)
    return dict(tables=tables, figures=[figure], markdown=tables[0].read_text(), frame=df, claims=claims,
                readme=readme_summary(claims, benches, config))


VERDICT_MARKERS = {HOLDS: "o", NOT: "X", UNSURE: "s"}


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
        for edge in (b.lo, b.hi):
            if edge is not None:
                ax.axhline(k * edge, color="0.3", ls="--", lw=1, zorder=1, label="the paper's bound")
        for i, bench in enumerate(benches):
            if bench in c.cells:
                x = c.cells[bench]
                err = [[k * max(0.0, x.estimate - x.lo)], [k * max(0.0, x.hi - x.estimate)]] if x.lo == x.lo else None
                ax.errorbar(i, k * x.estimate, yerr=err, fmt=VERDICT_MARKERS[x.verdict], ms=6, capsize=3,
                            color=style.VERDICT_COLORS[x.verdict], zorder=3, label=x.verdict)
        ax.set_xlim(-0.5, len(benches) - 0.5)
        ax.set_xticks(range(len(benches)), benches)
        style.benchmark_ticks(ax, rotation=45)
        ax.set_ylabel({"%": "%", "points": "accuracy difference (points)", "x": "latency ratio (x)"}[c.unit])
        if c.unit == "%":
            ax.set_ylim(-3, 103)
        if c.unit == "x" and c.cells:  # ratios from 0.7x to 27x: a log axis once they span more than a decade
            span = [v for x in c.cells.values() for v in (x.lo, x.hi, x.estimate) if v == v] + [b.lo or 1.0]
            if min(span) > 0 and max(span) / min(span) > 10:
                style.log_axis(ax, "y")
        if not c.cells:  # the run has no rows of the systems this claim compares yet
            ax.text(0.5, 0.5, "not measured yet", transform=ax.transAxes, ha="center", va="center", color="0.4")
        ax.set_title("\n".join(textwrap.wrap(c.title, 40)), fontsize=9)
    order = ["the paper's bound", "the paper's band", HOLDS, NOT, UNSURE]
    seen = {}
    for ax in fig.axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    labels = [x for x in order if x in seen]
    style.outside_legend(fig, [seen[x] for x in labels], labels, title="verdict (95% interval)")
    fig.suptitle("The paper's claims beside ours: estimate and 95% interval per task", fontsize=10)
    data = [dict(claim=c.claim, read=c.read, unit=c.unit, bound=dict(lo=c.bound.lo, hi=c.bound.hi,
                                                                    strict=c.bound.strict, words=c.bound.words),
                 tasks={b: dict(estimate=x.estimate, lo=x.lo, hi=x.hi, n=x.n, verdict=x.verdict)
                        for b, x in c.cells.items()}) for c in claims]
    return style.save(fig, path, config, described, note, data=dict(claims=data))


README_MARKS = ("<!-- claims table: python -m analysis.claims --readme -->", "<!-- end of claims table -->")


def readme_summary(claims: list[Claim], benches: list[str], config: dict) -> str:
    """The README's short form of the table: how many claim-task cells hold, then one table row a claim with
    each task's verdict, estimate and interval, and n (the full table and the figure carry the rest)."""
    preset = config.get("preset")
    cells = [c for claim in claims for c in claim.cells.values()]
    count = {v: sum(c.verdict == v for c in cells) for v in (HOLDS, NOT, UNSURE)}
    ns = sorted({c.n for c in cells}) or [0]
    lines = [f"What the committed `{preset}` runs say: of {len(cells)} claim-task cells "
             f"(n = {ns[0]}-{ns[-1]} questions a cell), {count[HOLDS]} hold, {count[NOT]} do not hold and "
             f"{count[UNSURE]} cannot tell. A verdict follows the 95% interval: 'holds' only when the whole "
             "interval is on the paper's side of its bound, 'cannot tell' where it crosses it. Intervals, the runs "
             f"each row reads and its transfer: [paper_tables/claims.{preset}.md](paper_tables/claims.{preset}.md); "
             "every table: [results](docs/results.md).",
             "", "| claim (the paper) | n | " + " | ".join(benches) + " |", "|---" * (len(benches) + 2) + "|"]
    words = {HOLDS: "**holds**", NOT: "does not hold", UNSURE: "*cannot tell*"}
    for c in claims:
        n = sorted({x.n for x in c.cells.values()})
        row = []
        for bench in benches:
            x = c.cells.get(bench)
            text = "-" if x is None else f"{words[x.verdict]}: {x.value}" + (f", n={x.n}" if len(n) > 1 else "")
            row.append(text if c.cells else "not measured yet")
        shown = n[0] if len(n) == 1 else "per cell" if n else "-"
        lines.append(f"| {c.title} ({c.paper}) | {shown} | " + " | ".join(row) + " |")
    return "\n".join(lines)


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
    ap.add_argument("--readme", action="store_true", help="also replace the repository README's copy of the table")
    args = ap.parse_args(argv)
    out = build(Path(args.runs), args.preset, args.report_dir or Path(args.runs) / "claims" / args.preset)
    if args.readme:
        update_readme(Path(__file__).resolve().parent.parent / "README.md", out["readme"])
    print(out["markdown"])


if __name__ == "__main__":
    main()
