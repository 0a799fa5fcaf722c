"""Every figure the analysis writes is readable: no overlapping or clipped text, no legend over an axes, no
warning while drawing; on rows shaped like the CPU preset's (2 synthetic benchmarks, tiny-small and
tiny-large, 4 layers) and like the paper's (5 benchmarks, 6 systems, 28 layers). Also the provenance each
figure carries (footer line, sidecar JSON, PNG metadata, a PDF beside the PNG) and the tables' units.

The rows are built here in the schema each experiment writes (results.jsonl), with made-up outputs: the
figures are drawn from rows alone, no model is loaded.
"""
import json
import logging
import random
import warnings

import pytest

from analysis import figure01, pareto, style, table03, table07, table08, table09, table10, table12

# think_tokens: the reasoning budget (the cpu preset's is 32: its token axes span less than a decade).
CPU = dict(preset="cpu", benchmarks=["synth-chartqa", "synth-pope"], models=["tiny-small", "tiny-large"], layers=4,
           n=6, think_tokens=32)
PAPER = dict(preset="paper", benchmarks=["chartqa", "pope", "infovqa", "realworldqa", "mmbench"],
             models=["2B", "4B", "8B"], layers=28, n=10, think_tokens=1024)
REFERENCES = {"synth-chartqa": ["12"], "chartqa": ["12"], "synth-pope": ["yes"], "pope": ["yes"],
              "infovqa": ["blue"], "realworldqa": ["B"], "mmbench": ["B"]}
PARAMETERS = {"tiny-small": 4e6, "tiny-large": 9e6, "2B": 2.1e9, "4B": 4.4e9, "8B": 8.8e9}


def _write_run(path, shape, rows, **config):
    path.mkdir(parents=True)
    models = config.pop("models", shape["models"])
    config = dict(preset=shape["preset"], benchmarks=shape["benchmarks"], limit=shape["n"], delta=0.8,
                  experiment=path.name, provenance=dict(cpu_count=2, git_commit="0123456789abcdef",
                                                        gpu=None if shape["preset"] == "cpu" else "NVIDIA H200"),
                  **config)
    (path / "config.json").write_text(json.dumps(config))
    (path / "models.json").write_text(json.dumps({m: dict(spec=m, random_weights=shape["preset"] == "cpu",
                                                          parameters=PARAMETERS.get(m), dtype="float32")
                                                  for m in models}))
    for i, r in enumerate(rows):
        r.setdefault("key", f"k{i}")
        r.setdefault("error", None)
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _answer(rng, bench, p=0.6):
    ref = REFERENCES[bench]
    return dict(references=ref, prediction=ref[0] if rng.random() < p else "no idea",
                meta=dict(index=rng.randrange(1000), choices={"A": "x", "B": "y"}) if bench == "mmbench" else {})


def rows07(shape, rng):
    think = shape["think_tokens"]
    return [dict(benchmark=b, model=m, mode=mode, example_id=f"{b}-{i}", output_tokens=rng.randint(1, 4) if
                 mode == "simple" else rng.randint(think // 2, think), latency=rng.uniform(0.1, 9), **_answer(rng, b))
            for b in shape["benchmarks"] for m in shape["models"] for mode in ("simple", "think")
            for i in range(shape["n"])]


def rows03(shape, rng):
    rows = []
    for m in shape["models"]:
        for q in (8, 128):
            for out in (16, 128, 512):
                for run in range(3):
                    t = dict(preprocess=rng.uniform(0.001, 0.01), vision=rng.uniform(0.01, 0.05),
                             prefill=rng.uniform(0.02, 0.2), decode=out * rng.uniform(0.01, 0.03))
                    rows.append(dict(model=m, question_tokens=q, requested_output_tokens=out, output_tokens=out,
                                     input_tokens=q + 80, image_tokens=64, times=t, latency=sum(t.values()),
                                     peak_memory_bytes=2 ** 30, memory_before_bytes=2 ** 29, cached_tokens=0,
                                     warmup=False))
    return rows


def rows08(shape, rng):
    s, m, L = shape["models"][0], shape["models"][1], shape["models"][-1]
    systems = [(f"{s}-R", "small-R"), (f"{L}-S", "large-S"), (f"{L}-S + {s} reasoning", "transfer")]
    if len(shape["models"]) == 3:
        systems.insert(1, (f"{m}-S", "mid-S"))
    return [dict(benchmark=b, system=name, kind=kind, example_id=f"{b}-{i}", small_output_tokens=rng.randint(0, 300),
                 large_output_tokens=rng.randint(1, 10), latency=rng.uniform(0.2, 5), **_answer(rng, b))
            for b in shape["benchmarks"] for name, kind in systems for i in range(shape["n"])]


def rows09(shape, rng):
    L = shape["models"][-1]
    systems = [(f"{L}-S", None), ("Full", None)] + [(f"L{k}", k) for k in range(shape["layers"])]
    rows = []
    for b in shape["benchmarks"]:
        for name, layer in systems:
            for i in range(shape["n"]):
                n = rng.randint(20, 400)
                kept = max(1, int(n * rng.uniform(0.1, 0.5))) if layer is not None else n
                rows.append(dict(benchmark=b, system=name, layer=layer, example_id=f"{b}-{i}", kept_tokens=kept,
                                 reasoning_tokens=n, kept_fraction=kept / n if layer is not None else None,
                                 latency=rng.uniform(0.1, 3), **_answer(rng, b)))
    return rows


def rows09_mass(shape, rng):
    return [dict(example_id=f"text-{i}", benchmark="text", system="attention", reasoning_tokens=rng.randint(30, 64),
                 fractions={str(k): rng.uniform(0.05, 0.5) for k in range(shape["layers"])},
                 shares={str(k): dict(reasoning=rng.uniform(0.2, 0.6), sink=rng.uniform(0.1, 0.7))
                         for k in range(shape["layers"])}) for i in range(8)]


MAI_LABELS = {"answer": "MAI two-stage answer (Sec. 5.1)", "reasoning": "MAI simplified (verify on reasoning)"}


def rows10(shape, rng):
    s, L = shape["models"][0], shape["models"][-1]
    systems = [(f"{L}-S", "large-S", None), (f"{L}-R", "large-R", None), (f"{s}-R", "small-R", None),
               ("Full RT", "Full RT", None)] + [(MAI_LABELS[v], "MAI", v) for v in ("answer", "reasoning")]
    return [dict(benchmark=b, system=name, kind=kind, verify=v, example_id=f"{b}-{i}",
                 route=rng.choice(["simple", "simple", "reasoning", "transfer"]) if kind == "MAI" else None,
                 small_output_tokens=rng.randint(0, 300), large_output_tokens=rng.randint(1, 400),
                 cached_tokens=rng.randint(0, 200), latency=rng.uniform(0.2, 8), **_answer(rng, b))
            for b in shape["benchmarks"] for name, kind, v in systems for i in range(shape["n"])]


def rows12(shape, rng):
    T, D = shape["models"][-1], shape["models"][0]
    rows = []
    for b in shape["benchmarks"]:
        for name, kind in ((f"{T}-S", "target"), (f"{T}-S + {D} draft", "speculative"), ("MAI", "MAI")):
            for i in range(shape["n"]):
                row = dict(benchmark=b, system=name, kind=kind, example_id=f"{b}-{i}", output_tokens=rng.randint(1, 16),
                           cached_tokens=0, latency=rng.uniform(0.1, 2), **_answer(rng, b))
                if kind == "speculative":
                    proposed = [rng.randint(1, 20) for _ in range(4)]
                    accepted = [rng.randint(0, p) for p in proposed]
                    row.update(draft_proposed=sum(proposed), draft_accepted=sum(accepted), verify_steps=4,
                               same_as_target=True, stats=dict(step_proposed=proposed, step_accepted=accepted,
                                                               draft_sees_image=True, num_assistant_tokens=20,
                                                               num_assistant_tokens_schedule="constant",
                                                               assistant_confidence_threshold=0.4))
                if kind == "MAI":
                    row["route"] = rng.choice(["simple", "reasoning", "transfer"])
                rows.append(row)
    return rows


def build_all(tmp_path, shape) -> list:
    """Every figure of every analysis module, from rows of the given shape; returns their PNG paths."""
    rng = random.Random(0)
    runs = tmp_path / "runs"
    figures = [figure01.build(_write_run(runs / "07", shape, rows07(shape, rng)), tmp_path)]
    figures += table07.build(runs / "07", tmp_path)["figures"]
    figures += table03.build(_write_run(runs / "03", shape, rows03(shape, rng), question_tokens=[8, 128],
                                        image_size="128x128", warmup=1, runs=3), tmp_path)["figures"]
    figures += table08.build(_write_run(runs / "08", shape, rows08(shape, rng)), tmp_path)["figures"]
    figures += table09.build(_write_run(runs / "09", shape, rows09(shape, rng), models=shape["models"][::2]),
                             tmp_path)["figures"]
    mass = dict(shape, preset="cpu-smollm2", benchmarks=[])
    figures += table09.build(_write_run(runs / "09r", mass, rows09_mass(shape, rng), models=["smollm2-135m"]),
                             tmp_path)["figures"]
    figures += table10.build(_write_run(runs / "10", shape, rows10(shape, rng), models=shape["models"][::2]),
                             tmp_path)["figures"]
    figures += table12.build(_write_run(runs / "12", shape, rows12(shape, rng), models=shape["models"][::2]),
                             tmp_path)["figures"]
    # The Pareto figure reads the runs by experiment and preset, as the committed ones are laid out.
    layout = tmp_path / "layout"
    _write_run(layout / "10_mai" / shape["preset"], shape, rows10(shape, rng), models=shape["models"][::2])
    _write_run(layout / "07_prompt_modes" / shape["preset"], shape, rows07(shape, rng))
    _write_run(layout / "12_speculative_decoding" / shape["preset"], shape, rows12(shape, rng),
               models=shape["models"][::2])
    figures += pareto.build(layout, shape["preset"], tmp_path)["figures"]
    return figures


@pytest.mark.parametrize("shape", [CPU, PAPER], ids=["cpu-shaped", "paper-shaped"])
def test_every_figure_is_readable(tmp_path, monkeypatch, caplog, shape):
    checked = {}
    monkeypatch.setattr(style, "ON_SAVE", [lambda fig, path: checked.update({path.name: style.layout_problems(fig)})])
    import matplotlib

    before = dict(matplotlib.rcParams)
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING):
        warnings.simplefilter("error")
        figures = build_all(tmp_path, shape)
    assert dict(matplotlib.rcParams) == before  # the theme stays inside our figures (synth-chartqa draws too)
    assert not [r.getMessage() for r in caplog.records if r.name.startswith("matplotlib")]
    suffix = "" if shape["preset"] == "paper" else ".cpu"
    assert sorted(checked) == sorted([f"figure1_tokens_vs_accuracy{suffix}.png", f"table7_prompt_modes{suffix}.png",
                                      f"table3_stage_times{suffix}.png", f"table8_reasoning_transfer{suffix}.png",
                                      f"table9_layer_ablation{suffix}.png",
                                      "table9_layer_ablation_attention_mass.cpu-smollm2.png", f"table10_mai{suffix}.png",
                                      f"table12_speculative{suffix}.png", f"pareto{suffix}.png"])
    assert {name: problems for name, problems in checked.items() if problems} == {}
    for png in figures:
        assert png.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
        sidecar = json.loads(png.with_suffix(".json").read_text())
        assert sidecar["figure"] == png.stem and sidecar["provenance"].startswith("Produced by preset")
        from PIL import Image

        assert Image.open(png).info["Description"] == sidecar["provenance"]


def test_the_overlap_check_finds_overlaps_and_covering_legends():
    fig, axes = style.figure(1, 1)
    ax = axes[0][0]
    ax.plot([0, 1], [0, 1], label="data")
    ax.set_xticks([0, 0.01], ["a long tick label", "another long tick label"])
    ax.legend(loc="center")
    problems = style.layout_problems(fig)
    assert any(p.startswith("texts overlap: 'a long tick label'") for p in problems)
    assert "a legend covers the axes ''" in problems


def test_layers_are_integers_and_accuracy_is_percent_in_table9(tmp_path):
    rng = random.Random(1)
    run = _write_run(tmp_path / "09", CPU, rows09(CPU, rng), models=["tiny-small", "tiny-large"])
    md = table09.build(run, tmp_path)["markdown"].splitlines()
    header = [h.strip() for h in md[4].strip("|").split("|")]
    cells = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in md[6:]]
    assert [c["layer"] for c in cells if c["layer"] != "-"] == [str(k) for k in range(4)] * 2
    assert all(0 <= float(c["accuracy"]) <= 100 for c in cells)
    assert any(float(c["accuracy"]) > 1 for c in cells)  # in %, not a fraction


def test_one_colour_per_system_across_figures():
    # The same role keeps its colour whatever the checkpoint, and the role comes from the kind of row.
    assert style.system_role("target") == style.system_role("large-S") == "large-S"
    assert style.system_role("transfer") == style.system_role("Full RT") == "Full RT"
    assert style.system_role("MAI", "reasoning") != style.system_role("MAI", "answer")
    roles = style.model_roles(["8B", "2B", "4B"], {m: dict(parameters=PARAMETERS[m]) for m in ("2B", "4B", "8B")})
    assert roles == {"2B": "small", "4B": "mid", "8B": "large"}
    assert len(set(style.SYSTEM_COLORS.values())) == len(style.SYSTEM_COLORS)


def test_a_run_without_rows_yet_still_draws(tmp_path):
    # A shard that has not written a row (analysis.merge_shards reads each) gives an empty Table 10, not an error.
    run = _write_run(tmp_path / "10", CPU, [], models=["tiny-small", "tiny-large"])
    out = table10.build(run, tmp_path)
    assert out["figures"][0].exists() and out["summary"] == {}


def test_the_attention_mass_table_is_in_percent_like_its_figure(tmp_path):
    rng = random.Random(2)
    rows = rows09_mass(CPU, rng)
    run = _write_run(tmp_path / "09r", dict(CPU, preset="cpu-smollm2", benchmarks=[]), rows, models=["smollm2-135m"])
    md = table09.build(run, tmp_path)["markdown"].splitlines()
    header = [h.strip() for h in md[4].strip("|").split("|")]
    assert header == ["layer", "questions", "fraction_for_delta_%", "reasoning_share_%", "sink_share_%"]
    first = dict(zip(header, (float(c) for c in md[6].strip("|").split("|"))))
    mean = lambda key: sum(key(r) for r in rows) / len(rows)  # noqa: E731
    assert first["fraction_for_delta_%"] == pytest.approx(100 * mean(lambda r: r["fractions"]["0"]), abs=0.05)
    assert first["sink_share_%"] == pytest.approx(100 * mean(lambda r: r["shares"]["0"]["sink"]), abs=0.05)


def test_benchmarks_come_in_the_papers_order_in_tables_and_panels(tmp_path):
    """The paper's tables list ChartQA, POPE, InfoVQA, RealWorldQA, MMBench; the BIG-bench tasks follow as
    the cpu-real preset lists them (strategyqa, object_counting, date_understanding): each benchmark's
    `order` in mai/benchmarks/, not the alphabet, nor the order the rows were written in."""
    from analysis import report

    shape = dict(PAPER, benchmarks=["mmbench", "pope", "realworldqa", "chartqa", "infovqa"])
    run = _write_run(tmp_path / "10", shape, rows10(shape, random.Random(3)), models=shape["models"][::2])
    out = table10.build(run, tmp_path)
    benches = [line.split("|")[1].strip() for line in out["markdown"].splitlines()[6:]]
    assert list(dict.fromkeys(benches)) == ["chartqa", "pope", "infovqa", "realworldqa", "mmbench"]
    real = ["date_understanding", "object_counting", "strategyqa", "an-lmms-eval-task"]
    assert sorted(real, key=report.benchmark_rank) == ["strategyqa", "object_counting", "date_understanding",
                                                       "an-lmms-eval-task"]
