"""Idefics3 / SmolVLM (mai/families/idefics3.py) against figures of the released SmolVLM-256M-Instruct.

The per-family checks (continued stage, capture, routes, written directory) run in tests/test_families.py;
these check what is particular to SmolVLM against published numbers, not against this code's output:
- a prompt of SmolVLM-256M-Instruct (revision 7e3e67ed) tokenized by its released processor, as printed by a
  public reference-findings document of a Java port: a 100 x 80 image with "What is in" / " this image?"
  is 1141 ids, 1088 <image> (49190: 4 x 4 tiles of 512 px + the global one, 64 tokens each), 18
  <fake_token_around_image> (49189), one <global-img> (49152), starting [1, 11126, 42, 1812, 314, 281, 49189,
  49153] and ending [451, 2443, 47, 49279, 198, 9519, 9531, 42];
- parameters: 256,484,928 in the 256M's model.safetensors (same document); SmolVLM-Instruct is published
  as 2.2B (its model card and the SmolVLM blog post), so its shape must round to 2.2e9.
"""
import json

import numpy as np
import pytest
import torch
from PIL import Image

from mai import families
from mai.families import idefics3


@pytest.fixture(scope="module")
def family():
    families.all_families()
    return families.FAMILIES["idefics3"]


@pytest.mark.parametrize("name, check", [
    ("smolvlm-256m", lambda n: n == 256_484_928),
    ("smolvlm-2.2b", lambda n: round(n / 1e9, 1) == 2.2),
])
def test_released_shapes_have_the_published_parameter_counts(family, name, check):
    with torch.device("meta"):  # no memory: shapes only
        model = family.model_cls()(family.config(name))
    n = sum(p.numel() for p in model.parameters())
    print(f"\nfigure: {name} parameters {n:,}")
    assert check(n), n


def test_released_image_sizing_gives_the_released_prompt():
    """The released processor settings (longest edge 2048, 512-px tiles, 64 tokens a tile) with the stand-in
    tokenizer and the released template give the released processor's ids for the same prompt."""
    processor = idefics3.offline_processor(tile=512, longest_edge=2048, patch=16, scale=4)
    image = Image.fromarray(np.random.RandomState(0).randint(0, 255, (80, 100, 3), dtype=np.uint8))
    messages = [{"role": "user", "content": [{"type": "text", "text": "What is in"}, {"type": "image"},
                                             {"type": "text", "text": " this image?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert text == "<|im_start|>User: What is in<image> this image?<end_of_utterance>\nAssistant:"
    out = processor(text=[text], images=[image], return_tensors="pt", add_special_tokens=False)
    ids = out.input_ids[0].tolist()
    assert tuple(out.pixel_values.shape) == (1, 17, 3, 512, 512)
    assert (len(ids), ids.count(49190), ids.count(49189), ids.count(49152), ids.count(1)) == (1141, 1088, 18, 1, 1)
    assert ids[:8] == [1, 11126, 42, 1812, 314, 281, 49189, 49153]
    assert ids[-8:] == [451, 2443, 47, 49279, 198, 9519, 9531, 42]


def test_a_random_weight_model_records_its_stand_in_tokenizer(family):
    from mai.models import load_model
    from mai.tokenizer_sources import STANDIN_TOKENIZERS

    lm = load_model("tiny-smolvlm", device="cpu")
    described = lm.describe()
    assert described["tokenizer"] == STANDIN_TOKENIZERS["idefics3"] and "stand-in" in described["tokenizer"]
    assert "tokenizer" not in load_model("tiny-smollm2", device="cpu").describe()  # a real tokenizer: no note
    assert lm.eos_token_ids == [49279]  # <end_of_utterance>, the released generation_config's eos
    assert json.dumps(described)  # models.json takes it as it is


def test_the_2_2b_shape_gets_its_own_tiles_and_token_numbering():
    """SmolVLM-Instruct: 384-px tiles of 81 tokens, <fake_token_around_image> 49152, <image> 49153 (its
    config.image_token_id), <end_of_utterance> 49154; <global-img> and <row_r_col_c> are plain text there."""
    processor = idefics3.offline_processor(**idefics3.RELEASED_PROCESSORS["smolvlm-2.2b"])
    tok = processor.tokenizer
    assert len(tok) == 49155 and processor.image_seq_len == 81
    assert [tok.convert_tokens_to_ids(t) for t in ("<fake_token_around_image>", "<image>", "<end_of_utterance>")] \
        == [49152, 49153, 49154]
    assert len(tok("<global-img>", add_special_tokens=False).input_ids) > 1
    image = Image.fromarray(np.zeros((300, 400, 3), dtype=np.uint8))  # 1536 x 1152 after resizing: 4 x 3 tiles
    out = processor(text=["<image>"], images=[image], return_tensors="pt", add_special_tokens=False)
    ids = out.input_ids[0].tolist()
    assert tuple(out.pixel_values.shape) == (1, 13, 3, 384, 384) and ids.count(49153) == 13 * 81
    assert max(ids) < 49155  # every id has a row in the 2.2B's embedding


@pytest.mark.parametrize("name", ["tiny-smolvlm", "smolvlm-256m", "smolvlm-2.2b"])
def test_each_shape_gets_a_processor_that_fits_its_vision_tower_and_vocabulary(family, name):
    """What load_model pairs with each architecture: tiles of the tower's image size, as many <image> tokens
    a tile as the connector gives, the config's image_token_id, every named id inside the vocabulary."""
    config = family.config(name)
    processor = family.offline_processor(**family.processor_kwargs.get(name, {}))
    vision = config.vision_config
    assert processor.image_processor.max_image_size["longest_edge"] == vision.image_size
    assert processor.image_seq_len == (vision.image_size // vision.patch_size) ** 2 // config.scale_factor ** 2
    assert processor.image_token_id == config.image_token_id
    assert len(processor.tokenizer) <= config.text_config.vocab_size
    assert family.stop_ids(processor.tokenizer) == [processor.tokenizer.convert_tokens_to_ids("<end_of_utterance>")]
