"""Stage times of one transformers generate call, as the paper profiles them (Tables 3-4).

preprocess: from the call's start to its inputs on the device (image resize, patching, tokenization);
vision: the vision tower's forward, timed by hooks; prefill: the prompt's forward without the vision
tower, up to the first logits; decode: every token after the first. Each clock read is preceded by a
device synchronize, so GPU times are the kernels' own and not their launch. A batch's times are divided
evenly among its requests (amortised cost, not a latency).
"""
from __future__ import annotations

import contextlib
import time

import torch
from transformers import LogitsProcessor


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class PrefillClock(LogitsProcessor):
    """Stamps the end of prefill: generate calls logits processors first right after the prompt's forward."""

    def __init__(self, device):
        self.device, self.first = device, None

    def __call__(self, input_ids, scores):
        if self.first is None:
            sync(self.device)
            self.first = time.perf_counter()
        return scores


class VisionTimer:
    """Times the vision tower inside the model's forward with hooks, so prefill excludes it."""

    def __init__(self, module, device):
        self.device, self.total, self._start = device, 0.0, None
        self._handles = [] if module is None else [module.register_forward_pre_hook(self._pre),
                                                    module.register_forward_hook(self._post)]

    def _pre(self, *_):
        sync(self.device)
        self._start = time.perf_counter()

    def _post(self, *_):
        sync(self.device)
        self.total += time.perf_counter() - self._start

    def remove(self):
        for h in self._handles:
            h.remove()


class StageTimer:
    """The clock of one generate call: built at the call's start, `encoded()` once the inputs are on the
    device, the generate call inside `generating(tower)` (its logits processors include `prefill_clock`),
    then `times(n)`."""

    def __init__(self, device: torch.device):
        self.device = device
        self.prefill_clock = PrefillClock(device)
        self.vision = 0.0
        sync(device)
        self.start = time.perf_counter()
        self.inputs_ready = self.end = None

    def encoded(self) -> None:
        sync(self.device)
        self.inputs_ready = time.perf_counter()

    @contextlib.contextmanager
    def generating(self, tower):
        vision = VisionTimer(tower, self.device)
        try:
            yield
        finally:
            vision.remove()
        sync(self.device)
        self.end = time.perf_counter()
        self.vision = vision.total

    def times(self, n: int = 1) -> dict[str, float]:
        """Seconds per stage (mai.generation.STAGES), each divided by the n requests of the call."""
        first_step = self.prefill_clock.first or self.end
        return dict(preprocess=(self.inputs_ready - self.start) / n, vision=self.vision / n,
                    prefill=max(first_step - self.inputs_ready - self.vision, 0.0) / n,
                    decode=(self.end - first_step) / n)


def memory_bandwidth(gib: float = 2.0, repeats: int = 5) -> float:
    """This CPU's memory read bandwidth in bytes/s, as batch-1 decode meets it: torch summing `gib` GiB of
    float32 (far past any cache) with the current torch threads, the best of `repeats` after one warm pass.
    Measured in the same run as the decode it bounds, since a shared machine's bandwidth moves."""
    x = torch.ones(int(gib * 2**30) // 4, dtype=torch.float32)
    x.sum()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - start)
    return x.numel() * 4 / best


def weight_bytes(model) -> int:
    """Bytes of the weights one decode step reads: every parameter but the input embedding table, of which a
    step reads one row (when the output head is tied to it, the head reads it whole and it counts once)."""
    embedding = model.get_input_embeddings().weight
    tied = model.get_output_embeddings() is not None and model.get_output_embeddings().weight is embedding
    return sum(p.numel() * p.element_size() for p in model.parameters()
               if p is not embedding or tied)
