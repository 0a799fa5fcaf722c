"""Tables 3 and 4: where the time of one Qwen3-VL answer goes, stage by stage, for the 2B, 4B and 8B models.

Each model answers a simulated query (as in the paper): a random-noise image of --image-size and a
question of --question-tokens ordinary words, with the output length forced to --output-tokens
(min_new_tokens = max_new_tokens). Input preprocessing, vision encoder, prefill and decode are timed
apart, the device synchronised before every clock read: --warmup runs first (rows flagged warmup=True),
then --runs timed runs (the paper: 100 on one H100).

- Table 3: mean ± std of each stage and of the total, per model, prompt length and output length.
- Table 4: prefill cost per prompt token against decode cost per output token, their ratio, and peak
  memory. Prefill per token = prefill seconds / prompt tokens prefilled (image tokens included; the
  vision encoder is timed apart). Decode per token = decode seconds / (output tokens - 1): the first
  output token comes out of the prefill's forward. Peak memory: torch.cuda.max_memory_allocated on a
  GPU; on a CPU the process's peak resident set (VmHWM, reset before each run through
  /proc/self/clear_refs; ru_maxrss, a lifetime peak, where that is unavailable). Both include the weights.
  On a GPU whose memory bandwidth is known, decode per token is shown beside its physical floor: the
  weights' bytes read once per token at that bandwidth.
- With several --output-tokens, the figure plots latency against output length (the paper: it grows
  linearly) with a least-squares line.
- With several --question-tokens (two prompt lengths at least), analysis/latency_model.py fits each
  model's prefill time as a line in prompt tokens and predicts MAI's latency call by call from it.

    python experiments/03_stage_profiling.py                     # paper: Qwen3-VL 2B/4B/8B checkpoints, GPU
    python experiments/03_stage_profiling.py --random-weights    # the same shapes, random weights (no hub)
    python experiments/03_stage_profiling.py --preset cpu        # tiny-small and tiny-large, as 10_mai's cpu preset
    python experiments/03_stage_profiling.py --preset cpu --models qwen3-vl-2b --dtype bf16 --question-tokens 32
        # the 2B shape with random weights on a CPU (2-5 minutes on 2 cores, model build included)
    python experiments/03_stage_profiling.py --output-tokens 16,64,256 --runs 10
    python experiments/03_stage_profiling.py --preset cpu-real   # real Qwen2.5-Coder 0.5B/1.5B, text only

Presets: paper = the three checkpoints, 5 warm-up + 100 timed runs at each of 16, 64 and 256 output
tokens and 32- and 1024-token questions (a 448x448 image: 196 image tokens), dtype auto (bf16 on a GPU).
cpu = what 10_mai's cpu preset runs, so that the latency model can be checked against it: tiny-small and
tiny-large with random weights, dtype auto (fp32 on a CPU), a 128x128 image (16 image tokens, 10_mai's
--max-pixels), 8- and 128-token questions, 8/16/32 output tokens (its --simple-tokens, --answer-tokens,
--think-tokens), 1 warm-up + 3 timed runs: about a minute on 2 cores. On a CPU shared with other
processes, --threads 1 avoids oversubscribing it. cpu-real = the real Qwen2.5-Coder 0.5B and 1.5B (text-only:
no image is shown and the vision-encoder stage is reported absent, not as 0 ms), at the dtype and torch
threads mai.real_checkpoints records, a Simple-prompt-sized and a transfer-prompt-sized question.

Writes runs/03_stage_profiling/<run>/{config.json,models.json,results.jsonl} (one row per run),
and into its report/ (or --report-dir) paper_tables/table3_stage_times*.{md,tex},
paper_tables/table4_per_token_cost*.{md,tex} and figures/table3_stage_times*.png. Running the same command again resumes; a resumed model repeats its
warm-up (unrecorded) before its remaining timed runs. Rebuild the tables alone with
`python -m analysis.table03 runs/03_stage_profiling/<run>`.
"""
from __future__ import annotations

import os
import resource
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

from analysis import table03  # noqa: E402
from mai import MaiError, cli, experiment, model_specs, models, stage_timing  # noqa: E402
from mai.families import qwen3_vl  # noqa: E402
from mai.generation import HFGenerator, Request  # noqa: E402
from mai.results import row_key  # noqa: E402

EXPERIMENT = "03_stage_profiling"
PRESETS = {
    # 448x448 -> 196 image tokens (patch 16, merge 2). Two question lengths: the latency model needs a line,
    # and reasoning transfer prompts carry hundreds of reasoning tokens.
    "paper": cli.Preset(cli.PAPER_MODELS, (), limit=None, extra=dict(
        runs=100, warmup=5, dtype="auto", output_tokens=[16, 64, 256], image_size="448x448",
        question_tokens=[32, 1024])),
    # What experiments/10_mai.py --preset cpu runs (models, dtype, image size, output lengths), so the latency
    # model fitted here can be checked against it. 8 + 16 image tokens + template ~ its Simple prompts;
    # 128 ~ its transfer prompts (Simple prompt + 32 reasoning tokens, with the transfer wrapper).
    "cpu": cli.Preset(cli.CPU_MODELS, (), limit=None, extra=dict(
        runs=3, warmup=1, dtype="auto", output_tokens=[8, 16, 32], image_size="128x128",
        question_tokens=[8, 128])),
    # The real text-only pair (no image, no vision encoder: its stage is reported absent), at the dtype and
    # threads mai.real_checkpoints measured fastest here. Question lengths ~ a Simple prompt and a transfer
    # prompt (Simple prompt + the 0.5B's reasoning); output lengths ~ a Simple answer and a reasoning budget.
    # The lead sizes runs and lengths for the README's time budget.
    "cpu-real": cli.Preset(cli.REAL_MODELS, (), limit=None, real=True, extra=dict(
        runs=2, warmup=1, output_tokens=[16, 128], question_tokens=[32, 256])),
}
# Ordinary words for the simulated question; cycled until the question has the asked-for token count.
WORDS = ("what is the value of the tallest bar in the chart and how does it compare with the other bars "
         "shown for each year in the picture").split()


def _ints(flag: str):
    def parse(text: str) -> list[int]:
        try:
            values = [int(t) for t in cli.csv_list(text)]
        except ValueError:
            raise MaiError(f"{flag} wants comma-separated positive integers, got '{text}'") from None
        if not values or min(values) < 1:
            raise MaiError(f"{flag} wants comma-separated positive integers, got '{text}'")
        return values
    return parse


def image_size(text: str) -> tuple[int, int]:
    """'448x448' -> (448, 448)."""
    w, sep, h = text.lower().partition("x")
    if not (sep and w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0):
        raise MaiError(f"--image-size wants WIDTHxHEIGHT in pixels, e.g. 448x448; got '{text}'")
    return int(w), int(h)


def random_weight_spec(spec: str) -> str:
    """The random-weight architecture of a checkpoint's size: 'Qwen/Qwen3-VL-8B-Instruct' -> 'qwen3-vl-8b'."""
    if spec in qwen3_vl.ARCHITECTURES:
        return spec
    arch = "qwen3-vl-" + model_specs.model_label(spec).split("-")[0].lower()
    if arch not in qwen3_vl.ARCHITECTURES:
        shapes = ", ".join(a for a in qwen3_vl.ARCHITECTURES if not a.startswith("tiny"))
        raise MaiError(f"--random-weights: no random-weight shape for '{spec}'; known shapes: {shapes}")
    return arch


def simulated_image(width: int, height: int, seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def simulated_question(tokenizer, n_tokens: int) -> tuple[str, int]:
    """A question of ordinary words, cut to n_tokens by the model's tokenizer; returns (text, its tokens)."""
    words = []
    while len(tokenizer(" ".join(words), add_special_tokens=False).input_ids) < n_tokens:
        words.append(WORDS[len(words) % len(WORDS)])
    ids = tokenizer(" ".join(words), add_special_tokens=False).input_ids[:n_tokens]
    text = tokenizer.decode(ids).strip()
    return text, len(tokenizer(text, add_special_tokens=False).input_ids)


def image_tokens(loaded, image) -> int:
    """Tokens the processor turns the image into: merged patches."""
    grid = loaded.processor.image_processor(images=[image], return_tensors="pt")["image_grid_thw"]
    return int(grid.prod()) // loaded.processor.image_processor.merge_size ** 2


def _proc_status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return None


class PeakMemory:
    """Peak memory of one run: start() before it, peak() after it; `method` says what was measured."""

    def __init__(self, device: torch.device):
        self.device = device
        if device.type == "cuda":
            self.method = "torch.cuda.max_memory_allocated"
        elif self._reset_rss_peak():
            self.method = "peak RSS of the process (VmHWM, reset before each run)"
        else:
            self.method = "peak RSS of the process (ru_maxrss, lifetime peak, not reset per run)"

    @staticmethod
    def _reset_rss_peak() -> bool:
        try:  # Linux: writing 5 to clear_refs resets the peak resident set (VmHWM) to the current one
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return _proc_status_bytes("VmHWM") is not None
        except OSError:
            return False

    def start(self) -> int:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            return torch.cuda.memory_allocated(self.device)
        if "reset" in self.method:
            self._reset_rss_peak()
        return _proc_status_bytes("VmRSS") or 0

    def peak(self) -> int:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device)
        if "reset" in self.method:
            return _proc_status_bytes("VmHWM")
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return rss if sys.platform == "darwin" else rss * 1024  # bytes on macOS, kB on Linux


def run_key(label: str, question_tokens: int, output_tokens: int, warmup: bool, index: int) -> str:
    return row_key(label, f"q{question_tokens}", output_tokens, "warmup" if warmup else "run", index)


def settings(args) -> list[tuple[int, int]]:
    """(question tokens, output tokens) pairs, each profiled apart; every prompt length comes early, so a run
    cut short still has the two the latency model needs to fit prefill as a line."""
    return [(q, n) for n in args.output_tokens for q in args.question_tokens]


def profile_model(store, loaded, args, questions: dict[int, tuple[str, int]], image, extra: dict) -> int:
    """Warm-up, then the pending timed runs, per question length and output length; returns how many rows
    were written. `questions` maps each asked-for question length to (text, its tokens)."""
    generate = HFGenerator(loaded, args.seed, decode=args.decode).generate
    memory = PeakMemory(loaded.device)
    written = 0
    for q, n in settings(args):
        if not store.pending(run_key(loaded.label, q, n, False, j) for j in range(args.runs)):
            continue
        question, q_tokens = questions[q]
        # Warm-ups run again on a resume (their rows are not written twice): timed runs need a warm process.
        plan = [(True, j) for j in range(args.warmup)] + [(False, j) for j in range(args.runs)]
        for warmup, j in tqdm(plan, desc=f"{loaded.label} q{q} {n} tokens", unit="run", leave=False):
            key = run_key(loaded.label, q, n, warmup, j)
            if not warmup and store.done(key):
                continue
            row = dict(key=key, model=loaded.label, spec=loaded.spec, warmup=warmup, run_index=j,
                       requested_output_tokens=n, question_tokens=q_tokens, **extra)
            try:
                before = memory.start()
                result = generate(Request(question=question, images=[] if image is None else [image],
                                          mode="simple", min_new_tokens=n, max_new_tokens=n))
                row.update(result.summary(), peak_memory_bytes=memory.peak(), memory_before_bytes=before,
                           memory_method=memory.method, error=None)
                if image is None:  # a text-only model has no vision encoder: no stage ran, not one of 0 ms
                    row["times"] = {**row["times"], "vision": None}
                if hasattr(os, "getloadavg"):  # CPU timings are only as good as the machine was quiet
                    row["load_average"] = round(os.getloadavg()[0], 2)
            except Exception as err:  # an out-of-memory run is a result too; the next run goes on
                if isinstance(err, (KeyboardInterrupt, MemoryError)):
                    raise
                row.update(error=f"{type(err).__name__}: {err}".strip(), traceback=traceback.format_exc(limit=3))
            written += not store.done(key)
            store.append(row)
    return written


def main(argv=None):
    wall_start = time.perf_counter()
    p = cli.parser(__doc__, PRESETS)
    p.add_argument("--runs", type=int, help="timed runs per model and output length (paper: 100)")
    p.add_argument("--warmup", type=int, help="untimed warm-up runs before them (rows flagged warmup=True)")
    p.add_argument("--image-size", help="simulated image WIDTHxHEIGHT (default 448x448: 196 image tokens); "
                   "multiples of 32 are kept exactly, others are resized as the processor does")
    p.add_argument("--question-tokens", type=_ints("--question-tokens"), help="tokens in the simulated "
                   "question, comma-separated: each length is profiled apart, and two or more let the latency "
                   "model fit prefill time as a line in prompt tokens (paper preset: 32,1024)")
    p.add_argument("--output-tokens", type=_ints("--output-tokens"), help="forced output length(s), comma-separated; several "
                   "values plot latency against output length (paper preset: 16,64,256)")
    p.add_argument("--random-weights", action="store_true", help="build each model's real shape "
                   "(qwen3-vl-2b/4b/8b) with random weights instead of loading its checkpoint")
    args = cli.parse(p, PRESETS, argv)
    if args.benchmarks or args.data_files or args.limit:
        raise MaiError("03_stage_profiling runs on simulated inputs: --benchmarks, --limit and --data-files "
                       "do not apply (see --image-size, --question-tokens, --output-tokens)")
    if args.runs < 1 or args.warmup < 0:
        raise MaiError("--runs must be at least 1, --warmup at least 0")
    width, height = image_size(args.image_size or "448x448")
    specs = [random_weight_spec(s) for s in args.models] if args.random_weights else list(args.models)
    # Keep the simulated image at its size: the processor's pixel bounds must not resize it.
    pixels = experiment.pixel_kwargs(args) or dict(min_pixels=min(qwen3_vl.MIN_PIXELS, width * height),
                                                   max_pixels=max(qwen3_vl.MAX_PIXELS, width * height))
    store, tracker = experiment.open_run(EXPERIMENT, args, resolved_models=specs)
    described = table03.read_models(store.dir)
    written = 0
    for spec in specs:
        label = model_specs.model_label(spec)
        if not any(store.pending(run_key(label, q, n, False, j) for j in range(args.runs))
                   for q, n in settings(args)):
            continue  # finished in an earlier invocation: no need to build it
        t0 = time.perf_counter()
        loaded = models.load_model(spec, device=args.device, dtype=args.dtype, attn_implementation=args.attn,
                                   seed=args.seed, **pixels)
        build_s = time.perf_counter() - t0
        text_only = loaded.family.vision_tower is None
        image = None if text_only else simulated_image(width, height, args.seed)
        questions = {q: simulated_question(loaded.tokenizer, q) for q in args.question_tokens}
        extra = (dict(image_size=None, image_tokens=None) if text_only
                 else dict(image_size=[width, height], image_tokens=image_tokens(loaded, image)))
        described[loaded.label] = {**loaded.describe(), "build_s": round(build_s, 3),
                                   "torch_threads": torch.get_num_threads(), **extra}
        if loaded.device.type == "cpu":  # Table 4's decode floor on a CPU: measured here, beside the runs
            described[loaded.label].update(memory_bandwidth_bytes_per_s=round(stage_timing.memory_bandwidth()),
                                           step_bytes=stage_timing.weight_bytes(loaded.model),
                                           decode=args.decode)
        store.write_json("models.json", described)
        written += profile_model(store, loaded, args, questions, image, extra)
        models.free(loaded)

    outputs = table03.build(store.dir, args.report_dir)
    wall_s = time.perf_counter() - wall_start
    outputs["summary"].update(wall_s=wall_s, rows_written=written)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)  # W&B: rows, summary, figure; prints the tables
    print("\n".join(table03.ratio_lines(outputs["data"])))
    print(f"rows written: {written}; wall time {wall_s:.1f} s (model builds included)")
    return outputs


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    cli.run(main)
