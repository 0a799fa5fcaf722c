"""Merge the shards of one run (--shard I/N, one per GPU or node) into one run directory, then build its table.

    python -m analysis.merge_shards runs/10_mai/paper-shard*of4                 # -> runs/10_mai/paper
    python -m analysis.merge_shards DIR... --out runs/10_mai/paper --allow-partial
    python -m analysis.table10 runs/10_mai/paper                                # (done by --table, default)

The shards' configs must agree except for the shard itself, the device and provenance (each shard ran
on its own machine); the merged config.json is shard 0's without the shard, plus `merged_shards` (N)
and every shard's provenance. Rows are concatenated and deduplicated by key; models.json is the union
of the shards'; memory.json keeps each field's maximum. Every shard 0..N-1 must be there, unless
--allow-partial.
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
from pathlib import Path

from mai import MaiError
from mai.results import CONFIG, RESULTS, read_rows

_SHARD_FREE = ("shard", "device", "provenance", "wandb")  # fields shards may differ in
_SUFFIX = re.compile(r"-shard\d+of\d+$")
_TABLES = {"10_mai": "table10"}  # experiment -> analysis module with build(run_dir, report_dir)


def _read_json(path: Path, default=None):
    return json.loads(path.read_text()) if path.exists() else default


def merge_shards(run_dirs, out_dir=None, allow_partial: bool = False) -> Path:
    """Merge shard run directories into out_dir (default: beside them, the run name without -shardIofN)."""
    dirs = [Path(d) for d in run_dirs]
    if not dirs:
        raise MaiError("merge_shards needs at least one shard run directory")
    shards = {}
    for d in dirs:
        config = _read_json(d / CONFIG)
        if config is None:
            raise MaiError(f"{d} is not a run directory (no {CONFIG})")
        if not config.get("shard"):
            raise MaiError(f"{d} is not a shard (its config has no shard; run with --shard I/N)")
        i, n = (int(x) for x in str(config["shard"]).split("/"))
        if i in shards:
            raise MaiError(f"shard {i}/{n} given twice: {shards[i][0]} and {d}")
        shards[i] = (d, config, n)
    counts = {n for _, _, n in shards.values()}
    if len(counts) != 1:
        raise MaiError(f"the shards split the examples differently (N = {sorted(counts)})")
    n = counts.pop()
    missing = sorted(set(range(n)) - set(shards))
    if missing and not allow_partial:
        raise MaiError(f"shard(s) {', '.join(f'{i}/{n}' for i in missing)} missing; pass them too, or "
                       "--allow-partial to merge what is there")
    order = sorted(shards)
    first_dir, first, _ = shards[order[0]]
    strip = lambda c: {k: v for k, v in c.items() if k not in _SHARD_FREE}  # noqa: E731
    for i in order[1:]:
        d, config, _ = shards[i]
        if strip(config) != strip(first):
            changed = sorted(k for k in set(config) | set(first)
                             if k not in _SHARD_FREE and config.get(k) != first.get(k))
            raise MaiError(f"{d} was run with another configuration than {first_dir} (differs in: "
                           f"{', '.join(changed)}); shards of one run must agree")

    out = Path(out_dir) if out_dir else first_dir.parent / _SUFFIX.sub("", first_dir.name)
    if out.resolve() in {d.resolve() for d in dirs}:
        raise MaiError(f"the merged run would overwrite shard {out}; pass --out")
    out.mkdir(parents=True, exist_ok=True)
    merged = {k: v for k, v in first.items() if k != "shard"}
    merged.update(merged_shards=n, shards_present=order,
                  shard_provenance={f"{i}/{n}": shards[i][1].get("provenance") for i in order})
    (out / CONFIG).write_text(json.dumps(merged, indent=2, sort_keys=True, default=str) + "\n")

    rows, seen = [], set()
    for i in order:
        for row in read_rows(shards[i][0]):
            if row["key"] not in seen:
                seen.add(row["key"])
                rows.append(row)
    (out / RESULTS).write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
    described, memory = {}, {}
    for i in order:
        described.update(_read_json(shards[i][0] / "models.json", {}))
        for k, v in _read_json(shards[i][0] / "memory.json", {}).items():
            memory[k] = max(memory.get(k, v), v)
    if described:
        (out / "models.json").write_text(json.dumps(described, indent=2, sort_keys=True) + "\n")
    if memory:
        (out / "memory.json").write_text(json.dumps(memory, indent=2, sort_keys=True) + "\n")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dirs", nargs="+", help="the shards' run directories")
    ap.add_argument("--out", help="merged run directory (default: beside the shards, without -shardIofN)")
    ap.add_argument("--allow-partial", action="store_true", help="merge even if some shards are missing")
    ap.add_argument("--no-table", action="store_true", help="only merge; do not build the experiment's table")
    ap.add_argument("--report-dir", help="where the table goes (default: the merged run's report/; the "
                    "repository's own: --report-dir .)")
    a = ap.parse_args(argv)
    out = merge_shards(a.run_dirs, a.out, a.allow_partial)
    print(f"merged {len(a.run_dirs)} shard(s), {len(read_rows(out))} rows: {out}")
    module = _TABLES.get(json.loads((out / CONFIG).read_text()).get("experiment"))
    if module and not a.no_table:
        outputs = importlib.import_module(f"analysis.{module}").build(out, a.report_dir or out / "report")
        print("\n" + outputs["markdown"])
    return out


if __name__ == "__main__":
    from mai.cli import run

    run(main)
