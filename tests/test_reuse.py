"""mai.reuse: Table 10 and Table 8 share their baseline rows (--reuse-from), only whole batches, only when the
settings that decide the calls are equal, and a copied row is the row the script would have computed."""
import json
from pathlib import Path
from types import SimpleNamespace

from mai.results import RunStore, read_rows, row_key
from mai.reuse import copy_batches

TINY = ["--preset", "cpu", "--limit", "2", "--think-tokens", "5", "--simple-tokens", "3", "--wandb", "disabled",
        "--order", "stage", "--batch-size", "3"]
SHARED = {"large-S", "small-R", "transfer", "Full RT"}


def same(value):
    """A row without what differs between two runs of the same calls: times, and where it was copied from."""
    if isinstance(value, dict):
        return {k: same(v) for k, v in value.items() if k not in ("reused_from", "times", "latency", "wall_seconds",
                                                                        "started", "ended")}
    if isinstance(value, list):
        return [same(v) for v in value]
    return value


def _by_kind(run: Path) -> dict:
    return {(r["example_id"], "transfer" if r["kind"] == "Full RT" else r["kind"]): r
            for r in read_rows(run) if r["kind"] in SHARED}


def test_table8_copies_table10s_batches_and_they_are_the_rows_it_computes(tmp_path, experiment, capsys):
    out = tmp_path / "runs"
    experiment("10_mai").main(TINY + ["--out", str(out), "--answer-tokens", "3", "--systems", "large-S,small-R,Full RT",
                                      "--run-name", "donor"])
    t08 = experiment("08_reasoning_transfer")
    t08.main(TINY + ["--out", str(out), "--run-name", "donor", "--reuse-from", "10_mai"])  # the same run name
    t08.main(TINY + ["--out", str(out), "--run-name", "computed"])
    donor = _by_kind(out / "10_mai/donor")
    copied, computed = _by_kind(out / "08_reasoning_transfer/donor"), _by_kind(out / "08_reasoning_transfer/computed")
    assert len(donor) == 3 * 4 and copied.keys() == donor.keys() == computed.keys()
    assert all(r["reused_from"] == {"run": (out / "10_mai/donor").as_posix(), "key": donor[k]["key"]}
               for k, r in copied.items())
    assert not any("reused_from" in r for r in computed.values())
    for key, row in copied.items():  # the row Table 8 computes, field for field (times are the donor's)
        assert same(row) == same(computed[key]), key
        assert row["prediction"] == donor[key]["prediction"]
    table = (out / "08_reasoning_transfer/donor/report/paper_tables/table8_reasoning_transfer.cpu.md").read_text()
    assert f"12 rows are the same calls in the same batches of another run, copied from it ({out.as_posix()}/10_mai/donor" in table
    said = capsys.readouterr().out
    assert all(f"{n} rows copied" in said for n in (4,)) and said.count("rows copied") == 3  # per system
    t08.main(TINY + ["--out", str(out), "--run-name", "other", "--reuse-from", str(out / "10_mai/donor"),
                     "--think-tokens", "4"])
    assert "not reusing" in (said := capsys.readouterr().out) and "think_tokens differs" in said
    assert not any("reused_from" in r for r in read_rows(out / "08_reasoning_transfer/other"))


def test_table7_copies_table10s_model_rows_under_its_own_names(tmp_path, experiment, capsys):
    out = tmp_path / "runs"
    experiment("10_mai").main(TINY + ["--out", str(out), "--answer-tokens", "3", "--systems", "large-S,small-R,large-R",
                                      "--run-name", "donor"])
    t07 = experiment("07_prompt_modes")
    t07.main(TINY + ["--out", str(out), "--run-name", "donor", "--reuse-from", "10_mai"])
    t07.main(TINY + ["--out", str(out), "--run-name", "computed"])
    copied, computed = (read_rows(out / "07_prompt_modes" / name) for name in ("donor", "computed"))
    reused = {(r["model"], r["mode"]) for r in copied if "reused_from" in r}
    assert reused == {("tiny-large", "simple"), ("tiny-small", "think"), ("tiny-large", "think")}
    assert len(copied) == len(computed) == 4 * 4  # (tiny-small, simple) is computed
    # the copied row is the row Table 7 computes: same fields, same outputs (times are the donor's)
    dump = lambda r: json.dumps(same(r), sort_keys=True)  # noqa: E731
    assert sorted(map(dump, copied)) == sorted(map(dump, computed))


def _store(path: Path, config: dict) -> RunStore:
    return RunStore(path.parent, "", path.name, config)


def test_only_whole_batches_with_equal_settings_are_copied(tmp_path):
    config = {"small": "s", "large": "l", "order": "stage", "batch_size": 2, "limit": 4}
    examples = [SimpleNamespace(id=f"q{i}") for i in range(5)]
    donor = _store(tmp_path / "donor", config)
    for i in (0, 1, 2, 4):  # the second batch (q2, q3) is incomplete; the third is q4 alone
        donor.append({"key": row_key(f"q{i}", "0.5B-R", "small-R"), "example_id": f"q{i}", "kind": "small-R",
                      "prediction": f"p{i}", "output_tokens": i, "error": None})
    donor.append({"key": "q3|0.5B-R|small-R", "example_id": "q3", "kind": "small-R", "error": "boom"})
    donor.close()
    fields = {"system": "0.5B-R", "kind": "small-R"}
    ours = _store(tmp_path / "ours", config)
    assert copy_batches(ours, tmp_path / "donor", fields, examples, 2) == 3
    ours.close()
    rows = {r["example_id"]: r for r in read_rows(tmp_path / "ours")}
    assert sorted(rows) == ["q0", "q1", "q4"] and rows["q4"]["prediction"] == "p4"
    assert (rows["q4"]["small_output_tokens"], rows["q4"]["large_output_tokens"]) == (4, 0)  # its role's fields

    other = _store(tmp_path / "other", {**config, "batch_size": 4})
    assert copy_batches(other, tmp_path / "donor", fields, examples, 2) == 0  # cut in other batches
    other.close()
    again = _store(tmp_path / "ours", config)
    assert copy_batches(again, tmp_path / "donor", fields, examples, 2) == 0  # nothing pending is copied twice
    again.close()
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["batch_size"] == 2
