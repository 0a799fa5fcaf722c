"""Image sizes as lmms-eval's Qwen3-VL wrappers give them, resized by us before the processor sees them.

lmms-eval (EvolvingLMMs-Lab/lmms-eval at 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3) sizes images in
qwen_vl_utils' ``fetch_image`` (``process_vision_info(..., image_patch_size=16)``: factor 16 x 2 = 32),
then calls the processor with ``do_resize=False``.  Its two wrappers differ in the pixel bounds:

* "simple" (``lmms_eval/models/simple/qwen3_vl.py``): min_pixels 256*28*28 = 200,704 and
  max_pixels 1,605,632, set on every image.  Our default.
* "chat" (``lmms_eval/models/chat/qwen3_vl.py``, what ``--model qwen3_vl`` resolves to there): no
  bounds of its own, so qwen_vl_utils' defaults for factor 32: 4 * 32**2 = 4,096 to
  16384 * 32**2 = 16,777,216 pixels.

``smart_resize`` follows qwen_vl_utils (QwenLM/Qwen3-VL, qwen-vl-utils/src/qwen_vl_utils/
vision_process.py at 96588727): it clamps the rounded sides to at least one factor *before* the
bounds test.  transformers' own helper (``smart_resize`` in transformers 5.24's
``models/qwen2_vl/image_processing_pil_qwen2_vl.py`` and ``image_processing_qwen2_vl.py``) does not, and differs on very thin images (a side under half a factor), so it
is not used.  The resize is PIL's ``Image.resize`` with its default filter (bicubic), as
``fetch_image`` calls it.  Doing it here, before the processor, gives both backends the same pixels:
the PIL image processor on CPU and the torchvision one that vLLM brings would otherwise each resize
with their own kernels.
"""

from __future__ import annotations

import math

from PIL import Image

from mai import MaiError, families

# The factor of Qwen3-VL: 16-pixel patches merged 2 x 2.
FACTOR = 32
MAX_RATIO = 200
# Policy name -> (min_pixels, max_pixels).
IMAGE_SIZE_POLICIES = {
    "simple": (256 * 28 * 28, 1_605_632),
    "chat": (4 * FACTOR**2, 16384 * FACTOR**2),
}
DEFAULT_POLICY = "simple"


def policy_bounds(policy: str = DEFAULT_POLICY, max_pixels: int | None = None) -> tuple[int, int]:
    """(min_pixels, max_pixels) of a policy; an explicit ``max_pixels`` caps it (and the minimum follows a
    cap below it)."""
    if policy not in IMAGE_SIZE_POLICIES:
        raise MaiError(f"unknown image-size policy {policy!r}; known: {', '.join(IMAGE_SIZE_POLICIES)}")
    lo, hi = IMAGE_SIZE_POLICIES[policy]
    if max_pixels:
        lo, hi = min(lo, max_pixels), max_pixels
    return lo, hi


def smart_resize(height: int, width: int, min_pixels: int, max_pixels: int, factor: int = FACTOR) -> tuple[int, int]:
    """(height, width) as qwen_vl_utils' ``smart_resize`` gives them.

    Each side is rounded to the nearest multiple of ``factor`` (at least one factor).  If the area is
    then above ``max_pixels``, both sides are scaled down by sqrt(h*w / max_pixels) and floored to the
    factor; if below ``min_pixels``, scaled up by sqrt(min_pixels / (h*w)) and ceiled to it.
    """
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise MaiError(f"image aspect ratio must be at most {MAX_RATIO}, got {max(height, width) / min(height, width):.1f}")
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = math.floor(height / beta / factor) * factor
        w = math.floor(width / beta / factor) * factor
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


def resize(image: Image.Image, min_pixels: int, max_pixels: int, factor: int = FACTOR) -> Image.Image:
    """The image at the size lmms-eval gives it (RGB, PIL's default bicubic filter, as fetch_image)."""
    if image.mode != "RGB":
        image = image.convert("RGB")
    width, height = image.size
    h, w = smart_resize(height, width, min_pixels, max_pixels, factor)
    return image if (w, h) == image.size else image.resize((w, h))


def processor_bounds(processor) -> tuple[int, int]:
    """The (min_pixels, max_pixels) a loaded processor was given (mai.models sets them from the policy)."""
    size = processor.image_processor.size
    get = size.get if isinstance(size, dict) else lambda k: getattr(size, k, None)
    return int(get("shortest_edge")), int(get("longest_edge"))


def prepare(images: list, processor, family=None) -> list[Image.Image]:
    """Images resized for ``processor``'s bounds, to be passed with ``do_resize=False``, for a family
    sized by qwen_vl_utils (its factor: Qwen3-VL 32, Qwen2.5-VL 28). Families whose lmms-eval wrapper
    leaves sizing to the processor (SigLIP's fixed size, Idefics3's tiles, ...) get their images as they
    are, in RGB. A bare tokenizer (no image processor) takes no images anyway."""
    family = family or families.default()
    if not images or not hasattr(processor, "image_processor"):
        return list(images)
    if family.resize_factor is None:
        return [image if image.mode == "RGB" else image.convert("RGB") for image in images]
    lo, hi = processor_bounds(processor)
    return [resize(image, lo, hi, family.resize_factor) for image in images]
