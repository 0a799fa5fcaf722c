"""Image sizes as lmms-eval's Qwen3-VL wrappers give them (mai.images), hand-checked.

simple wrapper: qwen_vl_utils' smart_resize, factor 32, into [200,704, 1,605,632] pixels;
chat wrapper: qwen_vl_utils' defaults for factor 32, [4,096, 16,777,216].
"""

import argparse

import pytest
from PIL import Image

from mai import MaiError, experiment, images
from mai.generation import HFGenerator, Request

SIMPLE, CHAT = images.IMAGE_SIZE_POLICIES["simple"], images.IMAGE_SIZE_POLICIES["chat"]


def test_policy_bounds():
    assert SIMPLE == (200_704, 1_605_632) and CHAT == (4_096, 16_777_216)
    assert images.policy_bounds("chat", max_pixels=128 * 128) == (4_096, 16_384)
    assert images.policy_bounds("simple", max_pixels=128 * 128) == (16_384, 16_384)  # the minimum follows
    with pytest.raises(MaiError, match="^unknown image-size policy 'huge'; known: simple, chat$"):
        images.policy_bounds("huge")


def test_300x200_under_each_policy():
    # simple: 192 x 288 = 55,296 < 200,704, so scaled up by sqrt(200704 / 60000) = 1.829 and ceiled to 32:
    # 200 * 1.829 / 32 = 11.4 -> 12 * 32 = 384; 300 * 1.829 / 32 = 17.1 -> 18 * 32 = 576.
    assert images.smart_resize(200, 300, *SIMPLE) == (384, 576)
    # chat: rounded to 32 (6.25 -> 6, 9.375 -> 9) and within bounds: 192 x 288.
    assert images.smart_resize(200, 300, *CHAT) == (192, 288)
    picture = Image.new("RGB", (300, 200), (10, 200, 30))
    assert images.resize(picture, *SIMPLE).size == (576, 384)  # PIL sizes are (width, height)
    assert images.resize(picture, *CHAT).size == (288, 192)


def test_large_image_is_scaled_down():
    # 4000 x 3000 = 12e6 > 1,605,632: beta = sqrt(12e6 / 1605632) = 2.7338; 3000 / 2.7338 / 32 = 34.29 -> 34,
    # 4000 / 2.7338 / 32 = 45.72 -> 45: 1088 x 1440.
    assert images.smart_resize(3000, 4000, *SIMPLE) == (1088, 1440)


def test_pixels_are_pils_bicubic_resize():
    picture = Image.effect_noise((300, 200), 64).convert("RGB")
    assert images.resize(picture, *SIMPLE).tobytes() == picture.resize((576, 384), Image.BICUBIC).tobytes()
    already = images.resize(picture, *SIMPLE)
    assert images.resize(already, *SIMPLE) is already  # a sized image is left as it is


def test_same_as_transformers_helper_except_very_thin_images():
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as hf

    for h, w in [(200, 300), (3000, 4000), (31, 500), (1024, 1024), (17, 17), (640, 480), (2000, 15)]:
        for lo, hi in (SIMPLE, CHAT):
            if round(min(h, w) / 32) >= 1:
                assert images.smart_resize(h, w, lo, hi) == hf(h, w, factor=32, min_pixels=lo, max_pixels=hi)
    # A side under half a factor: qwen_vl_utils clamps it to 32 first, and 32 x 2016 is within bounds;
    # transformers rounds it to 0 and scales the whole image up to the minimum instead.
    assert images.smart_resize(15, 2010, *CHAT) == (32, 2016)
    assert hf(15, 2010, factor=32, min_pixels=CHAT[0], max_pixels=CHAT[1]) == (32, 768)


def test_processor_gets_our_resized_image(tiny_small):
    # tiny_small's bounds are [64*64, 128*128]: 192 x 288 is too big; beta = sqrt(60000 / 16384) = 1.9137,
    # 200 / 1.9137 / 32 = 3.27 -> 3, 300 / 1.9137 / 32 = 4.90 -> 4: 96 x 128, 6 x 8 patches of 16.
    assert images.processor_bounds(tiny_small.processor) == (64 * 64, 128 * 128)
    request = Request("What is it?", [Image.new("RGB", (300, 200), (10, 200, 30))], "simple", "", 4)
    inputs = HFGenerator(tiny_small)._inputs(request)[0]
    assert inputs["image_grid_thw"].tolist() == [[1, 6, 8]]


class _Spy:
    """A processor that records what it is called with and otherwise is the real one."""

    def __init__(self, processor):
        self._processor, self.calls = processor, []

    def __getattr__(self, name):
        return getattr(self._processor, name)

    def __call__(self, *args, **kwargs):
        self.calls.append(kwargs)
        return self._processor(*args, **kwargs)


def test_processor_receives_sized_images_and_does_not_resize(tiny_small):
    """The resize is ours, so the processor (PIL here, torchvision under vLLM) never resamples again."""
    import dataclasses

    spy = _Spy(tiny_small.processor)
    loaded = dataclasses.replace(tiny_small, processor=spy)
    picture = Image.new("RGB", (300, 200), (10, 200, 30))
    HFGenerator(loaded)._inputs(Request("What is it?", [picture], "simple", "", 4))
    HFGenerator(loaded).generate_batch([Request("What is it?", [picture], "simple", "", 1)])
    assert len(spy.calls) == 2
    for call in spy.calls:
        assert call["do_resize"] is False
        assert [im.size for im in call["images"]] == [(128, 96)]


def test_cli_policy_flag():
    ns = argparse.Namespace
    assert experiment.pixel_kwargs(ns(image_policy="simple", max_pixels=None)) == {}
    assert experiment.pixel_kwargs(ns(image_policy="chat", max_pixels=None)) == dict(min_pixels=4_096, max_pixels=16_777_216)
    assert experiment.pixel_kwargs(ns(image_policy="simple", max_pixels=128 * 128)) == dict(min_pixels=16_384,
                                                                                   max_pixels=16_384)
