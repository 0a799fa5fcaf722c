"""A random-weight architecture of any family written as a checkpoint directory (scripts/make_checkpoint.py).

write() takes the family it is given and writes one of its architectures in the family's released layout.
transformers' own writers give that layout for most families: config.json and generation_config.json
(save_pretrained of the model), model.safetensors, and the processor's or tokenizer's files with the
chat template. Qwen3-VL has a writer of its own (write_qwen3_vl), from the released config.json and files
of Qwen/Qwen3-VL-*-Instruct (mai.families.qwen3_vl.released_config), sharded like the released
safetensors; the others are one file, as their tiny shapes are (a released shape with weights too, where
the released checkpoint is sharded). A marker file (mai.models.WRITTEN_MARKER) says that the weights are
random, so results record it. Without weights nothing is allocated, whatever the shape: the directory is
what vLLM's load_format="dummy" needs.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from safetensors.torch import load_file, save_file

from mai import MaiError
from mai.families import qwen3_vl
from mai.families.family import Family
from mai.models import WRITTEN_MARKER, load_model
from mai.tokenizer_sources import qwen_tokenizer_dir


def write(family: Family, name: str, directory: str | os.PathLike, *, thinking: bool = False, weights: bool = True,
          seed: int = 0, image_size: dict | None = None) -> Path:
    """Architecture `name` of `family` as a checkpoint directory in the family's released layout (random
    weights, or none). `thinking` and `image_size` (the image pixel bounds of preprocessor_config.json,
    {"shortest_edge": min_pixels, "longest_edge": max_pixels}) are Qwen3-VL's: its Thinking checkpoints
    have a template of their own; other families' templates carry their thinking switch."""
    if name not in family.architectures:
        raise MaiError(f"'{name}' is not an architecture of the {family.name} family; choose from: "
                       f"{', '.join(family.architectures)}")
    if family is qwen3_vl.QWEN3_VL:
        return write_qwen3_vl(name, directory, thinking=thinking, weights=weights, seed=seed, image_size=image_size)
    if image_size is not None:
        raise MaiError(f"image_size sets Qwen3-VL's released pixel bounds; {family.name} writes its processor's own")
    return write_with_transformers(family, name, directory, weights=weights, seed=seed)


def write_with_transformers(family: Family, name: str, directory, *, weights: bool = True, seed: int = 0) -> Path:
    """Architecture `name` of `family` by transformers' own writers (save_pretrained), in one file."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    # Without weights the model is built on the meta device: nothing is allocated (a released 12B shape
    # would need 24 GB in bf16), and only what needs no weights is written.
    loaded = load_model(name, device="cpu" if weights else "meta", dtype="bf16", seed=seed)
    if weights:
        loaded.model.save_pretrained(str(out))
        _released_weight_names(out, loaded.model)
    else:  # what vLLM's load_format="dummy" needs: the config alone, with what save_pretrained adds to it
        loaded.model.config.architectures = [type(loaded.model).__name__]
        loaded.model.config.dtype = str(loaded.model.dtype).split(".")[1]
        loaded.model.config.save_pretrained(str(out))
        loaded.model.generation_config.save_pretrained(str(out))
    loaded.processor.save_pretrained(str(out))
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
    (out / WRITTEN_MARKER).write_text(json.dumps(dict(
        architecture=name, family=family.name, random_weights=weights, seed=seed,
        written_by="scripts/make_checkpoint.py"), indent=2) + "\n")
    return out


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _write_weights(model, out: Path, shards: int) -> None:
    """Safetensors as from_pretrained reads them: one model.safetensors, or `shards` files and an index."""
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight", None)  # tied to the embeddings, as the released files leave it out
    if shards == 1:
        save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
        return
    total = sum(t.numel() * t.element_size() for t in state.values())
    # Exactly `shards` contiguous groups of about total / shards bytes (a group closes at that size, or when
    # each group still to come needs one of the remaining tensors).
    groups, size, keys = [[]], 0, list(state)
    for i, key in enumerate(keys):
        needed = shards - len(groups)
        if groups[-1] and needed and (size >= total / shards or len(keys) - i == needed):
            groups.append([])
            size = 0
        groups[-1].append(key)
        size += state[key].numel() * state[key].element_size()
    weight_map = {}
    for i, keys in enumerate(groups, start=1):
        fname = f"model-{i:05d}-of-{len(groups):05d}.safetensors"
        save_file({k: state[k] for k in keys}, str(out / fname), metadata={"format": "pt"})
        weight_map.update({k: fname for k in keys})
    _write_json(out / "model.safetensors.index.json", dict(metadata=dict(total_size=total), weight_map=weight_map))


def write_qwen3_vl(name: str, directory: str | os.PathLike, *, thinking: bool = False, weights: bool = True,
                   seed: int = 0, image_size: dict | None = None) -> Path:
    """Write architecture `name` as a Qwen/Qwen3-VL-*-Instruct (or -Thinking) directory holds it: config.json,
    generation_config.json, preprocessor_config.json, video_preprocessor_config.json, chat_template.json,
    Qwen3's tokenizer files, and random weights (bf16 safetensors, sharded like the released files). Without
    weights it is what vLLM's load_format="dummy" needs. image_size replaces the released image pixel bounds
    ({"shortest_edge": min_pixels, "longest_edge": max_pixels}). A marker file (WRITTEN_MARKER) records that
    the weights are random, so that load_model reports random_weights for the directory."""
    config = qwen3_vl.released_config(name)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if weights:
        model = load_model(name, device="cpu", dtype="bf16", seed=seed).model
        _write_weights(model, out, qwen3_vl.RELEASED_SHARDS.get(name, 1))
        del model
    _write_json(out / "config.json", config)
    eos, endoftext = qwen3_vl.IM_END_ID, qwen3_vl.ENDOFTEXT_ID
    _write_json(out / "generation_config.json", dict(
        bos_token_id=endoftext, pad_token_id=endoftext, do_sample=True, eos_token_id=[eos, endoftext],
        **qwen3_vl.SAMPLING[bool(thinking)], transformers_version="4.56.0"))
    _write_json(out / "preprocessor_config.json", dict(
        size=image_size or qwen3_vl.RELEASED_IMAGE_SIZE, **qwen3_vl.VISION_PREPROCESSING,
        image_processor_type="Qwen2VLImageProcessorFast"))
    _write_json(out / "video_preprocessor_config.json", dict(
        size=qwen3_vl.RELEASED_VIDEO_SIZE, **qwen3_vl.VISION_PREPROCESSING,
        video_processor_type="Qwen3VLVideoProcessor"))
    shutil.copy(qwen3_vl.CHAT_TEMPLATE_FILES[bool(thinking)], out / "chat_template.json")
    source = qwen_tokenizer_dir()
    for fname in ("tokenizer.json", "vocab.json", "merges.txt"):
        shutil.copy(source / fname, out / fname)
    # Qwen3's tokenizer_config.json with Qwen3-VL's context length and chat template.
    tokenizer_config = json.loads((source / "tokenizer_config.json").read_text())
    tokenizer_config.update(model_max_length=qwen3_vl.MODEL_MAX_LENGTH,
                            chat_template=qwen3_vl.chat_template(thinking))
    _write_json(out / "tokenizer_config.json", tokenizer_config)
    # Not in a released checkpoint: says that these weights are random, so that results record it.
    _write_json(out / WRITTEN_MARKER, dict(architecture=name, thinking=bool(thinking), random_weights=weights,
                                           seed=seed, written_by="scripts/make_checkpoint.py"))
    return out


# Weight names that transformers 5.24 writes differently from the released checkpoints: its SiglipVisionModel has no
# `vision_model` level (conversion_mapping.py: "CLIPVisionModel": PrefixChange(prefix_to_remove="vision_model"),
# shared by SigLIP), so a SigLIP tower saves as vision_tower.encoder..., where google/gemma-3-*-it and
# llava-hf/llava-onevision-* have vision_tower.vision_model.encoder...: the names vLLM 0.30 loads (gemma3_mm,
# llava_onevision), and transformers reads both.
_RELEASED_PREFIXES = {"SiglipVisionModel": ("vision_tower.", "vision_tower.vision_model.")}


def _released_weight_names(out: Path, model) -> None:
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
