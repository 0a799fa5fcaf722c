#!/usr/bin/env python
"""Why a batched greedy output differs from the batch-1 one: the logits at the step where the two part.

Table 10 counts, per system, the batch-1 latency sample's queries whose output is not the stage-major run's
(analysis.table10.batch_invariance). Greedy decoding is the same function of the logits in both runs, so a
difference means the batch's padding and kernel shapes moved the logits enough to swap the top two tokens at
some step. This script measures how close that step was, for each differing query of one model and one prompt
mode (the rows of kinds small-S, small-R, large-S, large-R), in each --dtypes, at batch size 1.

Where both rows keep their output token ids (newer runs' rows do), the step is the first id where they
differ: the prompt and the common ids are prefilled and the two ids' logits read. Older rows keep only text, so
there the step is found from the text: the prompt and the two outputs' common text up to its last space
(re-tokenized: a word boundary, where the tokenization is the usual one) are prefilled, then decoding follows
the model's top-1 token while both texts continue with it; the first step where they do not is the branch,
with the best-ranked token that continues each text. A merged token can mislead the text route (".\n\n"
against "." then " Here" reads as " Here" against "\n\n" one step late); each case records which route it
took. Either way: the two tokens' logits, the gap, the top-1 (the batch-1 text's token, the batched one's, or
neither), and bf16's spacing at the logits' size (the gap between adjacent bf16 numbers: a gap of one spacing
is a tie that rounding decides).

    .venv/bin/python scripts/check_batch_ties.py                   # cpu-real: Table 10's latency sample
    .venv/bin/python scripts/check_batch_ties.py --kinds large-R --limit 5 --dtypes bf16
    .venv/bin/python scripts/check_batch_ties.py --speculative runs/12_speculative_decoding/cpu-real

With --speculative, the pairs are Table 12's instead: the target decoding alone (one token a forward, the
"single" side) against speculative decoding, which verifies the draft's tokens several to a forward (the
"batched" side). Greedy verification keeps exactly the target's tokens in exact arithmetic (the tiny fp32
test in tests/test_speculative.py); in bf16 the multi-token forward rounds differently, so ties go either way.

The prefix is prefilled where the runs decoded it token by token, so even the bf16 logits here are not bit for
bit the sample's: the top-1 says whether this forward picks the sample's token. A diagnostic, not a test: it
reads committed rows and loads the models the runs name. Writes --json (default
runs/bench/batch_ties.<run>.json) with every number and what produced it.
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import sys
from argparse import Namespace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Row kind -> (the config field naming its model, its prompt mode): mai.evaluate.model_system's kinds.
KINDS = {"small-S": ("small", "simple"), "small-R": ("small", "think"),
         "large-S": ("large", "simple"), "large-R": ("large", "think")}


def bf16_spacing(x: float) -> float:
    """The distance between adjacent bf16 numbers at |x| (8 significant bits)."""
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7) if x else 0.0


def differing(batched: list[dict], single: list[dict], kinds: list[str]) -> list[tuple[dict, dict]]:
    """(batch-1 row, stage-major row) for each query of the given kinds whose output text differs."""
    from analysis.table10 import paired_with_batched

    return [(r, other) for r, other in paired_with_batched(batched, single)
            if r.get("kind") in kinds and r.get("prediction") != other.get("prediction")]


def speculative_pairs(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(target-alone row, speculative row) for each query of a 12_speculative_decoding run whose texts differ."""
    alone = {r["example_id"]: r for r in rows if r.get("kind") == "target" and not r.get("error")}
    return [(alone[r["example_id"]], r) for r in rows
            if r.get("kind") == "speculative" and not r.get("error") and r["example_id"] in alone
            and r.get("prediction") != alone[r["example_id"]].get("prediction")]


def shared_prefix(a: str, b: str) -> str | None:
    """The two texts' common start, cut back to its last space (a word boundary); None where one text is the
    other's start (an output that stopped or was cut earlier: no token tie to measure)."""
    c = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if c is None:
        return None
    return a[:max(a.rfind(" ", 0, c + 1), 0)]


def first_difference(a: list[int], b: list[int]) -> int | None:
    """The first index where two outputs' token ids differ; None where one is the other's start."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def _measured(tok, logits, a: int | None, b: int | None, position: int) -> dict:
    """The two parting tokens' logits at one step, the gap, the top-1 and bf16's spacing there."""
    order = logits.topk(2).indices.tolist()
    la = float(logits[a]) if a is not None else None
    lb = float(logits[b]) if b is not None else None
    return dict(position=position, single_token=tok.decode([a]) if a is not None else None,
                batched_token=tok.decode([b]) if b is not None else None, logit_single=la, logit_batched=lb,
                gap=la - lb if la is not None and lb is not None else None, top1=tok.decode([order[0]]),
                top1_is="single" if order[0] == a else "batched" if order[0] == b else "other",
                top2_margin=float(logits[order[0]] - logits[order[1]]),
                bf16_spacing=bf16_spacing(max(abs(x) for x in (la, lb, float(logits[order[0]])) if x is not None)))


def branch_ids(loaded, inputs: dict, single: list[int], batched: list[int]) -> dict | None:
    """From the rows' own token ids (newer runs' rows keep them): prefill the prompt and the outputs'
    common ids, and measure the two ids where they part. No re-tokenizing, so a merged token (".\n\n" against
    "." then " Here") is measured where the runs took it, not one step late. None where one output is the
    other's start."""
    import torch

    c = first_difference(single, batched)
    if c is None:
        return None
    ids = torch.cat([inputs["input_ids"], torch.tensor([single[:c]], dtype=torch.long, device=loaded.device)], 1)
    with torch.inference_mode():
        logits = loaded.model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
    return _measured(loaded.tokenizer, logits, single[c], batched[c], c)


def branch(loaded, inputs: dict, single: str, batched: str, max_steps: int = 32) -> dict | None:
    """From text alone (rows without token ids): prefill the prompt and the texts' shared prefix, then follow the
    top-1 token while both texts continue with it; at the first step where they do not, the best-ranked token
    continuing each text and their logits. None where the texts are one the other's start."""
    import torch

    prefix = shared_prefix(single, batched)
    if prefix is None:
        return None
    tok = loaded.tokenizer
    ids = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    step_ids = torch.cat([inputs["input_ids"], torch.tensor([ids], dtype=torch.long, device=loaded.device)], 1)
    past, done, followed = None, prefix, 0
    with torch.inference_mode():
        for _ in range(max_steps):
            out = loaded.model(input_ids=step_ids, cache=past, use_cache=True, logits_to_keep=1)
            past, logits = out.cache, out.logits[0, -1].float()
            order = logits.argsort(descending=True)[:200].tolist()
            pieces = {t: tok.decode([t]) for t in order}
            rest = single[len(done):], batched[len(done):]

            def best(text: str) -> int | None:
                return next((t for t in order if pieces[t] and text.startswith(pieces[t])), None)

            top1 = order[0]
            if pieces[top1] and all(r.startswith(pieces[top1]) for r in rest):
                done, followed = done + pieces[top1], followed + 1
                step_ids = torch.tensor([[top1]], dtype=torch.long, device=loaded.device)
                continue
            return _measured(tok, logits, best(rest[0]), best(rest[1]), len(ids) + followed)
    return dict(position=None, note=f"texts still together after {max_steps} steps")


def _ids(single: dict, batched: dict) -> tuple[list[int], list[int]] | None:
    """Both rows' output token ids, where both keep them."""
    a, b = single.get("output_ids"), batched.get("output_ids")
    return (a, b) if isinstance(a, list) and isinstance(b, list) else None


def _shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


def summarize(cases: list[dict], dtypes: list[str]) -> dict:
    out = dict(queries=len(cases), prefix_only=sum(c.get("prefix_only", False) for c in cases))
    for dtype in dtypes:
        rows = [c[dtype] for c in cases if c.get(dtype) and c[dtype].get("gap") is not None]
        out[dtype] = dict(
            measured=len(rows),
            gap_within_1_spacing=sum(abs(r["gap"]) <= r["bf16_spacing"] for r in rows),
            gap_within_2_spacings=sum(abs(r["gap"]) <= 2 * r["bf16_spacing"] for r in rows),
            top1={w: sum(r["top1_is"] == w for r in rows) for w in ("single", "batched", "other")},
            median_abs_gap=(sorted(abs(r["gap"]) for r in rows)[len(rows) // 2] if rows else None))
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--single", type=Path, default=ROOT / "runs/10_mai/cpu-real-latency",
                   help="the batch-1 run (default: Table 10's cpu-real latency sample)")
    p.add_argument("--batched", type=Path, default=ROOT / "runs/10_mai/cpu-real",
                   help="the stage-major run of the same settings (default: Table 10's cpu-real run)")
    p.add_argument("--speculative", type=Path, metavar="RUN",
                   help="instead of --single/--batched: a 12_speculative_decoding run; its target alone against its "
                   "speculative decoding (module docstring)")
    p.add_argument("--kinds", default="large-R,small-R,large-S,small-S",
                   help="row kinds to check, comma-separated (one model, one prompt mode each)")
    p.add_argument("--dtypes", default="bf16,fp32", help="dtypes of the forward, comma-separated")
    p.add_argument("--limit", type=int, help="at most this many differing queries per kind")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the batch-1 run's, so that its bf16 "
                   "sums are added in the same order)")
    p.add_argument("--json", type=Path, help="output (default runs/bench/batch_ties.<single run's name>.json)")
    args = p.parse_args(argv)

    import torch
    from tqdm.auto import tqdm

    from mai import MaiError
    from mai.benchmarks import get_benchmark
    from mai.evaluate import request_for
    from mai.experiment import load_examples
    from mai.generation import HFGenerator
    from mai.models import load_model
    from mai.results import CONFIG, read_rows

    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise MaiError(f"--kinds: {', '.join(unknown)} is not one of {', '.join(KINDS)}")
    dtypes = [d for d in args.dtypes.split(",") if d]
    runs = (args.speculative,) if args.speculative else (args.single, args.batched)
    for run in runs:
        if not (run / CONFIG).exists():
            raise MaiError(f"{run} is not a run directory (no {CONFIG})")
    config = json.loads((runs[0] / CONFIG).read_text())
    args.threads = args.threads or config.get("threads") or 1
    torch.set_num_threads(args.threads)
    by_kind: dict[str, list] = {}
    if args.speculative:  # one kind: the target with its own prompt mode
        by_kind["speculative"] = speculative_pairs(read_rows(args.speculative))
        model_of = {"speculative": (config["target"], config.get("mode") or "think")}
    else:
        for pair in differing(read_rows(args.batched), read_rows(args.single), kinds):
            by_kind.setdefault(pair[0]["kind"], []).append(pair)
        model_of = {kind: (config[role], mode) for kind, (role, mode) in KINDS.items()}
    if args.limit is not None:
        by_kind = {k: v[:args.limit] for k, v in by_kind.items()}
    examples = {ex.id: ex for ex in load_examples(Namespace(
        benchmarks=config["benchmarks"], limit=None, seed=config.get("seed", 0), data_files={},
        split=config.get("split"), think_prompt=config.get("think_prompt")))}

    cases: list[dict] = []
    work: list[tuple[dict, dict, dict, tuple | None]] = []  # (case, batch-1 row, batched row, their ids: _ids)
    for kind, kind_pairs in by_kind.items():
        spec, mode = model_of[kind]
        for single, batched in kind_pairs:
            ids = _ids(single, batched)
            case = dict(example_id=single["example_id"], kind=kind, model=spec, mode=mode,
                        parted_by="token ids" if ids else "text",
                        prefix_only=(first_difference(*ids) if ids else
                                     shared_prefix(single["prediction"], batched["prediction"])) is None)
            cases.append(case)
            work.append((case, single, batched, ids))
    # Kinds of one model (large-S and large-R) share its load: each model is loaded once per dtype.
    for spec in dict.fromkeys(case["model"] for case in cases):
        todo = [w for w in work if w[0]["model"] == spec and not w[0]["prefix_only"]]
        for dtype in dtypes:
            loaded = load_model(spec, device="cpu", dtype=dtype, attn_implementation=config.get("attn", "sdpa"))
            gen = HFGenerator(loaded)
            for case, single, batched, ids in tqdm(todo, desc=f"{Path(str(spec)).name} {dtype}", unit="query"):
                ex = examples[single["example_id"]]
                request = request_for(ex, get_benchmark(ex.benchmark), [], case["mode"], config["think_tokens"],
                                      config.get("simple_tokens"))
                case[dtype] = (branch_ids(loaded, gen.encode(request), *ids) if ids else
                               branch(loaded, gen.encode(request), single["prediction"], batched["prediction"]))
            del loaded, gen

    summary = {kind: summarize([c for c in cases if c["kind"] == kind], dtypes) for kind in by_kind}
    out = args.json or ROOT / "runs" / "bench" / (f"speculative_ties.{args.speculative.name}.json" if args.speculative
                                                  else f"batch_ties.{args.single.name}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(
        produced_by=dict(script="scripts/check_batch_ties.py",
                         **(dict(speculative=_shown(args.speculative)) if args.speculative else
                            dict(single=_shown(args.single), batched=_shown(args.batched))),
                         models=sorted({c["model"] for c in cases}),
                         device="cpu", threads=args.threads, machine=platform.processor() or platform.machine(),
                         torch=torch.__version__),
        summary=summary, cases=cases), indent=1) + "\n")
    for kind, s in summary.items():
        print(f"{kind}: {s['queries']} differing queries, {s['prefix_only']} of them one text the other's start",
              *(f"  {d}: top-1 {s[d]['top1']}, |gap| <= 1 bf16 spacing on {s[d]['gap_within_1_spacing']}, "
                f"<= 2 on {s[d]['gap_within_2_spacings']}, median |gap| {s[d]['median_abs_gap']}"
                for d in dtypes if d in s), sep="\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    from mai import cli

    cli.run(main)
