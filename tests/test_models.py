"""Models: the real shapes' sizes, the checkpoint path on a saved model, and one-line user errors."""
import pytest
import torch
from transformers import Qwen3VLForConditionalGeneration

from mai import MaiError, models

# Parameter counts of the released checkpoints' shapes (2B: about 2.13e9).
REAL_SHAPES = {"qwen3-vl-2b": 2.128e9, "qwen3-vl-4b": 4.438e9, "qwen3-vl-8b": 8.767e9}


@pytest.mark.parametrize("name,expected", sorted(REAL_SHAPES.items()))
def test_real_shapes_parameter_counts(name, expected):
    config = models.architecture_config(name)
    with torch.device("meta"):  # counts without allocating 17 GB
        model = Qwen3VLForConditionalGeneration(config)
    n = sum(p.numel() for p in model.parameters())
    assert abs(n - expected) / expected < 1e-3, n
    assert config.text_config.vocab_size == 151936
    assert config.vision_config.out_hidden_size == config.text_config.hidden_size


def test_shape_details_follow_released_configs():
    c2, c8 = models.architecture_config("qwen3-vl-2b"), models.architecture_config("qwen3-vl-8b")
    assert (c2.text_config.num_hidden_layers, c2.text_config.hidden_size, c2.tie_word_embeddings) == (28, 2048, True)
    assert (c8.text_config.num_hidden_layers, c8.text_config.hidden_size, c8.tie_word_embeddings) == (36, 4096, False)
    assert list(c8.vision_config.deepstack_visual_indexes) == [8, 16, 24]
    assert c2.text_config.rope_parameters["mrope_section"] == [24, 20, 20]


def test_labels():
    assert models.model_label("Qwen/Qwen3-VL-8B-Instruct") == "8B"
    assert models.model_label("qwen3-vl-2b") == "2B"
    assert models.model_label("Qwen/Qwen3-VL-4B-Thinking") == "4B-Thinking"
    assert models.model_label("tiny-small") == "tiny-small"
    assert models.model_label("/tmp/tmpab2bx") == "tmpab2bx"  # no size inside a word


def test_local_checkpoint_goes_through_the_real_loading_path(tiny_small, tmp_path):
    tiny_small.model.save_pretrained(tmp_path)
    tiny_small.processor.save_pretrained(tmp_path)
    loaded = models.load_model(str(tmp_path), device="cpu", max_pixels=128 * 128, min_pixels=64 * 64)
    assert not loaded.random_weights
    assert hasattr(loaded.processor, "image_processor")
    assert loaded.processor.image_processor.size["longest_edge"] == 128 * 128
    for (k, a), b in zip(tiny_small.model.state_dict().items(), loaded.model.state_dict().values()):
        assert torch.equal(a, b), k


def test_unknown_model_is_one_line():
    with pytest.raises(MaiError, match=r"^unknown model 'tiny-medium'; give a hub id") as info:
        models.load_model("tiny-medium")
    assert "\n" not in str(info.value)


def test_no_route_to_hub_says_how_to_use_a_local_path(monkeypatch):
    monkeypatch.setattr(models.hub, "unreachable", lambda: "huggingface.co:443 unreachable (gaierror)")
    with pytest.raises(MaiError) as info:
        models.load_model("Qwen/Qwen3-VL-2B-Instruct")
    msg = str(info.value)
    assert msg.startswith("cannot reach the Hugging Face hub for 'Qwen/Qwen3-VL-2B-Instruct'")
    assert "local directory" in msg and "\n" not in msg


def test_offline_hub_cache_miss_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models.hub, "unreachable", lambda: None)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(MaiError, match=r"^cannot load hub id 'Qwen/Qwen3-VL-2B-Instruct'") as info:
        models.load_model("Qwen/Qwen3-VL-2B-Instruct")
    assert "\n" not in str(info.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_absent_is_one_line():
    with pytest.raises(MaiError, match="CUDA is not available on this machine; use --device cpu"):
        models.resolve_device("cuda")


def test_dtype_names():
    cpu = torch.device("cpu")
    assert models.resolve_dtype("auto", cpu) == torch.float32
    assert models.resolve_dtype("bf16", cpu) == torch.bfloat16
    with pytest.raises(MaiError, match="unknown dtype 'int3'"):
        models.resolve_dtype("int3", cpu)
