"""BIG-bench's task files (Srivastava et al. 2022, "Beyond the Imitation Game"), fetched once, without the hub.

The task files ship in PyPI's ``bigbench`` 1.0.0, a 358 MB source archive that is never installed here
(it pulls tensorflow). The pip that setup.sh installs (26.3) cannot fetch it: it builds an sdist's metadata
even for ``pip download --no-deps``, and then refuses this one, whose setup.py requires ``bleurt @ file://...``
("Distributions from PyPI cannot declare direct URL dependencies", pip/_internal/metadata/direct_references.py).
pip 23.2.1 downloads it by name (measured here), so ``download`` fetches pip 23.2.1's wheel with the
environment's pip and runs pip from that wheel (a wheel of pip runs as ``python pip-*.whl/pip``), checks the
archive's sha256, reads only the wanted ``bigbench-1.0.0/bigbench/benchmark_tasks/<task>/task.json`` members out of it in
a temporary folder (deleted after), and writes each to ``<cache>/bigbench/<task>/task.json`` with a
``mai_source.json`` beside it (package, archive and its sha256, member path, the file's sha256). Cache root: $MAI_CACHE, else
~/.cache/mai. Every task is checked before anything is written, and each folder is built under a
temporary name beside it and renamed into place, so a failed fetch leaves nothing half-written.

``python -m mai.benchmarks._bigbench`` (called by ``bash scripts/setup.sh --real``) fetches the task of
every registered BIG-bench benchmark (``mai.benchmarks._bbh.BigBenchBenchmark`` reads them).

Since 2026-12-05 the registry these machines reach answers ``bigbench==1.0.0`` with "No matching
distribution" (its index lists 0.0.1 only) and the archive's file URL with 403, a refusal, not a time-out.
So set-up passes ``--if-available``: a refused download is one warning line and the rest of the set-up goes
on; the task files then come from a copy of the archive (``--sdist PATH``), or a run reads a task.json in
BIG-bench's schema given as ``--data-files BENCHMARK=PATH`` (the repository ships three of object_counting's
examples: mai/assets/bigbench/). A wrong checksum or a broken archive still fails.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from mai import MaiEnvironmentError, MaiError, cache

PACKAGE, VERSION = "bigbench", "1.0.0"
PIN = f"{PACKAGE}=={VERSION}"
SDIST = f"{PACKAGE}-{VERSION}.tar.gz"
# The archive's sha256, as pip reports it (pip 26.3 --require-hashes with another hash: "Got 1bb398a5...").
SDIST_SHA256 = "1bb398a5512c6d798cdebe0dfa0ac03f67f6033fa6b39c6ef71df978c7cbc5c2"
SOURCE_FILE = cache.SOURCE_FILE
# The last pip measured here to download bigbench 1.0.0 (pip 26.3 refuses it: module doc).
PIP_FOR_SDIST = "pip==23.2.1"
SETUP_HINT = ("run bash scripts/setup.sh --real (or .venv/bin/python -m mai.benchmarks._bigbench [--sdist PATH]), "
              "or give a task.json as --data-files BENCHMARK=PATH")


def member_path(task: str) -> str:
    """Where a task's file lies inside the bigbench 1.0.0 archive."""
    return f"{PACKAGE}-{VERSION}/bigbench/benchmark_tasks/{task}/task.json"


def cache_dir() -> Path:
    return cache.root() / "bigbench"


def _source(task: str, sdist: Path, sdist_sha256: str, data: bytes) -> dict:
    return {"package": PIN, "archive": sdist.name, "archive_sha256": sdist_sha256,
            "member": member_path(task), "sha256": hashlib.sha256(data).hexdigest()}


def _recorded(task: str) -> dict | None:
    """The cached task's source record when it came from this package version, else None."""
    marker = cache_dir() / task / SOURCE_FILE
    try:
        source = json.loads(marker.read_text())
    except (OSError, ValueError):
        return None
    fresh = source.get("package") == PIN and (cache_dir() / task / "task.json").is_file()
    return source if fresh else None


def task_file(task: str) -> Path:
    """The cached task.json of a BIG-bench task; one line saying how to fetch it when it is not there."""
    if _recorded(task) is None:
        raise MaiEnvironmentError(f"BIG-bench task {task!r} is not in {cache_dir()}: {SETUP_HINT}")
    return cache_dir() / task / "task.json"


class ArchiveUnavailable(MaiEnvironmentError):
    """pip could not download the archive (no network, or the registry refuses it)."""


def _pip_download(directory: Path) -> Path:
    """bigbench 1.0.0's archive in ``directory``, by name through PyPI with pip 23.2.1 (PIP_FOR_SDIST) run from
    its own wheel; one line when pip cannot (no network, no such file)."""
    def pip(*args: str) -> None:
        done = subprocess.run([*args], capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise ArchiveUnavailable(f"cannot download {SDIST} with pip ({last}); where PyPI is out of reach, "
                                      f"pass a copy of it: python -m mai.benchmarks._bigbench --sdist PATH")

    pip(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(directory), PIP_FOR_SDIST)
    wheel = next(directory.glob("pip-*.whl"))
    pip(sys.executable, str(wheel / "pip"), "download", "-q", "--no-deps", "-d", str(directory / "sdist"), PIN)
    return directory / "sdist" / SDIST


def download(directory: Path) -> Path:
    """bigbench 1.0.0's source archive, downloaded into ``directory`` and checked against its sha256."""
    target = _pip_download(directory)
    digest = _sha256_file(target)
    if digest != SDIST_SHA256:
        raise MaiEnvironmentError(f"{SDIST} from PyPI has sha256 {digest}, not {PIN}'s {SDIST_SHA256}: "
                                  f"download it again")
    return target


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_members(sdist: Path, tasks: list[str]) -> dict[str, bytes]:
    """The task.json of each task, read out of the archive; one line for an archive that cannot be read, a
    task it lacks, or a task file that is not a BIG-bench task (JSON with "examples")."""
    wanted = {member_path(t): t for t in tasks}
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar:  # streamed: the archive is read once, front to back
                task = wanted.get(member.name)
                if task is not None and member.isfile():
                    found[task] = tar.extractfile(member).read()
    except (OSError, tarfile.TarError, EOFError) as err:
        raise MaiEnvironmentError(f"cannot read {sdist} ({type(err).__name__}: {err})") from None
    missing = [t for t in tasks if t not in found]
    if missing:
        raise MaiError(f"{PIN} has no BIG-bench task {', '.join(map(repr, missing))} "
                       f"(no {member_path(missing[0])} in {sdist.name})")
    for task, data in found.items():
        try:
            ok = isinstance(json.loads(data).get("examples"), list)
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            raise MaiError(f"{member_path(task)} in {sdist.name} is not a BIG-bench task file (JSON with examples)")
    return found


def _publish(task: str, data: bytes, source: dict) -> Path:
    """One task's folder, published whole (mai.cache.publish)."""
    folder = cache.publish(lambda tmp: (tmp / "task.json").write_bytes(data), cache_dir() / task, source)
    return folder / "task.json"


def fetch(tasks, sdist: str | Path | None = None, force: bool = False) -> dict[str, Path]:
    """Cache the task.json of each task (task -> cached path). Tasks already cached from bigbench 1.0.0 are
    kept unless ``force``; the rest come out of ``sdist`` when given, else out of a fresh download."""
    tasks = list(dict.fromkeys(tasks))
    todo = [t for t in tasks if force or _recorded(t) is None]
    if todo:
        with tempfile.TemporaryDirectory(prefix="mai-bigbench-") as tmp:
            archive = Path(sdist) if sdist is not None else download(Path(tmp))
            found = read_members(archive, todo)  # everything is checked before anything is written
            digest = _sha256_file(archive)
            for task in todo:
                _publish(task, found[task], _source(task, archive, digest, found[task]))
    return {t: cache_dir() / t / "task.json" for t in tasks}


def used_tasks() -> list[str]:
    """The BIG-bench task of every registered benchmark that reads one."""
    from mai.benchmarks import BENCHMARKS

    # by attribute: under ``python -m`` this module is __main__, a copy of the class the benchmarks subclass
    return sorted({b.bigbench_task for b in BENCHMARKS.values() if getattr(b, "bigbench_task", "")})


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m mai.benchmarks._bigbench",
                                description=f"Cache the BIG-bench task files MAI's benchmarks read (from {PIN}).")
    p.add_argument("--sdist", help=f"a local {SDIST} instead of downloading it from PyPI")
    p.add_argument("--force", action="store_true", help="fetch again even when cached")
    p.add_argument("--if-available", action="store_true",
                   help="a download that pip cannot make (no network, a registry that refuses it) is a warning, "
                        "exit 0 (what set-up uses); a wrong checksum or a broken archive still fails")
    p.add_argument("tasks", nargs="*", help="task names (default: those the registered benchmarks read)")
    args = p.parse_args(argv)

    def go():
        tasks = args.tasks or used_tasks()
        if args.sdist is None and any(_recorded(t) is None for t in tasks):
            print(f"downloading {SDIST} (358 MB) from PyPI for the BIG-bench task files", flush=True)
        for task, path in fetch(args.tasks or used_tasks(), args.sdist, args.force).items():
            source = json.loads((path.parent / SOURCE_FILE).read_text())
            n = len(json.loads(path.read_text())["examples"])
            print(f"{task}: {path} ({n} examples, sha256 {source['sha256'][:16]}..., from {source['member']})")

    try:
        go()
    except ArchiveUnavailable as err:
        if not args.if_available:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(err.exit_status)
        print(f"warning: no BIG-bench task files ({err}); runs of the BIG-bench benchmarks stop with one line "
              f"until they are cached, or read a task.json given as --data-files BENCHMARK=PATH", file=sys.stderr)
    except MaiError as err:  # one line, as mai.cli.run prints it (mai.cli is a layer above the benchmarks)
        print(f"error: {err}", file=sys.stderr)
        sys.exit(err.exit_status)


if __name__ == "__main__":
    main()
