"""What a run will fetch from the Hugging Face hub, said before it fetches anything.

The paper preset is every experiment's default: run with no flags, a script downloads Qwen3-VL checkpoints and
lmms-eval datasets (tens of GB). mai.cli prints this notice first (and `--plan` prints it and stops), so that a
user who wanted the CPU presets learns so before the first byte arrives.

Sizes are what the repository knows without the hub: a checkpoint's parameters are its released shape's
(mai/families/, checked against the published counts by tests/test_released_shapes.py), stored in bf16 (2 bytes
each); a dataset's rows and parquet bytes are the hub's dataset pages (the split a benchmark reads), or None
where the repository has not recorded them.
"""
from __future__ import annotations

import dataclasses

GB = 1e9


@dataclasses.dataclass(frozen=True)
class HubModel:
    shape: str  # the released shape with the same configuration (scripts/make_checkpoint.py NAME)
    parameters: int

    @property
    def bytes(self) -> float:
        return 2.0 * self.parameters  # bf16 safetensors, as released


@dataclasses.dataclass(frozen=True)
class HubDataset:
    rows: int  # of the split the benchmark reads
    bytes: float | None  # its parquet files on the hub; None: not recorded


HUB_MODELS = {
    "Qwen/Qwen3-VL-2B-Instruct": HubModel("qwen3-vl-2b", 2_127_532_032),
    "Qwen/Qwen3-VL-4B-Instruct": HubModel("qwen3-vl-4b", 4_437_815_808),
    "Qwen/Qwen3-VL-8B-Instruct": HubModel("qwen3-vl-8b", 8_767_123_696),
}
# Keyed by benchmark name (mai.benchmarks); the hub id is the benchmark's own hub_path.
HUB_DATASETS = {
    "chartqa": HubDataset(2_500, 72.6e6),  # lmms-lab/ChartQA test: one 72.6 MB parquet file
    "pope": HubDataset(9_000, 255e6),  # lmms-lab/POPE test: 255 MB of parquet (hub's conversion)
    "infovqa": HubDataset(2_801, None),  # lmms-lab/DocVQA InfographicVQA validation
    "realworldqa": HubDataset(765, 678e6),  # lmms-lab/RealWorldQA test: 347 MB + 331 MB of parquet
    "mmbench": HubDataset(4_329, None),  # lmms-lab/MMBench en dev
}


def gb(n: float | None) -> str:
    if n is None:
        return "size not recorded"
    return f"{n / GB:.1f} GB" if n >= GB else f"{n / 1e6:.0f} MB"


def hub_models(models) -> list[str]:
    """The models of a run that come from the hub (a hub id the repository knows, or any 'owner/name' that is not a
    local directory)."""
    from pathlib import Path

    return [m for m in models if m in HUB_MODELS or ("/" in m and not Path(m).exists())]


def hub_benchmarks(benchmarks, data_files) -> list[str]:
    """The benchmarks of a run read from the hub: those with a hub dataset and no --data-files."""
    from mai.benchmarks import get_benchmark

    return [b for b in benchmarks if b not in (data_files or {}) and getattr(get_benchmark(b), "hub_path", None)]


def notice(models, benchmarks, data_files=None, limit=None) -> list[str]:
    """Lines saying what will be downloaded and how big it is; [] when nothing comes from the hub."""
    from mai.benchmarks import get_benchmark

    models, benchmarks = hub_models(models), hub_benchmarks(benchmarks, data_files)
    if not models and not benchmarks:
        return []
    lines, total, unknown = ["It will download from the Hugging Face hub (into $HF_HOME, ~/.cache/huggingface):"], 0.0, False
    for m in models:
        known = HUB_MODELS.get(m)
        if known:
            total += known.bytes
            lines.append(f"  {m:<28} {known.parameters / 1e9:.2f}e9 parameters, {gb(known.bytes)} of bf16 weights")
        else:
            unknown = True
            lines.append(f"  {m:<28} size not recorded")
    for b in benchmarks:
        bench, known = get_benchmark(b), HUB_DATASETS.get(b)
        where = f"{bench.hub_path}{' ' + bench.hub_config if getattr(bench, 'hub_config', None) else ''} {bench.split}"
        if known:
            total += known.bytes or 0.0
            unknown |= known.bytes is None
            used = f", {limit:,} used" if limit and limit < known.rows else ""
            lines.append(f"  {where:<28} {known.rows:,} questions{used}, {gb(known.bytes)} of parquet")
        else:
            unknown = True
            lines.append(f"  {where:<28} size not recorded")
    lines.append(f"  in all {'at least ' if unknown else ''}{gb(total)} (a second run reads the cache)")
    return lines
