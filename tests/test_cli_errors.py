"""Every user mistake stops an experiment script before any model or dataset loads: one line on stderr,
no traceback, exit status 2 for a flag that is wrong and 1 for the machine (a file, a directory). Each
case runs the real script as a subprocess, as a user would."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parent.parent
BAD_PARQUET = "{tmp}/chartqa-no-answers.parquet"  # the ChartQA schema without answer and type
NOT_A_DIR = "{tmp}/a-file"

CASES = [  # script, flags, the one line expected on stderr (its start), exit status
    ("09_layer_ablation", ["--preset", "cpu", "--delta", "1.5"], "error: --delta must lie in (0, 1], got 1.5", 2),
    ("10_mai", ["--preset", "cpu", "--think-tokens", "0"], "error: --think-tokens must be at least 1, got 0", 2),
    ("07_prompt_modes", ["--preset", "cpu", "--benchmarks", ","], "error: --benchmarks is empty", 2),
    ("07_prompt_modes", ["--preset", "cpu", "--models", " , "], "error: --models is empty", 2),
    ("08_reasoning_transfer", ["--preset", "cpu", "--benchmarks", "synth-pope,chartqb"],
     "error: unknown benchmark 'chartqb'", 2),
    ("10_mai", ["--preset", "cpu", "--small", "tiny-medium"], "error: unknown model 'tiny-medium' (--small)", 2),
    ("07_prompt_modes", ["--preset", "cpu", "--modes", "simple,thinking"], "error: --modes wants", 2),
    ("10_mai", ["--preset", "cpu", "--systems", ","], "error: --systems is empty", 2),
    ("09_layer_ablation", ["--preset", "cpu", "--layers", "2,7"],
     "error: --layers 7 is outside the small model's layers 0..3", 2),
    ("10_mai", ["--preset", "cpu", "--transfer", "sparse", "--sparse-layer", "4"],
     "error: --sparse-layer 4 is outside the small model's layers 0..3", 2),
    ("10_mai", ["--preset", "cpu", "--shard", "2/2"], "error: --shard wants I/N with 0 <= I < N", 2),
    ("12_speculative_decoding", ["--preset", "cpu", "--num-assistant-tokens", "0"],
     "error: --num-assistant-tokens must be at least 1, got 0", 2),
    ("09_layer_ablation", ["--preset", "cpu", "--heads", "median"], "error: argument --heads: invalid choice", 2),
    ("07_prompt_modes", ["--preset", "cpu", "--data-files", f"chartqa={BAD_PARQUET}"],
     "error: --data-files names chartqa, which this run does not evaluate", 2),
    ("07_prompt_modes", ["--preset", "cpu", "--out", f"{NOT_A_DIR}/runs"],
     f"error: --out {NOT_A_DIR}/runs cannot be created: {NOT_A_DIR} is not a directory", 1),
    ("07_prompt_modes", ["--benchmarks", "chartqa", "--data-files", "chartqa=/nonexistent.parquet"],
     "error: --data-files chartqa=/nonexistent.parquet does not exist", 1),
    ("07_prompt_modes", ["--benchmarks", "chartqa", "--data-files", "chartqa={tmp}/*.nothing"],
     "error: --data-files chartqa={tmp}/*.nothing matches no file", 1),
    ("07_prompt_modes", ["--benchmarks", "chartqa", "--data-files", f"chartqa={NOT_A_DIR}"],
     f"error: --data-files chartqa={NOT_A_DIR} is not a parquet file", 1),
    ("07_prompt_modes", ["--benchmarks", "chartqa", "--data-files", f"chartqa={BAD_PARQUET}"],
     f"error: --data-files chartqa={BAD_PARQUET} lacks column(s) answer, type of the lmms-lab/ChartQA schema", 1),
    ("10_mai", ["--preset", "cpu", "--benchmarks", "object_counting", "--data-files", "object_counting={tmp}/no.json"],
     "error: --data-files object_counting={tmp}/no.json does not exist", 1),
    ("10_mai", ["--preset", "cpu", "--benchmarks", "object_counting", "--data-files", f"object_counting={NOT_A_DIR}"],
     f"error: {NOT_A_DIR} is not a BIG-bench task file (JSON with examples)", 2),
]


@pytest.mark.parametrize("script,flags,line,status", CASES, ids=[" ".join(c[1]) for c in CASES])
def test_a_mistake_is_one_line_before_anything_loads(tmp_path, script, flags, line, status):
    pq.write_table(pa.table({"image": [b"png"], "question": ["How many?"]}), tmp_path / "chartqa-no-answers.parquet")
    (tmp_path / "a-file").write_text("not a directory\n")
    fill = lambda s: s.replace("{tmp}", str(tmp_path))  # noqa: E731
    out = ["--out", str(tmp_path / "runs")] if "--out" not in flags else []
    t0 = time.time()
    proc = subprocess.run([sys.executable, str(REPO / "experiments" / f"{script}.py"), *map(fill, flags), *out,
                           "--wandb", "disabled", "--report-dir", str(tmp_path / "report")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    lines = proc.stderr.strip().splitlines()
    assert (proc.returncode, len(lines)) == (status, 1), proc.stderr[-3000:]
    assert lines[0].startswith(fill(line)), lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "runs").exists() and not (tmp_path / "report").exists()  # nothing opened or written
    assert time.time() - t0 < 120  # seconds (the imports), not a model load: under load allow a margin


def test_benchmarks_and_families_are_read_from_their_registries(monkeypatch):
    """A benchmark file in mai/benchmarks/ or a family file in mai/families/ registers itself; --help and the
    errors then name it with no edit of cli (here: entries added to the registries as a new file's would be)."""
    import dataclasses

    from mai import MaiError, cli, families
    from mai.benchmarks import BENCHMARKS

    monkeypatch.setitem(BENCHMARKS, "docvqa-new", BENCHMARKS["pope"])
    qwen2 = families.by_model_type("qwen2")
    monkeypatch.setitem(families.FAMILIES, "newfamily",
                        dataclasses.replace(qwen2, name="newfamily", model_types=("newfamily",),
                                            architectures={"tiny-newfamily": qwen2.architectures["tiny-qwen2"]}))
    presets = {"cpu": cli.Preset(cli.CPU_MODELS, cli.CPU_BENCHMARKS, limit=1)}
    p = cli.parser("doc", presets)
    cli.add_cascade_flags(p)
    help_text = " ".join(p.format_help().split())  # argparse wraps lines
    assert "comma-separated: chartqa, pope, infovqa, realworldqa, mmbench," in help_text
    assert "docvqa-new" in help_text and "newfamily: tiny-newfamily" in help_text
    assert "qwen3_vl: tiny-small, tiny-large, qwen3-vl-2b" in help_text
    with pytest.raises(MaiError, match="unknown benchmark 'docvqa-old'; choose from: .*docvqa-new"):
        cli.parse(p, presets, ["--preset", "cpu", "--benchmarks", "docvqa-old"])
    with pytest.raises(MaiError, match="unknown model 'tiny-medium' .*by family: .*newfamily: tiny-newfamily"):
        cli.parse(p, presets, ["--preset", "cpu", "--small", "tiny-medium"])
    # the new architecture is a model cli accepts (it reads families.architectures())
    args = cli.parse(p, presets, ["--preset", "cpu", "--benchmarks", "docvqa-new", "--small", "tiny-newfamily"])
    assert (args.small, args.benchmarks) == ("tiny-newfamily", ["docvqa-new"])
