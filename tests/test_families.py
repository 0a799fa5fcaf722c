"""The same exactness checks for every model family (mai.families), on tiny random-weight models (CPU, fp32).

Per family: the generation prompt is a prefix of the rendered assistant turn; a second stage continued on
the first stage's KV cache gives the greedy tokens of recomputing it from scratch (with another prompt in
between, so position state a family keeps on the model must be restored); the captured last attention row
equals eager attention's on every layer the family allows, and a sliding-window layer is refused in one
line; a cascade with sparse transfer reaches each route when forced. Run with -s to see each measured
figure (lines starting "figure:").
"""
import copy

import pytest
import torch
from PIL import Image, ImageDraw

from mai import MaiError, checkpoints, families, prompts
from mai import images as images_mod
from mai.answers import default_agreement
from mai.attention import SparseOptions, capture_attention, sliding_window_layers
from mai.cascade import ROUTES, Cascade, CascadeConfig
from mai.generation import HFGenerator, Request
from mai.models import load_model

# One tiny random-weight architecture per family.
TINY = {"qwen3_vl": "tiny-small", "qwen2_5_vl": "tiny-qwen2.5-vl", "qwen3": "tiny-qwen3", "llama": "tiny-smollm2",
        "gemma3_text": "tiny-gemma3-text", "gemma3": "tiny-gemma3", "llava_onevision": "tiny-llava-onevision",
        "idefics3": "tiny-smolvlm", "internvl": "tiny-internvl3.5",
        "qwen2": "tiny-qwen2"}
QUESTION = "How many bars are in the chart, and which one is the tallest?"


def test_every_family_has_a_tiny_model():
    assert set(TINY) == {f.name for f in families.all_families()}


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(family):
        if family not in cache:
            try:
                cache[family] = load_model(TINY[family], device="cpu", min_pixels=64 * 64, max_pixels=128 * 128)
            except MaiError as err:  # a tokenizer package this machine lacks: says which
                cache[family] = err
        if isinstance(cache[family], MaiError):
            pytest.skip(str(cache[family]))
        return cache[family]

    return get


def _image(size=(150, 110)):
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    for i, h in enumerate((30, 70, 50)):
        draw.rectangle([10 + 40 * i, 100 - h, 40 + 40 * i, 100], fill=("red", "green", "blue")[i])
    return img


def _images(lm, size=(150, 110)):
    return [_image(size)] if lm.family.multimodal else []


@pytest.mark.parametrize("family", sorted(TINY))
def test_generation_prompt_is_a_prefix_of_the_rendered_assistant_turn(models, family):
    lm = models(family)
    n = len(_images(lm))
    prompt = prompts.render(lm.processor, n, QUESTION, thinking=False, family=lm.family)
    turn = prompts.conversation(n, QUESTION, lm.family) + [prompts._turn("assistant", "Three; the green one.",
                                                                         lm.family)]
    full = lm.processor.apply_chat_template(turn, tokenize=False, **lm.family.thinking_kwargs(False))
    assert full.startswith(prompt) and full != prompt
    # No second BOS: the template writes its own (Gemma 3), the tokenizer adds none.
    images = images_mod.prepare(_images(lm), lm.processor, lm.family)
    ids = lm.family.encode(lm.processor, [prompt], images)["input_ids"][0].tolist()
    bos = lm.tokenizer.bos_token_id
    assert bos is None or ids[:2] != [bos, bos]


def _recomputed(lm, first, suffix):
    """Greedy tokens of the second stage computed from scratch over the whole sequence, and its first logits."""
    ids = torch.cat([first.sequence[:, :first.input_tokens + len(HFGenerator(lm).reasoning_ids(first))], suffix], 1)
    extra = {}
    for key in lm.family.token_inputs:
        extra[key] = torch.zeros_like(ids)
        extra[key][:, :first.input_tokens] = first.token_inputs[key][:, :first.input_tokens]
    inputs = dict(input_ids=ids, attention_mask=torch.ones_like(ids), **extra, **(first.vision_inputs or {}))
    with torch.inference_mode():
        logits = lm.model(**inputs, use_cache=False).logits[0, -1]
        out = lm.model.generate(**inputs, max_new_tokens=8, do_sample=False, eos_token_id=lm.eos_token_ids,
                                pad_token_id=lm.eos_token_ids[0])
    return out[0, ids.shape[1]:].tolist(), logits, ids


@pytest.mark.parametrize("family", sorted(TINY))
def test_continued_stage_equals_recomputation(models, family):
    lm = models(family)
    gen = HFGenerator(lm)
    images = _images(lm)
    first = gen.generate(Request(QUESTION, images=images, mode="think", max_new_tokens=12, keep_cache=True))
    cache_copy = copy.deepcopy(first.cache)
    # Another prompt in between (another image size): what it leaves on the model must not leak.
    gen.generate(Request("Describe it.", images=_images(lm, (90, 200)), mode="simple", max_new_tokens=3))
    second = gen.generate(Request(QUESTION, images=images, mode="answer", reuse=first, max_new_tokens=8))
    suffix = torch.tensor([prompts.second_stage_suffix_ids(lm.processor, len(images), first.first_text, "",
                                                           lm.thinking, lm.family)])
    tokens, logits, ids = _recomputed(lm, first, suffix)
    n = second.output_tokens
    continued = lm.tokenizer(second.text, add_special_tokens=False).input_ids  # text only, for the message
    assert second.cached_tokens > 0 and second.input_tokens == ids.shape[1]
    # The continued stage's own first-step logits, on a copy of the first stage's cache.
    for name, value in first.position_state.items():
        setattr(lm.model.model, name, value)
    feed = ids[:, cache_copy.get_seq_length():]
    with torch.inference_mode():
        text = {k: torch.zeros_like(feed) for k in lm.family.token_inputs}
        cont_logits = lm.model(input_ids=feed, cache=cache_copy, use_cache=True, **text).logits[0, -1]
    diff = float((cont_logits - logits).abs().max())
    print(f"\nfigure: {family} continued==recomputed tokens {n}/{n}, max |logit diff| {diff:.2e}")
    assert diff < 1e-3, diff
    recomputed_text = lm.tokenizer.decode(tokens[:n], skip_special_tokens=True)
    assert second.text == recomputed_text, (continued, tokens)


def _eager_rows(lm, first, ids, layers):
    extra = {}
    for key in lm.family.token_inputs:
        extra[key] = torch.zeros_like(ids)
        extra[key][:, :first.input_tokens] = first.token_inputs[key][:, :first.input_tokens]
    saved = lm.model.config._attn_implementation
    lm.model.set_attn_implementation("eager")
    try:
        with torch.inference_mode():
            out = lm.model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True, use_cache=False,
                           **extra, **(first.vision_inputs or {}))
    finally:
        lm.model.set_attn_implementation(saved)
    return {layer: out.attentions[layer][0, :, -1, :].float() for layer in layers}


@pytest.mark.parametrize("family", sorted(TINY))
def test_captured_rows_equal_eager_rows_on_every_allowed_layer(models, family):
    from mai.transfer import attention_over_reasoning, _sequence

    lm = models(family)
    gen = HFGenerator(lm)
    first = gen.generate(Request(QUESTION, images=_images(lm), mode="think", max_new_tokens=12, keep_cache=True))
    att = attention_over_reasoning(gen, first, "", layers="all")
    n_layers = lm.model.config.get_text_config().num_hidden_layers
    sliding = sliding_window_layers(lm.model)
    allowed = [i for i in range(n_layers) if i not in sliding]
    assert sorted(att.rows) == allowed
    ids, _ = _sequence(gen, first, "", "answer")
    eager = _eager_rows(lm, first, ids, allowed)
    diff = max(float((att.rows[i] - eager[i]).abs().max()) for i in allowed)
    print(f"\nfigure: {family} capture==eager on layers {allowed}: max |diff| {diff:.2e}; refused {sorted(sliding)}")
    assert diff <= 1e-4
    if sliding:
        with pytest.raises(MaiError, match=r"^layers \[0\] attend through a sliding window of \d+ keys") as err:
            with capture_attention(lm.model, [0]):
                pass
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("family", sorted(TINY))
def test_cascade_with_sparse_transfer_reaches_each_route(models, family):
    lm = models(family)
    sliding = sliding_window_layers(lm.model)
    layer = max(i for i in range(lm.model.config.get_text_config().num_hidden_layers) if i not in sliding)
    config = CascadeConfig(think_tokens=10, answer_tokens=4, transfer="sparse", sparse=SparseOptions(layer, 0.8))
    cascade = Cascade(HFGenerator(lm), HFGenerator(lm), config)
    reached = []
    for route in ROUTES:
        trace = cascade.answer(QUESTION, _images(lm), default_agreement(), "", 4, route=route)
        assert trace.route == route
        if route == "transfer":
            assert 1 <= trace.kept_tokens <= trace.reasoning_tokens
        reached.append(trace.route)
    print(f"\nfigure: {family} routes reached {reached}")


def test_an_unsupported_family_stops_with_one_line_naming_the_supported_ones(tmp_path):
    from transformers import MistralConfig

    MistralConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                  intermediate_size=64, vocab_size=100).save_pretrained(tmp_path)
    with pytest.raises(MaiError) as err:
        load_model(str(tmp_path), device="cpu")
    message = str(err.value)
    assert "\n" not in message and message.startswith("model type 'mistral' is not supported")
    for family in families.all_families():
        assert all(t in message for t in family.model_types)


def test_models_flag_names_the_pair_of_any_two_checkpoints():
    from mai import cli

    presets = {"cpu": cli.Preset(["tiny-small", "tiny-large"], ["synth-pope"], limit=1,
                                 extra=dict(small="tiny-small", large="tiny-large"))}
    p = cli.parser("doc", presets)
    cli.add_cascade_flags(p)
    args = cli.parse(p, presets, ["--preset", "cpu", "--models", "tiny-qwen3,tiny-large"])
    assert (args.small, args.large) == ("tiny-qwen3", "tiny-large")


def test_a_pair_whose_labels_collide_stops_in_one_line(tmp_path):
    from mai import MaiError, cli

    presets = {"cpu": cli.Preset(["tiny-small", "tiny-large"], ["synth-pope"], limit=1,
                                 extra=dict(small="tiny-small", large="tiny-large"))}
    p = cli.parser("doc", presets)
    cli.add_cascade_flags(p)
    for sub in ("a", "b"):  # two directories of one name: every table would mix the two models' rows
        (tmp_path / sub / "internvl").mkdir(parents=True)
    pair = f"{tmp_path / 'a' / 'internvl'},{tmp_path / 'b' / 'internvl'}"
    with pytest.raises(MaiError, match="both be labelled 'internvl'"):
        cli.parse(p, presets, ["--preset", "cpu", "--models", pair])


def test_speculative_decoding_needs_one_tokenizer_in_one_line(models):
    from mai.speculative import SpeculativeGenerator

    draft, target = models("qwen3"), models("llama")
    with pytest.raises(MaiError, match=r"^speculative decoding needs a draft and a target with one tokenizer") as err:
        SpeculativeGenerator(target, draft)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("family", sorted(TINY))
def test_a_written_checkpoint_directory_loads_as_its_architecture(models, family, tmp_path):
    """scripts/make_checkpoint.py's directory: the same family, processor outputs and greedy answer."""
    lm = models(family)
    checkpoints.write(lm.family, TINY[family], tmp_path)
    loaded = load_model(str(tmp_path), device="cpu", dtype="fp32", min_pixels=64 * 64, max_pixels=128 * 128)
    assert loaded.family is lm.family and loaded.random_weights and loaded.eos_token_ids == lm.eos_token_ids
    request = Request(QUESTION, images=_images(lm), mode="simple", max_new_tokens=6)
    ours, theirs = HFGenerator(lm)._inputs(request)[0], HFGenerator(loaded)._inputs(request)[0]
    assert set(ours) == set(theirs)
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
    assert HFGenerator(loaded).generate(request).input_tokens == ours["input_ids"].shape[1]
