"""scripts/gpu_check.sh stops with one clear line where it cannot run (its whole run on a CPU is
`bash scripts/gpu_check.sh --dry-run`, minutes long, not part of the suite)."""
import os
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "gpu_check.sh"


def _run(tmp_path, *args, **env):
    env = {**os.environ, "OUT": str(tmp_path / "out"), "WHEEL_DIR": str(tmp_path / "no-wheels"), "PY": sys.executable,
           **env}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120)


def test_usage_error(tmp_path):
    out = _run(tmp_path, "--bogus")
    assert out.returncode == 2 and "usage: bash scripts/gpu_check.sh" in out.stdout


def test_stops_with_one_line_without_a_gpu(tmp_path):
    if torch.cuda.is_available():
        return  # on a GPU machine the check would run for minutes
    out = _run(tmp_path)
    assert out.returncode == 3
    lines = [line for line in out.stdout.splitlines() if line.startswith("gpu_check:")]
    assert len(lines) == 1 and "sees no CUDA GPU" in lines[0] and "--dry-run" in lines[0]
    assert not (tmp_path / "out" / "runs").exists()  # nothing ran after the check


def test_stops_on_a_transformers_version_that_does_not_fit(tmp_path):
    # A stand-in for the GPU machine's transformers 5.17: a package whose metadata says so, first on the path.
    site = tmp_path / "site"
    (site / "transformers-5.17.0.dist-info").mkdir(parents=True)
    (site / "transformers-5.17.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: transformers\n"
                                                                      "Version: 5.17.0\n")
    out = _run(tmp_path, "--dry-run", PYTHONPATH=str(site))
    assert out.returncode == 3
    assert "gpu_check: transformers 5.17.0 found, 5.24.x needed" in out.stdout
