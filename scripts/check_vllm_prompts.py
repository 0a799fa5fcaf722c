#!/usr/bin/env python
"""Our vLLM prompts through vLLM's own Qwen3-VL input processing, on a CPU (no GPU, no weights, no hub).

Run by scripts/check_vllm_prompts.sh inside a virtualenv with requirements-gpu.txt (vLLM 0.30.0). It:

1. writes the 2B shape's checkpoint directory without weights (mai.vllm_backend.write_dummy_checkpoint, the
   writer of scripts/make_checkpoint.py --no-weights) and loads it as a vLLM ModelConfig, as the engine
   does for load_format="dummy";
2. builds the TokensPrompts mai.vllm_backend sends (one <|image_pad|> per image; vLLM expands it) and
   pushes them through vLLM's multimodal processor for that config (MULTIMODAL_REGISTRY.create_processor,
   the processor the engine applies to a TokensPrompt with multi_modal_data), for several image sizes, and
   checks that its expanded prompt equals the transformers processor's (AutoProcessor of the same
   directory), placeholder count and every id;
3. checks that the second stage's prompt, expanded, extends the first stage's token for token (what vLLM's
   prefix cache needs to reuse the first stage's KV blocks);
4. does 2 again for a directory with the released pixel bounds and lmms-eval's bounds passed as
   mm_processor_kwargs, as VLLMGenerator does for a downloaded checkpoint.
Prints one line per check and exits 1 if any fails.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image  # noqa: E402

from mai.generation import STAGES, Request, Result  # noqa: E402
from mai.checkpoints import write_qwen3_vl  # noqa: E402
from mai.families.qwen3_vl import IMAGE_TOKEN_ID, MAX_PIXELS, MIN_PIXELS, checkpoint_processor  # noqa: E402
from mai.vllm_backend import build_prompt, write_dummy_checkpoint  # noqa: E402

POST = "\nAnswer the question using a single word or phrase."
SIZES = {"small 40x30": (40, 30), "448x448": (448, 448), "2000x2000": (2000, 2000), "very wide 4000x120": (4000, 120),
         "tall 300x2400": (300, 2400)}
REASONING = " Let me look at the chart. The tallest bar is the third one, at 12,345.67. The answer is 12,345.67."
failures: list[str] = []


def check(ok: bool, line: str) -> None:
    print(("ok   " if ok else "FAIL ") + line, flush=True)
    if not ok:
        failures.append(line)


def noise(size: tuple[int, int], seed: int) -> Image.Image:
    import numpy as np

    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def vllm_expand(processor, prompt: dict, mm_kwargs: dict | None = None) -> list[int]:
    """vLLM's processing of one TokensPrompt: parse its multi_modal_data, apply the Qwen3-VL processor."""
    if "multi_modal_data" not in prompt:
        return list(prompt["prompt_token_ids"])
    items = processor.info.parse_mm_data(prompt["multi_modal_data"])
    out = processor(prompt["prompt_token_ids"], items, hf_processor_mm_kwargs=mm_kwargs or {})
    return list(out["prompt_token_ids"])


def compare_first_stages(tag: str, vproc, hf, images_by_case: dict, mm_kwargs: dict | None = None) -> None:
    for case, images in images_by_case.items():
        prompt, state = build_prompt(hf, Request("What is the value of the tallest bar?", images, "simple", POST, 8))
        assert prompt["prompt_token_ids"].count(IMAGE_TOKEN_ID) == len(images)  # one placeholder per image sent
        ours = vllm_expand(vproc, prompt, mm_kwargs)
        theirs = hf(text=[state.prompt], images=images or None, return_tensors="pt")
        ref = theirs["input_ids"][0].tolist()
        n_v, n_t = ours.count(IMAGE_TOKEN_ID), ref.count(IMAGE_TOKEN_ID)
        grid = theirs["image_grid_thw"].tolist() if images else []
        check(n_v == n_t and ours == ref,
              f"{tag} {case}: vLLM expands to {n_v} image tokens, transformers {n_t} (grids {grid}); "
              f"prompt {len(ours)} ids, {'identical' if ours == ref else 'DIFFERENT'}")


def main() -> None:
    from vllm import __version__ as vllm_version
    from vllm.config import ModelConfig
    from vllm.multimodal import MULTIMODAL_REGISTRY
    import torch
    import transformers

    print(f"vllm {vllm_version}, transformers {transformers.__version__}, torch {torch.__version__}; "
          f"random-weight directories, no weights loaded, CPU", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="mai-vllm-check-"))

    # 1. The dummy directory loads as a vLLM model config.
    path = write_dummy_checkpoint("qwen3-vl-2b", tmp / "Qwen3-VL-2B-Instruct", MIN_PIXELS, MAX_PIXELS)
    t0 = time.perf_counter()
    config = ModelConfig(model=str(path), tokenizer=str(path), dtype="bfloat16", seed=0, max_model_len=16384,
                         limit_mm_per_prompt={"image": 2, "video": 0})
    text = config.hf_config.text_config
    check(config.architectures == ["Qwen3VLForConditionalGeneration"] and config.is_multimodal_model
          and (text.hidden_size, text.num_hidden_layers, text.vocab_size) == (2048, 28, 151936),
          f"dummy directory {path.name} loads as a vLLM ModelConfig ({time.perf_counter() - t0:.0f} s): "
          f"{config.architectures}, multimodal, hidden {text.hidden_size}, {text.num_hidden_layers} layers, "
          f"vocab {text.vocab_size}, dtype {config.dtype}")

    # 2. First-stage prompts: vLLM's expansion equals the transformers processor's.
    vproc = MULTIMODAL_REGISTRY.create_processor(config)
    hf = checkpoint_processor(str(path), MIN_PIXELS, MAX_PIXELS)
    print(f"     processors: vLLM {type(vproc).__name__}; transformers {type(hf).__name__} with "
          f"{type(hf.image_processor).__name__}", flush=True)
    cases = {"no image": []}
    cases.update({name: [noise(size, i)] for i, (name, size) in enumerate(SIZES.items())})
    cases["two images 448x448 + very wide"] = [noise(SIZES["448x448"], 10), noise(SIZES["very wide 4000x120"], 11)]
    compare_first_stages("dummy dir", vproc, hf, cases)

    # 3. The second stage extends the first, token for token, after vLLM's expansion.
    tokenizer, question = hf.tokenizer, "What is the value of the tallest bar?"
    for case in ("no image", "448x448", "two images 448x448 + very wide"):
        images = cases[case]
        first_prompt, state = build_prompt(hf, Request(question, images, "think", POST, 64, keep_cache=True))
        state.reasoning_ids = tokenizer(REASONING, add_special_tokens=False).input_ids
        first = Result(text=REASONING, input_tokens=len(state.prompt_ids), output_tokens=len(state.reasoning_ids),
                       times=dict.fromkeys(STAGES, 0.0), cache=state, first_text=state.first_text)
        second_prompt, _ = build_prompt(hf, Request(question, images, "answer", POST, 8, reuse=first))
        a = vllm_expand(vproc, first_prompt) + state.reasoning_ids
        b = vllm_expand(vproc, second_prompt)
        check(b[:len(a)] == a and len(b) > len(a),
              f"second stage, {case}: expanded {len(b)} ids extend the first stage's "
              f"{len(a) - len(state.reasoning_ids)} + {len(state.reasoning_ids)} reasoning ids token for token "
              f"({'yes' if b[:len(a)] == a else 'NO'}; {len(b) - len(a)} ids added)")

    # 4. A directory with the released pixel bounds, lmms-eval's passed per request as VLLMGenerator does.
    released = write_qwen3_vl("qwen3-vl-2b", tmp / "released-bounds", weights=False)
    config2 = ModelConfig(model=str(released), tokenizer=str(released), dtype="bfloat16", seed=0, max_model_len=16384,
                          limit_mm_per_prompt={"image": 2, "video": 0})
    size = {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS}
    subset = {k: cases[k] for k in ("small 40x30", "448x448", "2000x2000", "very wide 4000x120")}
    compare_first_stages("released bounds + mm_processor_kwargs", MULTIMODAL_REGISTRY.create_processor(config2),
                         checkpoint_processor(str(released), MIN_PIXELS, MAX_PIXELS), subset, {"size": size})

    print(f"{'ALL CHECKS PASSED' if not failures else f'{len(failures)} CHECK(S) FAILED'}", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    main()
