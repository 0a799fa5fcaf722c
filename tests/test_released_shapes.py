"""The released shapes of every family (mai.families), built on the meta device (no memory, no weights).

Each one's parameter count is compared with a published one. Where public code records the exact count of
the released checkpoint (the hub's safetensors total, or sum(p.numel()) over the loaded model), the count
built here must equal it; where only a model card's rounded figure is known, it must round to it (within
half a unit of its last digit). The published figures, and where they were read:
- exact counts, each found verbatim in public code that loads or lists the checkpoint (searched by value in
  a code index of public GitHub repositories, 2026-12): Qwen3-VL-2B 2,127,532,032, -4B 4,437,815,808, -8B
  8,767,123,696 (the hub's safetensors total); Qwen2.5-VL-3B 3,754,622,976 and -7B 8,292,166,656 (model
  registries, loaders' counts); gemma-3-4b-it 4,300,079,472 and -12b-it 12,187,325,040 (hub safetensors
  totals); Qwen3-0.6B 596,049,920 and Qwen3-8B 8,190,735,360 (hub safetensors total); SmolLM2-135M
  134,515,008 and SmolLM2-1.7B-Instruct 1,711,376,384; gemma-3-270m 268,098,176 (llama.cpp's n_params,
  KerasHub's preset) and gemma-3-1b-it 999,885,952 (KerasHub's preset, llama.cpp); InternVL3_5-1B-HF
  1,060,897,792 (a third-party record of revision 9191dbcc); SmolVLM-256M-Instruct 256,484,928 (a public
  reference-findings document of a Java port, the released weights file's count); Qwen2.5-Coder-0.5B-Instruct
  494,032,768 and -1.5B-Instruct 1,543,714,304, measured here from the real checkpoints (mai.real_checkpoints,
  converted from the GGUF part packages): sum(p.numel()) of the converted models, 630,167,424 and
  1,777,088,000, less their separate output matrix (151,936 x 896 and x 1,536: the GGUFs store the tied
  matrix a second time as output.weight, at another quantisation, so the conversion is untied).
- card figures only: llava-onevision-qwen2-0.5b-ov-hf 0.9B and -7b-ov-hf 8.0B (hub model pages);
  InternVL3.5-2B 2.3B and -8B 8.5B (OpenGVLab's InternVL3.5 quick-start table); SmolVLM-Instruct 2.2B (its
  model card).
- split figures from the model cards and Google's Gemma 3 270M announcement: Qwen3-0.6B 0.44B and Qwen3-8B
  6.95B non-embedding parameters; Gemma 3 270M 170M embedding + 100M transformer-block parameters.
Run with -s to print each measured count.
"""
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import AutoConfig

from mai import checkpoints, families

REPO = Path(__file__).resolve().parent.parent

# name -> (published count, exact?): exact counts must be equal; card figures must round to the count.
PUBLISHED = {
    "qwen3-vl-2b": (2_127_532_032, True), "qwen3-vl-4b": (4_437_815_808, True),
    "qwen3-vl-8b": (8_767_123_696, True),
    "qwen2.5-vl-3b": (3_754_622_976, True), "qwen2.5-vl-7b": (8_292_166_656, True),
    "gemma3-4b": (4_300_079_472, True), "gemma3-12b": (12_187_325_040, True),
    "llava-onevision-0.5b": (0.9e9, False), "llava-onevision-7b": (8.0e9, False),
    "qwen3-0.6b": (596_049_920, True), "qwen3-8b": (8_190_735_360, True),
    "smollm2-135m-shape": (134_515_008, True), "smollm2-1.7b": (1_711_376_384, True),
    "gemma3-270m-text": (268_098_176, True), "gemma3-1b-text": (999_885_952, True),
    "internvl3.5-1b": (1_060_897_792, True), "internvl3.5-2b": (2.3e9, False), "internvl3.5-8b": (8.5e9, False),
    "smolvlm-256m": (256_484_928, True), "smolvlm-2.2b": (2.2e9, False),
    "qwen2.5-coder-0.5b-shape": (494_032_768, True), "qwen2.5-coder-1.5b-shape": (1_543_714_304, True),
}
# Half a unit of the card figure's last digit (0.9B: 0.05B).
CARD_HALF_UNIT = 0.05e9


def released() -> list[str]:
    return sorted(n for n in families.architectures() if not n.startswith("tiny-"))


def _meta_model(name):
    family = families.by_architecture(name)
    with torch.device("meta"):  # no memory: an 8B shape would need 33 GB in fp32
        return family.model_cls()(family.config(name))


def _count(model) -> int:
    return sum(p.numel() for p in model.parameters())  # tied embeddings counted once, as the files hold them


def test_every_released_shape_has_a_published_count():
    assert set(released()) == set(PUBLISHED)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_count_matches_the_published_one(name):
    n = _count(_meta_model(name))
    published, exact = PUBLISHED[name]
    print(f"figure: {name} {n:,} parameters (published {published:,.0f}{'' if exact else ', card'})")
    if exact:
        assert n == published
    else:
        assert abs(n - published) <= CARD_HALF_UNIT, n


# name -> (embedding, non-embedding, half a unit of their last digit): Qwen3's cards give two decimals of a
# billion, the Gemma 3 270M announcement two significant figures of a million.
SPLITS = {"qwen3-0.6b": (None, 0.44e9, 0.005e9), "qwen3-8b": (None, 6.95e9, 0.005e9),
          "gemma3-270m-text": (170e6, 100e6, 5e6)}


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_embedding_split_matches_the_cards(name):
    embedding, non_embedding, half_unit = SPLITS[name]
    model = _meta_model(name)
    embed = model.get_input_embeddings().weight.numel()
    rest = _count(model) - embed * (1 if model.config.tie_word_embeddings else 2)  # an untied head is embedding too
    print(f"figure: {name} embedding {embed:,}, non-embedding {rest:,}")
    assert abs(rest - non_embedding) <= half_unit, rest
    if embedding is not None:
        assert abs(embed - embedding) <= half_unit, embed


def test_released_details_beyond_the_counts():
    """What a parameter count cannot see: windows, rope, image tokens, layer types, tying, token ids."""
    def config(name):
        return families.by_architecture(name).config(name)

    for c, layers in ((config("gemma3-4b"), 34), (config("gemma3-12b"), 48)):
        t = c.text_config
        assert [i for i, kind in enumerate(t.layer_types) if kind == "full_attention"] == list(range(5, layers, 6))
        assert (t.sliding_window, t.query_pre_attn_scalar, t.vocab_size) == (1024, 256, 262208)
        assert c.mm_tokens_per_image == 256
        assert t.rope_parameters["full_attention"] == {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}
        assert t.rope_parameters["sliding_attention"]["rope_theta"] == 1e4
        assert (c.vision_config.image_size, c.vision_config.patch_size, c.image_token_index) == (896, 14, 262144)
    text = config("gemma3-1b-text")
    assert [i for i, kind in enumerate(text.layer_types) if kind == "full_attention"] == [5, 11, 17, 23]
    assert (text.sliding_window, text.vocab_size, text.max_position_embeddings) == (512, 262144, 32768)
    for name, tie in (("llava-onevision-0.5b", True), ("llava-onevision-7b", False)):
        c = config(name)
        assert (c.tie_word_embeddings, c.vision_feature_layer, c.vision_feature_select_strategy) == (tie, -1, "full")
        assert (c.vision_config.image_size, c.vision_config.num_hidden_layers, c.image_token_index) == (384, 26, 151646)
        assert len(c.image_grid_pinpoints) == 36 and c.image_grid_pinpoints[-1] == [2304, 2304]
    q3, q7 = (config(n) for n in ("qwen2.5-vl-3b", "qwen2.5-vl-7b"))
    assert (q3.text_config.vocab_size, q7.text_config.vocab_size) == (151936, 152064)
    assert q7.vision_config.fullatt_block_indexes == [7, 15, 23, 31] and q7.vision_config.window_size == 112
    assert q7.vision_config.tokens_per_second == 2 and q7.text_config.rope_parameters["mrope_section"] == [16, 24, 24]
    for name, theta in (("qwen3-0.6b", 1e6), ("qwen3-8b", 1e6), ("smollm2-1.7b", 130000), ("smollm2-135m-shape", 1e5)):
        assert config(name).rope_parameters["rope_theta"] == theta, name


@pytest.mark.parametrize("name", ["gemma3-4b", "llava-onevision-0.5b"])
def test_a_written_released_directory_reads_back_as_its_shape(name, tmp_path):
    """scripts/make_checkpoint.py NAME DIR --no-weights: the released config and the released processor."""
    family = families.by_architecture(name)
    out = checkpoints.write(family, name, tmp_path, weights=False)
    assert not list(out.glob("*.safetensors"))
    config = AutoConfig.from_pretrained(str(out))
    assert type(config) is type(family.config(name)) and config.architectures == [family.model_class]
    for part in ("text_config", "vision_config"):  # the written dtype (bf16) aside, the shape's own values
        written, built = getattr(config, part).to_dict(), getattr(family.config(name), part).to_dict()
        assert written | {"dtype": None} == built | {"dtype": None}, part
    processor = json.loads((out / "processor_config.json").read_text())
    size = processor["image_processor"]["size"]
    tokens = processor.get("image_seq_length") or processor.get("num_image_tokens")
    assert (size["height"], tokens) == {"gemma3-4b": (896, 256), "llava-onevision-0.5b": (384, 729)}[name]


def test_make_checkpoint_lists_the_released_shapes_and_writes_them_without_allocating(tmp_path):
    script = str(REPO / "scripts" / "make_checkpoint.py")
    help_text = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True, check=True).stdout
    for name in PUBLISHED:
        assert name in help_text

    def limit():  # 6 GiB of address space: the 12B shape's weights alone would take 24 GB in bf16
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))

    run = subprocess.run([sys.executable, script, "gemma3-12b", str(tmp_path), "--no-weights"], capture_output=True,
                         text=True, preexec_fn=limit)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "no weights" in run.stdout and not list(tmp_path.glob("*.safetensors"))
    assert json.loads((tmp_path / "config.json").read_text())["text_config"]["num_hidden_layers"] == 48
