"""A random-weight architecture of any family written as a checkpoint directory (scripts/make_checkpoint.py).

transformers' own writers give the family's released layout: config.json and generation_config.json
(save_pretrained of the model), model.safetensors, and the processor's or tokenizer's files with the
chat template. A marker file says that the weights are random (mai.models.WRITTEN_MARKER), so results
record it. Qwen3-VL keeps its own writer (mai.models.write_checkpoint), which also shards like the
released files; the others are one file, as their tiny shapes are (a released shape with weights too,
where the released checkpoint is sharded). Without weights nothing is allocated, whatever the shape.
"""
from __future__ import annotations

import json
from pathlib import Path


def write(family_name: str, name: str, directory, *, weights: bool = True, seed: int = 0) -> Path:
    from mai import models

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    # Without weights the model is built on the meta device: nothing is allocated (a released 12B shape
    # would need 24 GB in bf16), and only what needs no weights is written.
    loaded = models.load_model(name, device="cpu" if weights else "meta", dtype="bf16", seed=seed)
    if weights:
        loaded.model.save_pretrained(str(out))
    else:  # what vLLM's load_format="dummy" needs: the config alone, with what save_pretrained adds to it
        loaded.model.config.architectures = [type(loaded.model).__name__]
        loaded.model.config.dtype = str(loaded.model.dtype).split(".")[1]
        loaded.model.config.save_pretrained(str(out))
        loaded.model.generation_config.save_pretrained(str(out))
    loaded.processor.save_pretrained(str(out))
    (out / models.WRITTEN_MARKER).write_text(json.dumps(dict(
        architecture=name, family=family_name, random_weights=weights, seed=seed,
        written_by="scripts/make_checkpoint.py"), indent=2) + "\n")
    return out
