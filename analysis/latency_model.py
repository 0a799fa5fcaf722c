"""A latency model of MAI: predict per-query latency and the speedup over the large model reasoning (L-R)
from a stage profile (experiments/03) and either a cascade run (experiments/10) or agreement rates.

Each model call costs

    preprocess + vision + forward + prefill_per_token * tokens prefilled + decode_per_token * (outputs - 1)

where the vision encoder counts when the call sees the image afresh and the first output token comes out
of the prefill, as 03 measures it. A prefill is a forward pass, and a forward pass costs at least what a
one-token forward costs (weights streamed once, kernels launched once): `forward` is the decode cost of
one token, and prefill_per_token is what 03's measured prefill adds beyond it, per prompt token. Without
that floor, short prompts (small models, or any model on a fast GPU) would make prefill look free and
long ones (reasoning transfer) would be over-predicted. A call's prefill skips the tokens it found cached
(the small model's second stage). MAI's expected latency is the sum over its stages weighted by how
often each is reached:

    T_MAI = T_S(small) + T_S(large) + (1 - r_simple) * (T_think(small) + T_answer(small))
            + r_transfer * T_transfer(large, prompt + reasoning)            [+ the attention prefill, sparse]

Use it before spending GPU hours: profile your hardware with 03, then

    python -m analysis.latency_model --profile runs/03_stage_profiling/gpu --run runs/10_mai/paper
        # predicted against measured, per system, from the run's own token counts and routes
    python -m analysis.latency_model --profile runs/03_stage_profiling/gpu --small 2B --large 8B \\
        --prompt-tokens 350 --reasoning-tokens 400 --large-reasoning-tokens 600 --route-simple 0.55 \\
        --route-reasoning 0.15
        # what speedup to expect at those agreement rates and token counts
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from analysis import report
from analysis.table03 import timed_runs
from mai.models import model_label


@dataclasses.dataclass(frozen=True)
class Cost:
    """One model's costs on one machine, in seconds."""

    preprocess: float
    vision: float
    forward: float  # the floor of any forward pass: one decoded token's cost
    prefill_per_token: float  # what each prompt token adds above that floor
    decode_per_token: float

    def prefill(self, tokens: int) -> float:
        return self.forward + self.prefill_per_token * tokens

    def call(self, prefilled: int, outputs: int, image: bool = True) -> float:
        fixed = self.preprocess + (self.vision if image else 0.0)
        return fixed + self.prefill(prefilled) + self.decode_per_token * max(outputs - 1, 0)


def profile(run_dir) -> dict[str, Cost]:
    """Per model label, the mean costs of 03's timed runs (all output lengths pooled)."""
    _, rows, _ = report.load_run(run_dir)
    runs = timed_runs(rows)
    if runs.empty:
        raise SystemExit(f"error: {run_dir} has no timed runs of experiments/03_stage_profiling.py")
    costs = {}
    for model, g in runs.groupby("model"):
        decode, prefill, tokens = g.decode_per_token.mean(), g.prefill.mean(), g.input_tokens.mean()
        forward = min(decode, prefill)
        costs[model] = Cost(g.preprocess.mean(), g.vision.mean(), forward, (prefill - forward) / tokens, decode)
    return costs


def predict_call(cost: Cost, result: dict, mode: str) -> float:
    """A recorded call's latency from its token counts. A second stage ('answer') reuses the first
    stage's cache, image included; the attention capture is one prefill without decode."""
    prefilled = result["input_tokens"] - result.get("cached_tokens", 0)
    if mode == "attention":
        return cost.vision + cost.prefill(prefilled)
    return cost.call(prefilled, result["output_tokens"], image=mode != "answer")


def predict_run(run_dir, costs: dict[str, Cost]) -> list[dict]:
    """Predicted against measured mean latency per (benchmark, system) of a 10_mai run."""
    config, rows, _ = report.load_run(run_dir)
    labels = {"small": model_label(config["small"]), "large": model_label(config["large"])}
    missing = sorted(set(labels.values()) - set(costs))
    if missing:
        raise SystemExit(f"error: the profile has no timed runs of {', '.join(missing)}; profile them with "
                         f"experiments/03_stage_profiling.py --models ...")
    groups: dict[tuple, list[tuple[float, float]]] = {}
    for r in rows:
        if r.get("error"):
            continue
        calls = r.get("trace") or r.get("calls")
        if calls:
            predicted = sum(predict_call(costs[c["model"]], c["result"], c["mode"]) for c in calls)
        elif r.get("kind") in ("large-S", "large-R", "small-R"):
            mode = "simple" if r["kind"].endswith("-S") else "think"
            predicted = predict_call(costs[labels[r["kind"].split("-")[0]]], r, mode)
        else:
            continue  # a system recorded without its calls cannot be predicted call by call
        for bench in (r["benchmark"], "all"):
            groups.setdefault((bench, r["system"]), []).append((predicted, r["latency"]))
    out = []
    for (bench, system), pairs in sorted(groups.items()):
        pred = sum(p for p, _ in pairs) / len(pairs)
        meas = sum(m for _, m in pairs) / len(pairs)
        out.append(dict(benchmark=bench, system=system, n=len(pairs), predicted_s=pred, measured_s=meas,
                        error_pct=100.0 * (pred - meas) / meas))
    return out


def predict_speedup(small: Cost, large: Cost, prompt_tokens: int, reasoning_tokens: int,
                    large_reasoning_tokens: int, route_simple: float, route_reasoning: float,
                    simple_tokens: int = 4, answer_tokens: int = 4, suffix_tokens: int = 30) -> dict:
    """MAI's expected latency and its speedup over L-R at given agreement rates and token counts."""
    route_transfer = 1.0 - route_simple - route_reasoning
    if route_transfer < -1e-9:
        raise SystemExit("error: --route-simple + --route-reasoning must not exceed 1")
    stage1 = small.call(prompt_tokens, simple_tokens) + large.call(prompt_tokens, simple_tokens)
    stage2 = small.call(prompt_tokens, reasoning_tokens) + small.call(suffix_tokens, answer_tokens, image=False)
    stage3 = large.call(prompt_tokens + reasoning_tokens, simple_tokens)
    mai = stage1 + (1 - route_simple) * stage2 + route_transfer * stage3
    large_r = large.call(prompt_tokens, large_reasoning_tokens)
    return dict(mai_s=mai, large_r_s=large_r, speedup=large_r / mai, route_transfer=route_transfer)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, help="a run directory of experiments/03_stage_profiling.py")
    ap.add_argument("--run", help="a run directory of experiments/10_mai.py: predicted against measured")
    ap.add_argument("--small", help="small model label in the profile (e.g. 2B)")
    ap.add_argument("--large", help="large model label in the profile (e.g. 8B)")
    ap.add_argument("--prompt-tokens", type=int, default=350, help="prompt tokens, image tokens included")
    ap.add_argument("--reasoning-tokens", type=int, default=400, help="the small model's reasoning tokens")
    ap.add_argument("--large-reasoning-tokens", type=int, default=600, help="the large model's reasoning tokens (L-R)")
    ap.add_argument("--simple-tokens", type=int, default=4, help="output tokens of a Simple answer")
    ap.add_argument("--route-simple", type=float, default=0.55, help="fraction agreeing at the Simple prompt")
    ap.add_argument("--route-reasoning", type=float, default=0.15, help="fraction agreeing after the small model reasons")
    args = ap.parse_args(argv)
    costs = profile(args.profile)
    for label, c in sorted(costs.items()):
        print(f"profile {label}: preprocess {c.preprocess * 1e3:.1f} ms, vision {c.vision * 1e3:.1f} ms, "
              f"prefill {c.forward * 1e3:.2f} ms + {c.prefill_per_token * 1e3:.4f} ms/token, "
              f"decode {c.decode_per_token * 1e3:.2f} ms/token")
    if args.run:
        rows = predict_run(args.run, costs)
        print(f"\n{'benchmark':<16}{'system':<22}{'n':>4}{'predicted s':>13}{'measured s':>12}{'error':>9}")
        for r in rows:
            print(f"{r['benchmark']:<16}{r['system']:<22}{r['n']:>4}{r['predicted_s']:>13.3f}{r['measured_s']:>12.3f}"
                  f"{r['error_pct']:>8.1f}%")
        return
    if not (args.small and args.large):
        ap.error("give --run, or --small and --large with agreement rates and token counts")
    for label in (args.small, args.large):
        if label not in costs:
            sys.exit(f"error: no model '{label}' in the profile; it has: {', '.join(sorted(costs))}")
    p = predict_speedup(costs[args.small], costs[args.large], args.prompt_tokens, args.reasoning_tokens,
                        args.large_reasoning_tokens, args.route_simple, args.route_reasoning, args.simple_tokens)
    print(json.dumps({k: round(v, 4) for k, v in p.items()}))
    print(f"predicted MAI {p['mai_s']:.3f} s per query against {args.large}-R {p['large_r_s']:.3f} s: "
          f"speedup {p['speedup']:.2f}x")


if __name__ == "__main__":
    main()
