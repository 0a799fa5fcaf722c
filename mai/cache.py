"""The user cache: what MAI builds once and reads many times, kept in $MAI_CACHE, else ~/.cache/mai.

Converted tokenizers (mai.tokenizer_sources, under tokenizers/), the real pair's converted checkpoints
(mai.real_checkpoints, under checkpoints/) and BIG-bench's task files (mai.benchmarks._bigbench, under
bigbench/). Each entry is a folder published whole or not at all: built under a temporary name beside its
place and renamed into it, with a record of what it was built from (SOURCE_FILE), so a killed build never
leaves a folder that a later load would trust, and a folder built from another source is rebuilt.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

SOURCE_FILE = "mai_source.json"


def root() -> Path:
    return Path(os.environ.get("MAI_CACHE") or Path.home() / ".cache" / "mai")


def recorded(folder: Path) -> dict | None:
    """The source record of a published folder, or None when there is none (or it cannot be read)."""
    try:
        return json.loads((folder / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return None


def fresh(folder: Path, source: dict) -> bool:
    """A published folder built from exactly `source`."""
    return recorded(folder) == source


def publish(build: Callable[[Path], None], folder: Path, source: dict) -> Path:
    """Run `build(tmp)` into a temporary folder beside `folder`, record `source` in it, then move it into place
    whole (replacing an older one); on any failure nothing is left behind."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        build(tmp)
        (tmp / SOURCE_FILE).write_text(json.dumps(source, indent=1) + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is readable like any other folder
        if folder.exists():
            shutil.rmtree(folder)
        tmp.rename(folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return folder
