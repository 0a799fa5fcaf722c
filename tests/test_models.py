"""Models: the real shapes' sizes, the checkpoint path on a saved model, and one-line user errors."""
import json

import pytest
import torch
from transformers import Qwen3VLForConditionalGeneration

from mai import MaiError, checkpoints, model_specs, models
from mai.families import qwen3_vl

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
    assert model_specs.model_label("Qwen/Qwen3-VL-8B-Instruct") == "8B"
    assert model_specs.model_label("qwen3-vl-2b") == "2B"
    assert model_specs.model_label("Qwen/Qwen3-VL-4B-Thinking") == "4B-Thinking"
    assert model_specs.model_label("tiny-small") == "tiny-small"
    assert model_specs.model_label("/tmp/tmpab2bx") == "tmpab2bx"  # no size inside a word


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


# ---- checkpoint directories in the released layout (scripts/make_checkpoint.py) ----

RELEASED_FILES = {"config.json", "generation_config.json", "preprocessor_config.json",
                  "video_preprocessor_config.json", "chat_template.json", "tokenizer.json", "vocab.json",
                  "merges.txt", "tokenizer_config.json", models.WRITTEN_MARKER}


@pytest.mark.parametrize("name", sorted(REAL_SHAPES))
def test_written_config_is_the_released_layout_and_loads_as_the_architecture(name, tmp_path):
    import json

    from transformers import AutoConfig

    path = checkpoints.write_qwen3_vl(name, tmp_path / name, weights=False)
    assert {f.name for f in path.iterdir()} == RELEASED_FILES
    raw = json.loads((path / "config.json").read_text())
    # transformers 4.57's layout, as on the hub: rope_theta and rope_scaling in text_config, bf16.
    assert raw["model_type"] == "qwen3_vl" and raw["architectures"] == ["Qwen3VLForConditionalGeneration"]
    assert raw["text_config"]["rope_theta"] == 5000000 and raw["text_config"]["dtype"] == "bfloat16"
    assert raw["text_config"]["rope_scaling"] == dict(mrope_interleaved=True, mrope_section=[24, 20, 20],
                                                      rope_type="default")
    assert (raw["image_token_id"], raw["vision_start_token_id"], raw["vision_end_token_id"]) == (151655, 151652, 151653)
    loaded, ours = AutoConfig.from_pretrained(path), models.architecture_config(name)
    for part in ("text_config", "vision_config"):
        a, b = getattr(loaded, part).to_dict(), getattr(ours, part).to_dict()
        for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                    "intermediate_size", "vocab_size", "depth", "num_heads", "out_hidden_size",
                    "deepstack_visual_indexes", "tie_word_embeddings"):
            assert a.get(key) == b.get(key), (part, key)
    assert loaded.text_config.rope_parameters["mrope_section"] == [24, 20, 20]
    with torch.device("meta"):
        n = sum(p.numel() for p in Qwen3VLForConditionalGeneration(loaded).parameters())
    assert abs(n - REAL_SHAPES[name]) / REAL_SHAPES[name] < 1e-3
    generation = json.loads((path / "generation_config.json").read_text())
    assert generation["eos_token_id"] == [151645, 151643] and generation["pad_token_id"] == 151643


def test_tiny_directory_loads_through_the_checkpoint_path_with_the_same_weights(tmp_path):
    path = checkpoints.write_qwen3_vl("tiny-small", tmp_path / "small", seed=3)
    assert (path / "model.safetensors").is_file() and not (path / "model.safetensors.index.json").exists()
    loaded = models.load_model(str(path), device="cpu", dtype="bf16", max_pixels=128 * 128, min_pixels=64 * 64)
    built = models.load_model("tiny-small", device="cpu", dtype="bf16", seed=3)
    assert loaded.random_weights and not loaded.thinking  # the directory's marker says so
    assert loaded.processor.image_processor.size["longest_edge"] == 128 * 128  # --max-pixels still applies
    a, b = loaded.model.state_dict(), built.model.state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert loaded.eos_token_ids == [qwen3_vl.IM_END_ID, qwen3_vl.ENDOFTEXT_ID]


def test_sharded_weights_have_an_index_that_from_pretrained_follows(tmp_path, monkeypatch):
    import json

    monkeypatch.setitem(qwen3_vl.RELEASED_SHARDS, "tiny-large", 3)
    path = checkpoints.write_qwen3_vl("tiny-large", tmp_path / "large")
    index = json.loads((path / "model.safetensors.index.json").read_text())
    shards = sorted(f.name for f in path.glob("model-*.safetensors"))
    assert shards == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert set(index["weight_map"].values()) == set(shards)
    assert "lm_head.weight" in index["weight_map"]  # tiny-large does not tie its embeddings
    loaded = models.load_model(str(path), device="cpu", dtype="bf16")
    built = models.load_model("tiny-large", device="cpu", dtype="bf16")
    for (k, a), b in zip(built.model.state_dict().items(), loaded.model.state_dict().values()):
        assert torch.equal(a, b), k


def test_thinking_is_recognised_by_name_and_by_the_directory_template(tmp_path):
    think = checkpoints.write_qwen3_vl("tiny-small", tmp_path / "anything", thinking=True, weights=False)
    instruct = checkpoints.write_qwen3_vl("tiny-small", tmp_path / "other", weights=False)
    assert model_specs.is_thinking(str(think)) and not model_specs.is_thinking(str(instruct))
    assert model_specs.is_thinking("Qwen/Qwen3-VL-2B-Thinking") and not model_specs.is_thinking("Qwen/Qwen3-VL-2B-Instruct")
    assert not model_specs.is_thinking("tiny-small")


def test_make_checkpoint_script(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "scripts" / "make_checkpoint.py"
    out = subprocess.run([sys.executable, str(script), "qwen3-vl-2b", str(tmp_path / "2b"), "--no-weights",
                          "--thinking"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "qwen3-vl-2b (Thinking), no weights" in out.stdout
    assert model_specs.is_thinking(str(tmp_path / "2b"))
    bad = subprocess.run([sys.executable, str(script), "qwen3-vl-3b", str(tmp_path / "x")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid choice: 'qwen3-vl-3b'" in bad.stderr


def test_checkpoints_write_takes_the_family_it_is_given(tmp_path):
    from mai import families

    qwen2 = families.FAMILIES["qwen2"]
    with pytest.raises(MaiError, match="^'tiny-small' is not an architecture of the qwen2 family; choose from: tiny-qwen2"):
        checkpoints.write(qwen2, "tiny-small", tmp_path / "x", weights=False)
    with pytest.raises(MaiError, match="^image_size sets Qwen3-VL's released pixel bounds"):
        checkpoints.write(qwen2, "tiny-qwen2", tmp_path / "y", weights=False, image_size={"shortest_edge": 1})
    path = checkpoints.write(qwen2, "tiny-qwen2", tmp_path / "z", weights=False)
    marker = json.loads((path / models.WRITTEN_MARKER).read_text())
    assert (marker["family"], marker["architecture"], marker["random_weights"]) == ("qwen2", "tiny-qwen2", False)
