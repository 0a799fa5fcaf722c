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
    from mai import families, models

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    # Without weights the model is built on the meta device: nothing is allocated (a released 12B shape
    # would need 24 GB in bf16), and only what needs no weights is written.
    loaded = models.load_model(name, device="cpu" if weights else "meta", dtype="bf16", seed=seed)
    if weights:
        loaded.model.save_pretrained(str(out))
        _released_weight_names(out, loaded.model)
    else:  # what vLLM's load_format="dummy" needs: the config alone, with what save_pretrained adds to it
        loaded.model.config.architectures = [type(loaded.model).__name__]
        loaded.model.config.dtype = str(loaded.model.dtype).split(".")[1]
        loaded.model.config.save_pretrained(str(out))
        loaded.model.generation_config.save_pretrained(str(out))
    loaded.processor.save_pretrained(str(out))
    family = families.FAMILIES[family_name]
    if family.image_text_processor is not None:
        # Saved without its video processor (torchvision is absent here), the processor's files hold no video
        # settings, and a loader with torchvision (vLLM's) cannot build the family's full processor. The
        # released checkpoints (Qwen2.5-VL's) carry preprocessor_config.json, from which transformers 5.24
        # builds the video processor when no video_preprocessor_config.json exists
        # (video_processing_utils.py, get_video_processor_dict).
        loaded.processor.image_processor.save_pretrained(str(out))
        # ... and name the family's processor class, not the image-and-text one it was built with here, which
        # no other loader knows (AutoProcessor would fall back to the bare tokenizer).
        released = type(loaded.processor).__mro__[1].__name__
        for config in ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json"):
            data = json.loads((out / config).read_text())
            data["processor_class"] = released
            (out / config).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    (out / models.WRITTEN_MARKER).write_text(json.dumps(dict(
        architecture=name, family=family_name, random_weights=weights, seed=seed,
        written_by="scripts/make_checkpoint.py"), indent=2) + "\n")
    return out


# Weight names that transformers 5.24 writes differently from the released checkpoints: its SiglipVisionModel has no
# `vision_model` level (conversion_mapping.py: "CLIPVisionModel": PrefixChange(prefix_to_remove="vision_model"),
# shared by SigLIP), so a SigLIP tower saves as vision_tower.encoder..., where google/gemma-3-*-it and
# llava-hf/llava-onevision-* have vision_tower.vision_model.encoder...: the names vLLM 0.30 loads (gemma3_mm,
# llava_onevision), and transformers reads both.
_RELEASED_PREFIXES = {"SiglipVisionModel": ("vision_tower.", "vision_tower.vision_model.")}


def _released_weight_names(out: Path, model) -> None:
    from safetensors.torch import load_file, save_file

    tower = getattr(getattr(model, "model", None), "vision_tower", None)
    if type(tower).__name__ not in _RELEASED_PREFIXES:
        return
    old, new = _RELEASED_PREFIXES[type(tower).__name__]

    def rename(key: str) -> str:
        return new + key[len(old):] if key.startswith(old) and not key.startswith(new) else key

    for path in sorted(out.glob("*.safetensors")):
        save_file({rename(k): v for k, v in load_file(str(path)).items()}, str(path), metadata={"format": "pt"})
    index = out / "model.safetensors.index.json"
    if index.is_file():
        data = json.loads(index.read_text())
        data["weight_map"] = {rename(k): v for k, v in data["weight_map"].items()}
        index.write_text(json.dumps(data, indent=2) + "\n")
