"""Shared fixtures: tiny random-weight models are built once per session (seconds on a CPU)."""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


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
