"""What a model spec names, before anything is loaded: its table label ("8B", "2B-S"), whether it is a
Thinking checkpoint, whether it is a path or hub id, and which family a checkpoint directory belongs to.

A model spec is a random-weight architecture name (a key of some family's architectures), a real
checkpoint by name (mai.real_checkpoints.REAL_PAIR), or a hub id / local path of a checkpoint. resolve() reads
it once into a ModelSpec (where the weights come from, family, Thinking or not, label) that every backend's
loader and the server read, so that no two of them can read one spec two ways.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

from mai import MaiError, families

# Short labels used in tables ("2B-S", "8B-R"), for the real checkpoints and the random shapes alike.
_LABEL_PATTERN = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)B(?![A-Za-z0-9])", re.IGNORECASE)


def model_label(spec: str) -> str:
    """'Qwen/Qwen3-VL-8B-Instruct' -> '8B'; 'qwen3-vl-2b' -> '2B'; 'tiny-small' -> 'tiny-small'."""
    if spec.startswith("tiny") and spec in families.architectures():
        return spec
    match = _LABEL_PATTERN.search(Path(spec.rstrip("/")).name)
    label = match.group(1).upper() + "B" if match else Path(spec.rstrip("/")).name
    return label + ("-Thinking" if "thinking" in Path(spec.rstrip("/")).name.lower() else "")


def is_thinking(spec: str, family: families.Family | None = None) -> bool:
    """A Thinking checkpoint: by its name (Qwen/Qwen3-VL-8B-Thinking), or, for a local directory of any
    name, by its chat template, which holds the family's thinking marker (Qwen3-VL: a generation prompt
    that opens <think>, which the Instruct template's does not; Qwen3: the enable_thinking switch)."""
    family = family or families.default()
    folder = Path(spec.rstrip("/"))
    if "thinking" in folder.name.lower():  # the name, not the folders above it
        return True
    if family.thinking_system_prompt is not None:  # thinks when its Think prompt's system turn asks (InternVL3.5)
        return True
    if family.thinking_marker is None:
        return False
    template = None
    if (folder / "chat_template.jinja").is_file():
        template = (folder / "chat_template.jinja").read_text()
    else:
        for name in ("chat_template.json", "tokenizer_config.json"):
            if (folder / name).is_file():
                template = json.loads((folder / name).read_text()).get("chat_template")
                if template:
                    break
    return isinstance(template, str) and family.thinking_marker in template


def is_local_or_hub_id(spec: str) -> bool:
    return Path(spec).exists() or "/" in spec


def checkpoint_family(spec: str) -> families.Family:
    """The family of a checkpoint, by its config.json's model_type (one line naming the supported ones
    when it is none of them)."""
    from transformers import AutoConfig

    try:
        model_type = AutoConfig.from_pretrained(spec).model_type
    except ValueError as err:  # a model_type transformers itself does not know
        raise MaiError(f"cannot read the config of '{spec}' ({str(err).splitlines()[0]}); supported model "
                       f"types: {families.supported()}") from None
    return families.by_model_type(model_type)


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A model spec resolved: what a run reads of it before and after its weights load."""
    spec: str  # as given (--small, --large, a preset's model)
    label: str  # model_label(spec): the tables' name
    kind: str  # "architecture" (random weights), "real" (mai.real_checkpoints) or "checkpoint" (path or hub id)
    source: str  # what is loaded: the architecture name, the real checkpoint's converted directory, the path or id
    family: families.Family
    thinking: bool  # a Thinking checkpoint (is_thinking), or a family whose template thinks when asked

    @property
    def local(self) -> bool:
        return self.kind != "checkpoint" or Path(self.source).exists()


@functools.lru_cache(maxsize=None)
def resolve(spec: str) -> ModelSpec:
    """The spec's record, read once a process (cached): a real checkpoint is converted here on first use
    (real_checkpoints.converted_dir), a hub
    id's config is read from the hub (a MaiError when the hub cannot be reached, before anything loads), an
    unknown name is a MaiError naming what to give instead."""
    from mai import hub, real_checkpoints

    family = families.by_architecture(spec)
    if family is not None:
        # A family whose template has a thinking switch (Qwen3's enable_thinking) thinks when asked.
        return ModelSpec(spec, model_label(spec), "architecture", spec, family,
                         is_thinking(spec, family) or bool(family.thinking_kwargs(True)))
    if spec in real_checkpoints.REAL_PAIR:  # its directory, converted once (mai.real_checkpoints)
        source, kind = str(real_checkpoints.converted_dir(spec)), "real"
    elif is_local_or_hub_id(spec):
        source, kind = spec, "checkpoint"
        reason = None if Path(spec).exists() else hub.unreachable()
        if reason is not None:
            raise MaiError(f"cannot reach the Hugging Face hub for '{spec}': {reason}. Download the "
                           "checkpoint where you have access and pass its local directory instead, e.g. "
                           "--models /data/Qwen3-VL-2B-Instruct (or set HF_HUB_OFFLINE=1 with a local cache)")
    else:
        raise MaiError(f"unknown model '{spec}'; give a hub id (Qwen/Qwen3-VL-2B-Instruct), a local "
                       f"checkpoint directory, a real checkpoint ({', '.join(real_checkpoints.REAL_PAIR)}) or a "
                       f"random-weight architecture: {', '.join(families.architectures())}")
    try:
        family = checkpoint_family(source)
    except (OSError, *hub.connection_errors()) as err:
        raise cannot_load(spec, kind != "checkpoint" or Path(spec).exists(), err) from None
    return ModelSpec(spec, model_label(spec), kind, source, family, is_thinking(source, family))


def cannot_load(spec: str, local: bool, err: Exception) -> MaiError:
    """The one-line error for a checkpoint whose files cannot be read (its config when resolved, its weights or
    processor when loaded), naming what to give instead."""
    where = "local path" if local else "hub id"
    return MaiError(f"cannot load {where} '{spec}' ({str(err).splitlines()[0]}). Without a route to the Hugging Face "
                    "hub, download the checkpoint where you have access and pass its local directory instead, e.g. "
                    "--models /data/Qwen3-VL-2B-Instruct")
