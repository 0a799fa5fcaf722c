"""Rows another run already computed under the same settings, copied instead of computed again.

Table 10's baselines 1.5B-S, 0.5B-R and Full RT are, call for call, Table 8's large-S, small-R and full
transfer, and Table 7's (1.5B, simple), (0.5B, think) and (1.5B, think) rows are Table 10's 1.5B-S, 0.5B-R and
1.5B-R (the scripts build them with the same mai.batch functions). On the cpu-real preset they are about a
third of the regeneration time, so each script takes the others' finished batches (--reuse-from). A system is
named by what it calls (identity): one model with one prompt mode, or full transfer from one model to another.

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
from mai.evaluate import with_roles
from mai.model_specs import model_label
from mai.results import CONFIG, RunStore, read_rows, row_key

# Config fields whose values decide what a system's calls are and which batches they run in (the models are
# in the system's identity).
SAME_SETTINGS = ("dtype", "device", "threads", "attn", "seed", "think_tokens", "simple_tokens", "think_prompt",
                 "simple_prompt", "max_pixels", "image_policy", "benchmarks", "split", "limit", "data_files", "datasets", "order",
                 "batch_size")
# Fields a script may lack, and the value it then runs with (experiments/08 has no --backend: transformers).
DEFAULTS = {"backend": "hf", "tensor_parallel": 1}
# Row kinds of one model with one prompt mode (mai.evaluate.model_system: its role's token fields), and the
# names of full transfer (Table 10's "Full RT" is Table 8's "transfer").
ROLE_MODE = {"small-R": ("small", "think"), "small-S": ("small", "simple"), "large-S": ("large", "simple"),
             "large-R": ("large", "think")}
TRANSFER = ("transfer", "Full RT")
ROLE_FIELDS = ("small_output_tokens", "large_output_tokens")


def identity(fields: dict, config: dict) -> tuple | None:
    """What a system calls: ("model", checkpoint, mode) or ("transfer", small, large); None when it is
    something else (MAI, a sparse transfer, a layer of Table 9), which no other script computes."""
    kind = fields.get("kind")
    if kind in ROLE_MODE:
        role, mode = ROLE_MODE[kind]
        return ("model", config.get(role), mode)
    if kind in TRANSFER:
        return ("transfer", config.get("small"), config.get("large"))
    if kind is None and "model" in fields and "mode" in fields:  # Table 7: {"model": label, "mode": mode}
        specs = [m for m in config.get("models") or [] if model_label(m) == fields["model"]]
        return ("model", specs[0], fields["mode"]) if len(specs) == 1 else None
    return None


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


def donor_rows(donor_dir: Path, donor_config: dict, wanted: tuple) -> dict[str, dict]:
    """The donor's finished rows of the system with identity `wanted`, by example id."""
    return {r["example_id"]: r for r in read_rows(donor_dir)
            if not r.get("error") and identity(r, donor_config) == wanted}


def as_ours(row: dict, fields: dict, key: str, origin: dict) -> dict:
    """The donor's row under our system's name: its role's token fields as mai.evaluate.model_system writes
    them (Table 7's rows have none), and where it was first computed ({"run": directory, "key": its key})."""
    copied = {k: v for k, v in row.items() if k not in ("kind", "system", "model", "mode")}
    if fields.get("kind") not in TRANSFER:  # a transfer's own small and large tokens stay; one model's are re-derived
        copied = {k: v for k, v in copied.items() if k not in ROLE_FIELDS}
    if fields.get("kind") in ROLE_MODE:
        copied = with_roles(copied, ROLE_MODE[fields["kind"]][0])
    return {**copied, **fields, "key": key, "reused_from": row.get("reused_from") or origin}


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
    ours, theirs = json.loads(store.config_path.read_text()), json.loads((donor_dir / CONFIG).read_text())
    wanted = identity(fields, ours)
    if wanted is None or None in wanted:
        return 0
    why = mismatch(ours, theirs)
    described = [json.loads(m.read_text()) if m.exists() else {} for m in (store.dir / "models.json",
                                                                            donor_dir / "models.json")]
    if not why and any(described[0][k] != described[1][k] for k in described[0].keys() & described[1].keys()):
        why = "the loaded models differ (models.json)"
    if why:
        print(f"note: not reusing {donor_dir}'s rows: {why}", flush=True)
        return 0
    found = donor_rows(donor_dir, theirs, wanted)
    copied = 0
    for start in range(0, len(examples), batch_size):
        batch = examples[start:start + batch_size]
        keys = [row_key(ex.id, *fields.values()) for ex in batch]
        if len(store.pending(keys)) != len(keys) or any(ex.id not in found for ex in batch):
            continue
        for ex, key in zip(batch, keys):
            row = found[ex.id]
            store.append(as_ours(row, fields, key, {"run": donor_dir.as_posix(), "key": row["key"]}))
            copied += 1
    return copied
