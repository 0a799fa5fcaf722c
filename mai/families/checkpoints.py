"""A random-weight architecture of any family written as a checkpoint directory (scripts/make_checkpoint.py).

transformers' own writers give the family's released layout: config.json and generation_config.json
(save_pretrained of the model), model.safetensors, and the processor's or tokenizer's files with the
chat template. A marker file says that the weights are random (mai.models.WRITTEN_MARKER), so results
record it. Qwen3-VL keeps its own writer (mai.models.write_checkpoint), which also shards like the
released files; the others are one file, as their tiny shapes are.
"""
from __future__ import annotations

import json
from pathlib import Path


def write(family_name: str, name: str, directory, *, weights: bool = True, seed: int = 0) -> Path:
    from mai import models

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    loaded = models.load_model(name, device="cpu", dtype="bf16", seed=seed)
    if weights:
        loaded.model.save_pretrained(str(out))
    else:  # what vLLM's load_format="dummy" needs: the config alone
        loaded.model.config.save_pretrained(str(out))
        loaded.model.generation_config.save_pretrained(str(out))
    loaded.processor.save_pretrained(str(out))
    (out / models.WRITTEN_MARKER).write_text(json.dumps(dict(
        architecture=name, family=family_name, random_weights=weights, seed=seed,
        written_by="scripts/make_checkpoint.py"), indent=2) + "\n")
    return out
