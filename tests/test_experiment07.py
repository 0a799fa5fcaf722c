"""Table 7's script end to end on the CPU preset: outputs, W&B offline, kill-and-resume, one-line errors."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "experiments" / "07_prompt_modes.py"
SMALL = ["--preset", "cpu", "--limit", "2", "--think-tokens", "6", "--simple-tokens", "4"]


def _run(args, tmp_path, **kw):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args, "--out", str(tmp_path / "runs"),
                           "--report-dir", str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=600, **kw)


def _keys(tmp_path):
    lines = (tmp_path / "runs" / "07_prompt_modes" / "cpu" / "results.jsonl").read_text().splitlines()
    return [json.loads(x)["key"] for x in lines]


def test_cpu_preset_writes_results_table_figure_and_offline_wandb(tmp_path):
    out = _run(SMALL + ["--wandb", "offline"], tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    run = tmp_path / "runs" / "07_prompt_modes" / "cpu"
    config = json.loads((run / "config.json").read_text())
    assert config["preset"] == "cpu" and config["models"] == ["tiny-small", "tiny-large"]
    assert config["provenance"]["packages"]["transformers"].startswith("5.24")
    # What the scores and images mean (lmms-eval's commit, the image-size policy) and where the data came from.
    assert config["scoring"]["lmms_eval"].endswith("75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3")
    assert config["image_policy"] == "simple" and len(config["image_pixels"]) == 2
    assert config["datasets"] == {"synth-chartqa": "synthetic", "synth-pope": "synthetic"}
    keys = _keys(tmp_path)
    assert len(keys) == len(set(keys)) == 2 * 2 * 2 * 2  # benchmarks x examples x modes x models
    table = (tmp_path / "paper_tables" / "table7_prompt_modes.cpu.md").read_text()
    assert "RANDOM weights" in table and "SYNTHETIC data" in table and "not the paper's" in table
    assert (tmp_path / "paper_tables" / "table7_prompt_modes.cpu.tex").exists()
    assert (tmp_path / "figures" / "table7_prompt_modes.cpu.png").stat().st_size > 1000
    assert not (tmp_path / "paper_tables" / "table7_prompt_modes.md").exists()  # cpu never writes paper's
    assert list((run / "wandb").glob("offline-run-*"))
    models = json.loads((run / "models.json").read_text())
    assert models["tiny-small"]["random_weights"] is True


def test_killed_run_resumes_with_every_row_once(tmp_path):
    args = SMALL + ["--limit", "3", "--wandb", "disabled"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, str(SCRIPT), *args, "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    results = tmp_path / "runs" / "07_prompt_modes" / "cpu" / "results.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 5):
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = len(_keys(tmp_path))
    assert 5 <= partial < 24, partial
    with open(results, "a") as f:  # as if killed in the middle of a write
        f.write('{"key": "torn')
    out = _run(args, tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    keys = _keys(tmp_path)
    assert len(keys) == len(set(keys)) == 24


@pytest.mark.parametrize("flags,message", [
    (["--models", "tiny-medium"], "error: unknown model 'tiny-medium'"),
    (["--benchmarks", "chartqb"], "error: unknown benchmark 'chartqb'"),
    (["--device", "cuda"], "error: --device cuda was asked for but CUDA is not available"),
    (["--models", "Qwen/Qwen3-VL-2B-Instruct", "--benchmarks", "synth-pope"], "error: cannot "),
])
def test_user_mistakes_are_one_line(tmp_path, flags, message):
    if "cuda" in flags and __import__("torch").cuda.is_available():
        pytest.skip("CUDA present")
    env_extra = {"HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, str(SCRIPT), *SMALL, *flags, "--wandb", "disabled",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, **env_extra})
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [x for x in out.stderr.splitlines() if x.strip() and "%|" not in x]
    assert len(lines) == 1 and lines[0].startswith(message), out.stderr


def test_help():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "Table 7" in out.stdout and "--preset" in out.stdout
