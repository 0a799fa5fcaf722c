"""One adapter per model family: only what differs between the families MAI runs, keyed by config.model_type.

Nothing in the method is specific to one family (a small and a large model answer, mutual verification,
a second stage on the small model's KV cache, attention over its reasoning). What differs is how a
family is built and talked to: its transformers class and config; its chat template and thinking
switch; its vision tower; which processor outputs follow the token sequence (and so must be extended
when a second stage continues the cache); position state to restore before continuing (M-RoPE
offsets); how images are sized; its stop tokens (named by string); and what vLLM needs. The cascade,
transfer selection, answers and scoring never look at a family.

Adding a family = one file in this folder that builds a `Family` (mai/families/family.py) and calls
`register`, named in the import list below, and the same checks (tests/test_families.py parametrizes
over every registered family). The import list is the registry's order (supported() lists model types in it).
"""
from __future__ import annotations

from mai import MaiError
# Each family file registers itself when imported; this order is the registry's.
from mai.families import qwen3_vl, qwen2_5_vl, gemma3, llava_onevision, text, internvl, idefics3, qwen2  # noqa: F401
from mai.families.family import FAMILIES, Family


def all_families() -> list[Family]:
    return list(FAMILIES.values())


def supported() -> str:
    return ", ".join(t for f in all_families() for t in f.model_types)


def by_model_type(model_type: str) -> Family:
    """The family of a checkpoint's config.model_type, or a one-line error naming the supported ones."""
    for family in all_families():
        if model_type in family.model_types:
            return family
    raise MaiError(f"model type '{model_type}' is not supported; supported model types: {supported()}")


def by_architecture(name: str) -> Family | None:
    """The family of a random-weight architecture name (tiny-small, tiny-qwen3, ...), or None."""
    for family in all_families():
        if name in family.architectures:
            return family
    return None


def architectures() -> dict[str, Family]:
    return {name: f for f in all_families() for name in f.architectures}


def default() -> Family:
    return FAMILIES["qwen3_vl"]
