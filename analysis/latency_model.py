"""A latency model of MAI: predict each model call's latency from a stage profile (experiments/03), and from
those MAI's per-query latency for each verification variant and transfer, and its speedup over the large
model reasoning (L-R).

Fitted per model on 03's timed runs (two prompt lengths at least, and the output lengths a run uses):

    vision                         as measured (mean): charged to a call that starts a fresh prompt with its
                                   image; a call that continues a KV cache (the second stage, the sparse
                                   capture) re-encodes no image
    preprocess                     as measured: resizing, patching and tokenising depend on the input images
                                   (a benchmark's, not the profile's simulated one) and not on the model, so
                                   a recorded call is charged its own measured preprocessing and a prediction
                                   at route fractions the mean of the run's fresh calls (the profile's mean
                                   only when no run is given)
    prefill(p) = a + b * p         least squares over runs, p = prompt tokens prefilled (cached ones excluded);
                                   the intercept is the forward pass a prefill of any length costs
    decode(n)  = c + d * (n - 1)   least squares over output lengths n (through the origin with one length):
                                   the first output token comes out of the prefill, as 03 times it

A call costs [preprocess + vision] + prefill(prompt - cached) + decode(outputs). MAI, call by call:

    route simple     small Simple + large Simple                                       (mutual verification)
    route reasoning  + small Think  [+ verify=answer: the second stage, prefill over its suffix, cached prefix]
    route transfer   + large Simple with the reasoning prepended (full, or the kept tokens when sparse)
                     [+ sparse with verify=reasoning: one suffix-only forward on the kept cache, no decode;
                      with verify=answer the capture rides on the second stage's prefill and costs nothing more]
    T_MAI = f_simple * T_simple + f_reasoning * T_reasoning + f_transfer * T_transfer

Use it before spending GPU hours, or to check a run:

    python -m analysis.latency_model --profile runs/03_stage_profiling/gpu --run runs/10_mai/paper
        # predicted against measured mean latency per system, call by call from the run's own token counts
    python -m analysis.latency_model --profile runs/03_stage_profiling/gpu --small 2B --large 8B \\
        --prompt-tokens 350 --reasoning-tokens 400 --large-reasoning-tokens 600 --route-simple 0.55 \\
        --route-reasoning 0.15 --verify answer --transfer sparse --kept-tokens 80
        # the speedup to expect at those route fractions and token counts
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import statistics

import numpy as np

from analysis import report
from analysis.table03 import timed_runs
from mai import MaiError, cli
from mai.cascade import ROUTES
from mai.forced import parse_fractions
from mai.model_specs import model_label

@dataclasses.dataclass(frozen=True)
class Cost:
    """One model's costs on one machine, in seconds."""

    preprocess: float  # a fresh prompt with its image: resize, patching, template, tokenizer
    vision: float  # the vision encoder over that image
    prefill_base: float  # prefill(p) = prefill_base + prefill_per_token * p
    prefill_per_token: float
    decode_base: float  # decode(n) = decode_base + decode_per_token * (n - 1)
    decode_per_token: float

    def prefill(self, tokens: int) -> float:
        return max(self.prefill_base + self.prefill_per_token * tokens, 0.0)

    def decode(self, outputs: int) -> float:
        if outputs < 1:
            return 0.0  # a forward without decode (the sparse capture)
        return max(self.decode_base + self.decode_per_token * (outputs - 1), 0.0)

    def call(self, prompt: int, outputs: int, cached: int = 0, preprocess: float | None = None) -> float:
        """A call over `prompt` tokens of which `cached` come from a kept KV cache, with `outputs` tokens out;
        `preprocess` replaces the profile's preprocessing time (a fresh call's, or a continuation's)."""
        if preprocess is None:
            preprocess = self.preprocess if cached == 0 else 0.0
        return preprocess + (self.vision if cached == 0 else 0.0) + self.prefill(prompt - cached) + self.decode(outputs)


def _line(x: list[float], y: list[float], through_origin: bool = False) -> tuple[float, float]:
    """(intercept, slope) of the least-squares line."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if through_origin:
        return 0.0, float((x * y).sum() / (x * x).sum())
    slope, intercept = np.polyfit(x, y, 1)
    return float(intercept), float(slope)


def fit(runs) -> Cost:
    """One model's Cost from its timed runs (a table03.timed_runs frame)."""
    model = runs.model.iloc[0]
    prompts = runs.input_tokens.astype(float)
    if prompts.nunique() < 2:
        raise MaiError(f"the profile has one prompt length for {model} ({int(prompts.iloc[0])} tokens): prefill "
                       "is fitted as a line, so profile two or more (03_stage_profiling.py --question-tokens 8,128)")
    prefill_base, prefill_per_token = _line(prompts, runs.prefill)
    decoded = runs[runs.generated > 1]
    if decoded.empty:
        raise MaiError(f"the profile has no run of {model} with more than one output token: decode cannot be fitted")
    steps = (decoded.generated - 1).astype(float)
    decode_base, decode_per_token = _line(steps, decoded.decode, through_origin=steps.nunique() < 2)
    # A text-only model's rows have no vision stage (None): it adds nothing to a call.
    vision = 0.0 if runs.vision.isna().all() else float(runs.vision.mean())
    return Cost(float(runs.preprocess.mean()), vision, prefill_base, prefill_per_token, decode_base, decode_per_token)


def profile(*run_dirs) -> dict[str, Cost]:
    """Per model label, its Cost fitted on the timed runs of one or more 03 runs (pooled: profiles taken
    before and after a run on a shared machine average its conditions)."""
    rows = [row for run_dir in run_dirs for row in report.load_run(run_dir)[1]]
    runs = timed_runs(rows)
    if runs.empty:
        raise MaiError(f"{', '.join(map(str, run_dirs))}: no timed runs of experiments/03_stage_profiling.py")
    return {model: fit(g) for model, g in runs.groupby("model", sort=False)}


def predict_call(cost: Cost, result: dict) -> float:
    """A recorded call's latency from its token counts (Result.summary()), its preprocessing as measured."""
    return cost.call(result["input_tokens"], result["output_tokens"], result.get("cached_tokens", 0),
                     preprocess=(result.get("times") or {}).get("preprocess"))


def row_calls(row: dict, labels: dict[str, str]) -> list[tuple[str, dict]]:
    """(model label, call summary) of every model call a results row made; [] when it recorded none."""
    calls = row.get("trace") or row.get("calls")
    if calls:
        return [(c["model"], c["result"]) for c in calls]
    if row.get("kind") in ("large-S", "large-R", "small-R"):  # a baseline row is its one call
        return [(labels[row["kind"].split("-")[0]], row)]
    return []


def run_labels(config: dict) -> dict[str, str]:
    return {"small": model_label(config["small"]), "large": model_label(config["large"])}


def check_models(costs: dict[str, Cost], labels: dict[str, str]) -> None:
    missing = sorted(set(labels.values()) - set(costs))
    if missing:
        raise MaiError(f"the profile has no timed runs of {', '.join(missing)}; profile them with "
                       f"experiments/03_stage_profiling.py --models ...")


def predict_rows(rows: list[dict], costs: dict[str, Cost], labels: dict[str, str]) -> list[dict]:
    """Each error-free row that recorded its calls, with `predicted` (s) beside its measured `latency`."""
    out = []
    for r in rows:
        calls = [] if r.get("error") else row_calls(r, labels)
        if calls:
            out.append({**r, "predicted": sum(predict_call(costs[m], c) for m, c in calls)})
    return out


def predict_run(run_dir, costs: dict[str, Cost]) -> list[dict]:
    """Predicted against measured mean latency per (benchmark, system) of a 10_mai run, call by call."""
    config, rows, _ = report.load_run(run_dir)
    labels = run_labels(config)
    check_models(costs, labels)
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for r in predict_rows(rows, costs, labels):
        for bench in (r["benchmark"], "all"):
            groups.setdefault((bench, r["system"]), []).append((r["predicted"], r["latency"]))
    out = []
    for (bench, system), pairs in sorted(groups.items()):
        pred = statistics.fmean(p for p, _ in pairs)
        meas = statistics.fmean(m for _, m in pairs)
        out.append(dict(benchmark=bench, system=system, n=len(pairs), predicted_s=pred, measured_s=meas,
                        error_pct=100.0 * (pred - meas) / meas))
    return out


# -- MAI at given route fractions ------------------------------------------------------------------------


@dataclasses.dataclass
class Query:
    """Token counts of one query's calls (each a mean over queries)."""

    prompt: float  # the Simple prompt, image tokens included (both models: same template and tokenizer)
    think_prompt: float  # the Think prompt
    simple_tokens: float  # a Simple answer's output tokens
    reasoning_tokens: float  # the small model's reasoning
    large_reasoning_tokens: float  # L-R's output tokens
    transfer_prompt: float  # the large model's Simple prompt with the transferred reasoning (full or kept)
    suffix: float = 0.0  # verify=answer: tokens the second stage prefills after the cached reasoning
    answer_tokens: float = 0.0  # verify=answer: the second stage's output tokens
    capture_suffix: float = 0.0  # sparse with verify=reasoning: tokens of the suffix-only forward
    preprocess: float | None = None  # seconds of a fresh call's preprocessing, as measured (None: the profile's)


def route_latency(small: Cost, large: Cost, q: Query, verify: str, transfer: str) -> dict[str, float]:
    """Per route, the latency of a query that ends there, call by call."""
    pre = q.preprocess
    simple = small.call(q.prompt, q.simple_tokens, preprocess=pre) + large.call(q.prompt, q.simple_tokens, preprocess=pre)
    reasoning = simple + small.call(q.think_prompt, q.reasoning_tokens, preprocess=pre)
    if verify == "answer":
        cached = q.think_prompt + q.reasoning_tokens
        reasoning += small.call(cached + q.suffix, q.answer_tokens, cached=cached)
    final = large.call(q.transfer_prompt, q.simple_tokens, preprocess=pre)
    if transfer == "sparse" and verify == "reasoning":
        final += small.prefill(q.capture_suffix)
    return dict(simple=simple, reasoning=reasoning, transfer=reasoning + final)


def predict_mai(small: Cost, large: Cost, q: Query, fractions: dict[str, float], verify: str = "answer",
                transfer: str = "full") -> dict:
    """MAI's expected latency per query at the given route fractions, L-R's, and the speedup."""
    routes = route_latency(small, large, q, verify, transfer)
    mai = sum(fractions[r] * routes[r] for r in ROUTES)
    large_r = large.call(q.think_prompt, q.large_reasoning_tokens, preprocess=q.preprocess)
    return dict(mai_s=mai, large_r_s=large_r, speedup=large_r / mai, **{f"{r}_s": routes[r] for r in ROUTES})


def query_from_rows(rows: list[dict], labels: dict[str, str]) -> Query:
    """Mean token counts of each kind of call recorded in a 10_mai run's rows (MAI's and the baselines')."""
    by_mode: dict[tuple[str, str], list[dict]] = {}
    fresh: list[float] = []  # preprocessing of every call that started a fresh prompt
    for r in rows:
        if r.get("error"):
            continue
        for c in r.get("trace") or r.get("calls") or []:
            by_mode.setdefault((c["role"], c["mode"]), []).append(c["result"])
        for _, c in row_calls(r, labels):
            if not c.get("cached_tokens") and c.get("output_tokens") and "times" in c:
                fresh.append(c["times"]["preprocess"])
        if r.get("kind") == "large-R":
            by_mode.setdefault(("large", "L-R"), []).append(r)

    def mean(role, mode, value, required=True):
        calls = by_mode.get((role, mode), [])
        if not calls:
            if required:
                raise MaiError(f"the run has no {role} '{mode}' call to take token counts from")
            return 0.0
        return statistics.fmean(value(c) for c in calls)

    new = lambda c: c["input_tokens"] - c.get("cached_tokens", 0)  # noqa: E731
    think_out = mean("small", "think", lambda c: c["output_tokens"])
    return Query(prompt=mean("small", "simple", lambda c: c["input_tokens"]),
                 think_prompt=mean("small", "think", lambda c: c["input_tokens"]),
                 simple_tokens=mean("small", "simple", lambda c: c["output_tokens"]),
                 reasoning_tokens=think_out,
                 large_reasoning_tokens=mean("large", "L-R", lambda c: c["output_tokens"], required=False) or think_out,
                 transfer_prompt=mean("large", "transfer", lambda c: c["input_tokens"]),
                 suffix=mean("small", "answer", new, required=False),
                 answer_tokens=mean("small", "answer", lambda c: c["output_tokens"], required=False),
                 capture_suffix=mean("small", "attention", new, required=False),
                 preprocess=statistics.fmean(fresh) if fresh else None)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, nargs="+", help="run directories of experiments/03_stage_profiling.py "
                    "(several are pooled)")
    ap.add_argument("--run", help="a run directory of experiments/10_mai.py: predicted against measured")
    ap.add_argument("--small", help="small model label in the profile (e.g. 2B)")
    ap.add_argument("--large", help="large model label in the profile (e.g. 8B)")
    ap.add_argument("--prompt-tokens", type=int, default=350, help="Simple prompt tokens, image tokens included")
    ap.add_argument("--think-prompt-tokens", type=int, help="Think prompt tokens (default: --prompt-tokens)")
    ap.add_argument("--reasoning-tokens", type=int, default=400, help="the small model's reasoning tokens")
    ap.add_argument("--large-reasoning-tokens", type=int, default=600, help="the large model's reasoning (L-R)")
    ap.add_argument("--simple-tokens", type=int, default=4, help="output tokens of a Simple answer")
    ap.add_argument("--answer-tokens", type=int, default=4, help="output tokens of the second stage (verify answer)")
    ap.add_argument("--suffix-tokens", type=int, default=30, help="the second stage's (or capture's) suffix tokens")
    ap.add_argument("--kept-tokens", type=int, help="sparse transfer: reasoning tokens kept (default: 20%% of "
                    "the reasoning, the share holding ~80%% of the attention mass in Appendix B.7)")
    ap.add_argument("--verify", default="answer", choices=["answer", "reasoning"])
    ap.add_argument("--transfer", default="full", choices=["full", "sparse"])
    ap.add_argument("--route-simple", type=float, default=0.55, help="fraction agreeing at the Simple prompt")
    ap.add_argument("--route-reasoning", type=float, default=0.15, help="fraction agreeing after the small model reasons")
    args = ap.parse_args(argv)
    costs = profile(*args.profile)
    for label, c in costs.items():
        print(f"profile {label}: preprocess {c.preprocess * 1e3:.1f} ms, vision {c.vision * 1e3:.1f} ms, "
              f"prefill {c.prefill_base * 1e3:.2f} ms + {c.prefill_per_token * 1e3:.4f} ms/token, "
              f"decode {c.decode_base * 1e3:.2f} ms + {c.decode_per_token * 1e3:.2f} ms/token")
    if args.run:
        rows = predict_run(args.run, costs)
        print(f"\n{'benchmark':<16}{'system':<22}{'n':>4}{'predicted s':>13}{'measured s':>12}{'error':>9}")
        for r in rows:
            print(f"{r['benchmark']:<16}{r['system']:<22}{r['n']:>4}{r['predicted_s']:>13.3f}{r['measured_s']:>12.3f}"
                  f"{r['error_pct']:>8.1f}%")
        return
    if not (args.small and args.large):
        ap.error("give --run, or --small and --large with route fractions and token counts")
    for label in (args.small, args.large):
        if label not in costs:
            raise MaiError(f"no model '{label}' in the profile; it has: {', '.join(costs)}")
    fractions = parse_fractions(f"simple={args.route_simple},reasoning={args.route_reasoning},"
                                f"transfer={round(1 - args.route_simple - args.route_reasoning, 9)}")
    kept = args.reasoning_tokens if args.transfer == "full" else (
        args.kept_tokens if args.kept_tokens is not None else round(0.2 * args.reasoning_tokens))
    q = Query(prompt=args.prompt_tokens, think_prompt=args.think_prompt_tokens or args.prompt_tokens,
              simple_tokens=args.simple_tokens, reasoning_tokens=args.reasoning_tokens,
              large_reasoning_tokens=args.large_reasoning_tokens, transfer_prompt=args.prompt_tokens + kept,
              suffix=args.suffix_tokens, answer_tokens=args.answer_tokens, capture_suffix=args.suffix_tokens)
    p = predict_mai(costs[args.small], costs[args.large], q, fractions, args.verify, args.transfer)
    print(json.dumps({k: round(v, 4) for k, v in p.items()}))
    print(f"predicted MAI (verify {args.verify}, {args.transfer} transfer) {p['mai_s']:.3f} s per query against "
          f"{args.large}-R {p['large_r_s']:.3f} s: speedup {p['speedup']:.2f}x")


if __name__ == "__main__":
    cli.run(main)
