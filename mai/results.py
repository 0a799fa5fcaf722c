"""Runs as data: runs/<experiment>/<run-name>/config.json + results.jsonl, appended as rows complete.

Running the same command again resumes: rows whose key is already in results.jsonl are skipped, a torn
last line (the process was killed mid-write) is cut off, and nothing is written twice. A run directory
holding a different configuration is refused rather than mixed.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Iterable

from mai import MaiError

RESULTS = "results.jsonl"
CONFIG = "config.json"
# Provenance fields that may differ between a run and its resumption.
_VOLATILE = ("provenance", "wandb")


def row_key(*parts) -> str:
    """The identity of one result row, e.g. row_key(example_id, model, mode)."""
    return "|".join(str(p) for p in parts)


def provenance(device: str | None = None) -> dict:
    """What produced a run: code version, packages, machine."""
    root = Path(__file__).resolve().parent.parent

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                                  timeout=10).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None

    import importlib.metadata as md

    versions = {}
    for pkg in ("torch", "transformers", "accelerate", "datasets", "wandb", "vllm"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return dict(git_commit=git("rev-parse", "HEAD"), git_dirty=bool(git("status", "--porcelain")),
                packages=versions, python=sys.version.split()[0], platform=platform.platform(),
                cpu_count=os.cpu_count(), gpu=gpu, device=device, argv=sys.argv)


class RunStore:
    """One run directory: its config and its append-only results."""

    def __init__(self, out: str | os.PathLike, experiment: str, run_name: str, config: dict):
        self.dir = Path(out) / experiment / run_name
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.dir / CONFIG
        self.results_path = self.dir / RESULTS
        self.config = config
        self._write_config(config)
        self._keys = {row["key"] for row in self.rows()}

    def _write_config(self, config: dict) -> None:
        if self.config_path.exists():
            old = json.loads(self.config_path.read_text())
            strip = lambda c: {k: v for k, v in c.items() if k not in _VOLATILE}  # noqa: E731
            if strip(old) != strip(config):
                changed = sorted(k for k in set(old) | set(config)
                                 if k not in _VOLATILE and old.get(k) != config.get(k))
                raise MaiError(f"{self.dir} holds a run with another configuration (differs in: "
                               f"{', '.join(changed)}); pass another --run-name or --out")
        self.config_path.write_text(json.dumps(config, indent=2, sort_keys=True, default=str) + "\n")

    def rows(self) -> list[dict]:
        """Every complete row; a torn last line is cut off the file so the next append starts clean."""
        rows, good_end, size = _parse(self.results_path)
        if good_end != size:
            with open(self.results_path, "r+b") as f:
                f.truncate(good_end)
        return rows

    def done(self, key: str) -> bool:
        return key in self._keys

    def append(self, row: dict) -> None:
        if row["key"] in self._keys:
            return
        with open(self.results_path, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._keys.add(row["key"])

    def pending(self, keys: Iterable[str]) -> list[str]:
        return [k for k in keys if k not in self._keys]

    def write_json(self, name: str, obj) -> None:
        """A side file of the run (models.json, memory.json), rewritten whole."""
        (self.dir / name).write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def _parse(path: Path) -> tuple[list[dict], int, int]:
    """The complete rows of a results file, the byte offset where they end, and the file's size."""
    if not path.exists():
        return [], 0, 0
    data = path.read_bytes()
    rows, good_end = [], 0
    for line in data.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
        good_end += len(line)
    return rows, good_end, len(data)


def read_rows(run_dir: str | os.PathLike) -> list[dict]:
    """Rows of a finished or partial run, for analysis (no model needed; the file is left as it is)."""
    return _parse(Path(run_dir) / RESULTS)[0]
