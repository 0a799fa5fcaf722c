"""Rows another run already computed under the same settings, copied instead of computed again.

Table 10's baselines 1.5B-S, 0.5B-R and Full RT are, call for call, Table 8's large-S, small-R and full
transfer (experiments/08 and 10 build them with the same mai.batch functions). On the cpu-real preset they are
about a third of the regeneration time, so each script takes the other's finished batches (--reuse-from).

A copy is exact only where the donor made the same calls: the same models and weights, the same
generation settings, the same examples in the same batches (greedy output in bf16 can depend on what else
is in the batch, through padding and kernel shapes). So the settings named in SAME_SETTINGS and the package
versions must be equal, and a batch is copied only whole: our batch (chunk i of the example list, as
mai.batch.run_systems_stage_major cuts it) is taken only if the donor holds a row without error for each of
its examples. A donor that ran the same list cut at the same size made that batch exactly. A copied row
keeps the donor's outputs and times and says where it came from under "reused_from".
"""
from __future__ import annotations

import json
from pathlib import Path

from mai.data import Example
from mai.results import CONFIG, RunStore, read_rows, row_key

# Config fields whose values decide what a model system's calls are and which batches they run in.
SAME_SETTINGS = ("small", "large", "dtype", "device", "threads", "attn", "seed", "think_tokens", "simple_tokens",
                 "think_prompt", "max_pixels", "image_policy", "benchmarks", "split", "limit", "data_files",
                 "datasets", "order", "batch_size")
# Fields a script may lack, and the value it then runs with (experiments/08 has no --backend: transformers).
DEFAULTS = {"backend": "hf", "tensor_parallel": 1}
# Systems that are the same calls under two names (Table 10's "Full RT" is Table 8's "transfer").
SAME_KIND = {"Full RT": "transfer", "transfer": "Full RT"}


def mismatch(ours: dict, donor: dict) -> str | None:
    """Why the donor's rows are not ours, or None when its settings are."""
    for key in SAME_SETTINGS + tuple(DEFAULTS):
        a, b = ours.get(key, DEFAULTS.get(key)), donor.get(key, DEFAULTS.get(key))
        if a != b:
            return f"{key} differs ({b!r} there, {a!r} here)"
    packages = lambda c: c.get("provenance", {}).get("packages")  # noqa: E731
    if packages(ours) != packages(donor):
        return "package versions differ"
    if ours.get("order") != "stage":
        return "only stage-major batches are copied"
    return None


def donor_rows(donor_dir: Path, kind: str) -> dict[str, dict]:
    """The donor's finished rows of one system kind (or its SAME_KIND name), by example id."""
    rows = read_rows(donor_dir)
    kinds = {kind, SAME_KIND.get(kind)}
    return {r["example_id"]: r for r in rows if r.get("kind") in kinds and not r.get("error")}


def copy_batches(store: RunStore, donor_dir: str | Path | None, fields: dict, examples: list[Example],
                 batch_size: int) -> int:
    """Copy into `store` the donor's rows of every whole batch of `examples` that is still pending here and
    that the donor finished; returns how many rows were copied. Nothing when there is no donor, or when its
    settings differ (a note on stderr says which)."""
    if donor_dir is None or not (Path(donor_dir) / CONFIG).exists():
        return 0
    donor_dir = Path(donor_dir)
    if donor_dir.resolve() == store.dir.resolve():
        return 0
    why = mismatch(json.loads(store.config_path.read_text()), json.loads((donor_dir / CONFIG).read_text()))
    models = [d / "models.json" for d in (store.dir, donor_dir)]
    if not why and all(m.exists() for m in models) and len({json.dumps(json.loads(m.read_text()), sort_keys=True) for m in models}) > 1:
        why = "the loaded models differ (models.json)"
    if why:
        print(f"note: not reusing {donor_dir}'s rows: {why}", flush=True)
        return 0
    found = donor_rows(donor_dir, fields["kind"])
    copied = 0
    for start in range(0, len(examples), batch_size):
        batch = examples[start:start + batch_size]
        keys = [row_key(ex.id, *fields.values()) for ex in batch]
        if len(store.pending(keys)) != len(keys) or any(ex.id not in found for ex in batch):
            continue
        for ex, key in zip(batch, keys):
            row = found[ex.id]
            store.append({**row, **fields, "key": key, "reused_from": f"{donor_dir.as_posix()}:{row['key']}"})
            copied += 1
    return copied
