"""Experiments 07 and 10 on tiny checkpoint directories written by scripts/make_checkpoint.py, passed where
a downloaded checkpoint goes (--models DIR, --small/--large DIR): AutoProcessor, from_pretrained, the
directory's own chat template, Thinking recognised from the directory."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TINY = ["--preset", "cpu", "--limit", "1", "--think-tokens", "6", "--simple-tokens", "3", "--wandb", "disabled"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """tiny-small as an Instruct and as a Thinking directory (same weights), tiny-large as Instruct."""
    root = tmp_path_factory.mktemp("checkpoints")
    script = REPO / "scripts" / "make_checkpoint.py"
    made = {"small": ["tiny-small", root / "small"], "small-think": ["tiny-small", root / "small-think", "--thinking"],
            "large": ["tiny-large", root / "large"]}
    for args in made.values():
        out = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-2000:]
    return {name: str(args[1]) for name, args in made.items()}


def _rows(run):
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


def test_table7_on_checkpoint_directories(dirs, tmp_path, experiment):
    experiment("07_prompt_modes").main(TINY + ["--benchmarks", "synth-chartqa", "--models",
                                               f"{dirs['small']},{dirs['small-think']}",
                                               "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)])
    run = tmp_path / "runs" / "07_prompt_modes" / "cpu"
    described = json.loads((run / "models.json").read_text())
    assert described["small"]["spec"] == dirs["small"] and described["small-think"]["spec"] == dirs["small-think"]
    assert described["small"]["thinking"] is False and described["small-think"]["thinking"] is True
    assert all(d["random_weights"] is True for d in described.values())  # the directories' marker
    rows = {(r["model"], r["mode"]): r for r in _rows(run)}
    assert len(rows) == 4 and not any(r["error"] for r in rows.values())
    # The Thinking template opens <think>\n (2 tokens) after the same Simple prompt ...
    assert rows["small-think", "simple"]["input_tokens"] == rows["small", "simple"]["input_tokens"] + 2
    # ... and a Thinking checkpoint is not asked to reason in words: its Think prompt is the question alone,
    # without the Simple post-prompt (mai.prompts), so it is shorter than its Simple prompt.
    assert rows["small-think", "think"]["input_tokens"] < rows["small-think", "simple"]["input_tokens"]
    assert rows["small", "think"]["input_tokens"] > rows["small", "simple"]["input_tokens"]
    assert (tmp_path / "paper_tables" / "table7_prompt_modes.cpu.md").exists()


def test_table10_on_checkpoint_directories(dirs, tmp_path, experiment):
    experiment("10_mai").main(TINY + ["--benchmarks", "synth-pope", "--small", dirs["small"], "--large", dirs["large"],
                                      "--transfer", "sparse", "--sparse-layer", "2",
                                      "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)])
    run = tmp_path / "runs" / "10_mai" / "cpu"
    rows = _rows(run)
    assert {r["kind"] for r in rows} == {"large-S", "large-R", "small-R", "Full RT", "MAI"}
    assert not any(r["error"] for r in rows)
    systems = {r["system"] for r in rows}
    assert systems >= {"large-R", "small-R"}  # labels from the directory names
    assert sum(s.startswith("MAI ") for s in systems) == 2  # one row per verification variant
    mai = next(r for r in rows if r["kind"] == "MAI")
    assert mai["route"] in ("simple", "reasoning", "transfer")
    described = json.loads((run / "models.json").read_text())
    assert {d["spec"] for d in described.values()} == {dirs["small"], dirs["large"]}
    assert (tmp_path / "paper_tables" / "table10_mai.cpu.md").exists()


def test_a_checkpoint_directory_takes_its_pixel_bounds_without_a_future_warning(dirs):
    """The pixel bounds reach a checkpoint's processor as transformers 5.24's `size`: given as min_pixels /
    max_pixels they went on to every processor call too, where transformers warns (FutureWarning) that the
    form is deprecated. The image is sized by the bounds either way: 640x480 within 64*64..128*128 pixels."""
    import warnings

    from PIL import Image

    from mai.generation import HFGenerator, Request
    from mai.models import load_model

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        model = load_model(dirs["small"], device="cpu", min_pixels=64 * 64, max_pixels=128 * 128)
        result = HFGenerator(model, 0).generate(Request(question="What colour?", images=[Image.new("RGB", (640, 480))],
                                                        mode="simple", max_new_tokens=1))
    size = model.processor.image_processor.size
    assert (size.shortest_edge, size.longest_edge) == (64 * 64, 128 * 128)
    # 640x480 -> smart_resize to 128x96 (factor 32) -> 4x3 merged patches = 12 image tokens
    text_only = HFGenerator(model, 0).generate(Request(question="What colour?", images=[], mode="simple",
                                                       max_new_tokens=1))
    assert result.input_tokens - text_only.input_tokens == 12 + 2  # + the vision start and end tokens


def test_each_spec_is_read_once_along_mai_answer_and_the_server(dirs, monkeypatch, capsys):
    """A model spec resolves once into one record (mai.model_specs.resolve) that the image check, the loader and
    the server's labels read: each directory's config and chat template are read once a process, where four
    places along `mai serve`'s argv each read them again before."""
    from mai import model_specs
    from mai.__main__ import main
    from mai.serving import server

    reads = []
    family, thinking = model_specs.checkpoint_family, model_specs.is_thinking
    monkeypatch.setattr(model_specs, "checkpoint_family", lambda spec: reads.append(("config", spec)) or family(spec))
    monkeypatch.setattr(model_specs, "is_thinking",
                        lambda spec, fam=None: reads.append(("template", spec)) or thinking(spec, fam))
    model_specs.resolve.cache_clear()
    pair = ["--small", dirs["small"], "--large", dirs["large"]]
    main(["answer", "--preset", "cpu", *pair, "--question", "Is 4 even?", "--think-tokens", "4", "--threads", "1"])
    assert "route:" in capsys.readouterr().out
    system, close, _ = server.build(server.parse(["--preset", "cpu", *pair, "--think-tokens", "4", "--threads", "1"]))
    assert system.cascade.names == {"small": "small", "large": "large"}  # the labels, from the same records
    assert sorted(reads) == sorted((kind, d) for d in (dirs["small"], dirs["large"]) for kind in ("config", "template"))
