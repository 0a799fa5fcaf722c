"""analysis.claims: each claim's number and verdict from run rows whose routes, scores and latencies are known."""
import json

import pytest

from analysis import claims


def _write_run(path, rows, **config):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(dict(preset="cpu-real", benchmarks=["synth-pope"], limit=10,
                                                      provenance=dict(cpu_count=2, git_commit="abc"), **config)))
    (path / "models.json").write_text(json.dumps({"0.5B": {"random_weights": False},
                                                  "1.5B": {"random_weights": False}}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _row(i, system, kind, right, latency, **extra):
    ref = "yes" if i % 2 else "no"
    wrong = "no" if ref == "yes" else "yes"
    return dict(key=f"synth-pope-{i}|{system}|{kind}|{extra.get('verify')}", example_id=f"synth-pope-{i}",
                benchmark="synth-pope", system=system, kind=kind, references=[ref],
                prediction=ref if right else wrong, latency=latency, error=None, **extra)


def _table10_rows():
    routes = ["simple"] * 6 + ["reasoning"] + ["transfer"] * 3  # 60% / 10% / 30%
    rows = []
    for i in range(10):
        rows.append(_row(i, "1.5B-S", "large-S", i < 5, 1.0))
        rows.append(_row(i, "1.5B-R", "large-R", i < 8, 10.0))
        rows.append(_row(i, "0.5B-R", "small-R", i < 3, 4.0))
        rows.append(_row(i, "Full RT", "Full RT", i < 7, 5.0))
        rows.append(_row(i, "MAI", "MAI", i < 6, 2.0, verify="answer", route=routes[i]))
    return rows


def test_route_accuracy_and_speedup_claims(tmp_path):
    _write_run(tmp_path / "runs" / "10_mai" / "cpu-real", _table10_rows())
    out = claims.build(tmp_path / "runs", "cpu-real", tmp_path)
    df = out["frame"].set_index("claim")
    by_start = {c.split(" ")[0] + c.split(" ")[1]: r for c, r in df.iterrows()}
    simple = by_start["atleast"]
    assert simple["synth-pope"].startswith("60% [31-83], n=10")  # Wilson interval of 6/10
    assert simple["here"] == "holds (1/1 benchmarks)"
    assert by_start["upto"]["here"] == "holds (1/1 benchmarks)"  # 10% <= 15%
    assert by_start["under30%"]["here"] == "does not hold (0/1 benchmarks)"  # 30% is not under 30%
    mai = df.loc[[c for c in df.index if c.startswith("MAI at least")][0]]
    assert mai["synth-pope"] == "MAI 60 / 1.5B-S 50 / Full RT 70"
    assert mai["here"] == "does not hold (0/1 benchmarks)"  # 10 points from Full RT is not comparable
    speed = df.loc[[c for c in df.index if c.startswith("MAI faster")][0]]
    assert speed["synth-pope"] == "5.00x" and speed["here"].startswith("holds")
    text = (tmp_path / "paper_tables" / "claims.cpu-real.md").read_text()
    assert "REAL weights (0.5B; 1.5B)" in text and "Wilson" in text


def test_transfer_mass_and_speculative_claims(tmp_path):
    runs = tmp_path / "runs"
    _write_run(runs / "10_mai" / "cpu-real", _table10_rows())
    t8 = [_row(i, "1.5B-S", "large-S", i < 4, 1.0) for i in range(10)]
    t8 += [_row(i, "1.5B-S + 0.5B reasoning", "transfer", i < 2, 1.0) for i in range(10)]
    _write_run(runs / "08_reasoning_transfer" / "cpu-real", t8)
    mass = [dict(key=f"m{i}", example_id=f"synth-pope-{i}", benchmark="synth-pope", error=None,
                 fractions={"3": 0.2, "7": 0.3}) for i in range(4)]
    _write_run(runs / "09_layer_ablation" / "cpu-real", mass, delta=0.8)
    t12 = []
    for i in range(4):
        t12.append(_row(i, "1.5B", "target", True, 10.0))
        t12.append(_row(i, "1.5B + 0.5B draft", "speculative", True, 12.0, draft_proposed=10, draft_accepted=7,
                        verify_steps=3, same_as_target=True))
    _write_run(runs / "12_speculative_decoding" / "cpu-real", t12)
    df = claims.build(runs, "cpu-real", tmp_path)["frame"]
    transfer = df[df.claim.str.startswith("the small model's reasoning")].iloc[0]
    assert transfer["synth-pope"] == "-20 points (40 -> 20)"
    assert transfer["here"] == "does not hold (better on 0/1 benchmarks, worst -20 points)"
    mass_row = df[df.claim.str.startswith("about 20%")].iloc[0]
    assert mass_row["synth-pope"] == "25% (layers 20-30%), n=4" and mass_row["here"].startswith("holds")
    spec = df[df.claim.str.startswith("token-level")].iloc[0]
    assert spec["synth-pope"] == "1.20x the target's latency, rejection 30%" and spec["here"].startswith("holds")


def test_wilson_interval():
    lo, hi = claims.wilson(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-3)
    lo, hi = claims.wilson(5, 10)
    assert (lo, hi) == (pytest.approx(0.2366, abs=1e-3), pytest.approx(0.7634, abs=1e-3))


def test_missing_table10_run_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no Table 10 run"):
        claims.build(tmp_path / "runs", "cpu-real", tmp_path)


def test_readme_copy_is_replaced_between_its_marks(tmp_path):
    readme = tmp_path / "README.md"
    start, end = claims.README_MARKS
    readme.write_text(f"intro\n{start}\nold table\n{end}\noutro\n")
    claims.update_readme(readme, "# caption\n\nProduced by ...\n\n| a |\n|---|\n| 1 |\n")
    assert readme.read_text() == f"intro\n{start}\nProduced by ...\n\n| a |\n|---|\n| 1 |\n{end}\noutro\n"
    readme.write_text("no marks\n")
    with pytest.raises(SystemExit, match="lacks the marks"):
        claims.update_readme(readme, "# c\n\nx\n")
