"""Questions that ship with the repository (mai/assets/bbh, mai/assets/gsm8k), read after a sha256 check, with
a held-out split fixed before any run looked at them.

Each asset folder holds the files copied byte for byte from their source, its licence, SOURCE.md (where
from, which commit) and SHA256SUMS; ``read_checked`` refuses a file whose digest differs, so a run's rows
are of the questions its config.json names. A fresh clone needs no download for them.

The split (``split_indices``): per task a dev set of ``DEV_SIZE`` examples drawn with ``SPLIT_SEED``
(a constant, never a run's --seed) and a test set of the rest; GSM8K draws its dev set from its train file
and tests on its test file (``mai.benchmarks.gsm8k``). Every setting of the cpu-real preset (Think prompt,
reasoning budget, Simple cap, sparse layer, delta, batch size) is chosen on dev
(paper_tables/dev_settings.cpu-real.md); the tables report test.
"""
from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

from mai import MaiEnvironmentError, MaiError
from mai.data import Benchmark, Example, subsample_indices

ASSETS = Path(__file__).resolve().parent.parent / "assets"
SPLITS = ("dev", "test")
DEV_SIZE = 50
SPLIT_SEED = 20261205  # fixed with the split, before any question was answered; not a run's --seed


def read_checked(folder: str, name: str) -> bytes:
    """The bytes of mai/assets/<folder>/<name> after checking them against that folder's SHA256SUMS."""
    base = ASSETS / folder
    sums = dict(reversed(line.split(maxsplit=1)) for line in (base / "SHA256SUMS").read_text().splitlines()
                if line.strip())
    if name not in sums:
        raise MaiEnvironmentError(f"{base / name} is not listed in {base / 'SHA256SUMS'}")
    try:
        data = (base / name).read_bytes()
    except OSError as err:
        raise MaiEnvironmentError(f"cannot read {base / name} ({err.strerror or err})") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != sums[name]:
        raise MaiEnvironmentError(f"{base / name}: sha256 {digest} is not the one in SHA256SUMS ({sums[name]}); "
                                  "restore it with git checkout")
    return data


def check_split(split: str) -> None:
    if split not in SPLITS:
        raise MaiError(f"unknown split {split!r}; choose from: {', '.join(SPLITS)}")


def split_indices(n: int, split: str, dev_size: int = DEV_SIZE) -> list[int]:
    """The sorted indices of ``split`` among n examples: dev a seeded sample of dev_size, test the rest."""
    check_split(split)
    dev = set(random.Random(SPLIT_SEED).sample(range(n), dev_size))
    return sorted(dev) if split == "dev" else [k for k in range(n) if k not in dev]


def cot_exemplars(folder: str, name: str) -> str:
    """A chain-of-thought prompt file's exemplars, without BIG-bench's canary line and its "-----" rule."""
    text = read_checked(folder, name).decode()
    head, sep, rest = text.partition("\n-----\n")
    return (rest if sep and "canary" in head else text).strip()


_FINAL_ANSWER = re.compile(r"[Tt]he answer is (.+?)\.?\s*$")


def direct_exemplars(cot: str) -> str:
    """Chain-of-thought exemplars ("Q: ...\nA: Let's think step by step. ... So the answer is X.", a
    description line first where the file has one) with each answer cut to its final "X"."""
    blocks = []
    for block in cot.strip().split("\n\n"):
        if not block.startswith("Q:"):
            blocks.append(block)  # the task's description
            continue
        question, sep, reasoning = block.partition("\nA:")
        found = _FINAL_ANSWER.search(reasoning)
        if not sep or not found:
            raise MaiError(f"a chain-of-thought exemplar without a final answer: {block[:80]!r}")
        blocks.append(f"{question}\nA: {found.group(1).strip()}")
    return "\n\n".join(blocks)


class VendoredBenchmark(Benchmark):
    """A text-only benchmark read from the repository's assets, with a dev and a test split. A subclass
    says how its examples are read (``items``: the split's (index, item) pairs) and turned into Examples
    (``example``); ``--data-files`` is refused (the questions are the shipped ones, checked by sha256)."""

    asset_folder = ""
    cot_file = ""  # the few-shot chain-of-thought exemplars (the fewshot-cot Think prompt)
    split = "test"

    def items(self, split: str) -> list[tuple[int, dict]]:
        raise NotImplementedError

    def example(self, item: dict, idx: int, split: str) -> Example:
        raise NotImplementedError

    def exemplars(self) -> str:
        return cot_exemplars(self.asset_folder, self.cot_file)

    def direct_exemplars(self) -> str:
        """The chain-of-thought exemplars answered by their final answer alone (the fewshot-direct Simple
        prompt): what lm-eval's bbh/fewshot tasks send (their description, then "Q: {input}\nA: {target}"
        per exemplar, joined by a blank line; lm_eval/tasks/bbh/fewshot/*.yaml at _bbh.LM_EVAL_COMMIT),
        whose targets are these exemplars' "the answer is X" (tests/test_simple_prompts.py checks both)."""
        return direct_exemplars(self.exemplars())

    def text_example(self, idx: int, split: str, question: str, references: list[str], meta: dict) -> Example:
        """A text-only Example with a stable id: the benchmark, the split, the item's index in its file."""
        return Example(id=f"{self.name}-{split}-{idx}", benchmark=self.name, question=question,
                       references=references, images=[], meta={"index": idx, "split": split, **meta},
                       text_only=True)

    def load(self, limit, seed, data_files=None, split: str | None = None):
        if data_files is not None:
            raise MaiError(f"{self.name} reads the questions shipped in mai/assets/{self.asset_folder} "
                           "(checked by sha256); --data-files does not apply to it")
        split = split or self.split
        pairs = self.items(split)
        chosen = [pairs[k] for k in subsample_indices(len(pairs), limit, seed)]
        source = f"mai/assets/{self.asset_folder} ({split} split: {len(pairs)} examples, sha256-checked)"
        return [self.example(item, idx, split) for idx, item in chosen], source
