"""Tests for mai/data.py and mai/benchmarks/: hub loaders on local parquet in the hub schemas, synthetic sets."""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest
from PIL import Image

from mai import MaiError, hub
from mai.benchmarks import BENCHMARKS, dataset_sources, get_benchmark, load_benchmark, synth_chartqa, synth_pope
from mai.data import Example, subsample_indices

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------------------
# fixtures: parquet files in the hub schemas
# --------------------------------------------------------------------------------------


def _png(color=(200, 40, 40), size=(32, 24)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()


def _img(k: int) -> dict:
    return {"bytes": _png((10 * k % 256, 80, 160), (20 + k, 10 + k)), "path": None}


BAD_IMAGE = {"bytes": b"this is not an image", "path": None}


def _write(tmp_path: Path, name: str, rows: dict, features: dict) -> str:
    ds = datasets.Dataset.from_dict(rows, features=datasets.Features(features))
    path = tmp_path / f"{name}.parquet"
    ds.to_parquet(str(path))
    return str(path)


@pytest.fixture(autouse=True)
def parquet_cache(tmp_path, monkeypatch):
    """Keep datasets' arrow cache of the test parquet files inside tmp_path."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))


S = datasets.Value("string")


@pytest.fixture
def parquet_chartqa(tmp_path):
    n = 12
    rows = {
        "type": ["human_test" if i % 2 == 0 else "augmented_test" for i in range(n)],
        "question": [f"What is the value of bar {i}? " for i in range(n)],  # trailing space kept
        "answer": [str(10 + i) for i in range(n)],
        "image": [BAD_IMAGE if i == 3 else _img(i) for i in range(n)],
    }
    feats = {"type": S, "question": S, "answer": S, "image": datasets.Image()}
    return _write(tmp_path, "chartqa", rows, feats)


@pytest.fixture
def parquet_pope(tmp_path):
    cats = ["adversarial", "popular", "random"]
    rows = {"id": [], "question_id": [], "question": [], "answer": [], "image_source": [], "image": [], "category": []}
    for i in range(9):
        rows["id"].append(str(i))
        rows["question_id"].append(str(100 + i))
        rows["question"].append(f"  Is there a dog{i} in the image?\n")
        rows["answer"].append("yes" if i % 2 == 0 else "no")
        rows["image_source"].append(f"COCO_val2014_{i:012d}")
        rows["image"].append(_img(i))
        rows["category"].append(cats[i // 3])
    feats = {k: S for k in rows if k != "image"} | {"image": datasets.Image()}
    return _write(tmp_path, "pope", rows, feats)


@pytest.fixture
def parquet_infovqa(tmp_path):
    rows = {
        "questionId": ["98765", "98766", "98767"],
        "question": ["Which year is shown?", "What percent own a car?", "How many icons?"],
        "answers": [["2019"], ["45%", "45 %"], ["three", "3"]],
        "answer_type": [["single span"], ["single span"], ["non-extractive"]],
        "image": [_img(1), _img(2), _img(3)],
        "image_url": ["https://example/a.jpeg", "https://example/b.jpeg", "https://example/c.jpeg"],
        "data_split": ["val", "val", "val"],
    }
    feats = {
        "questionId": S,
        "question": S,
        "answers": datasets.Sequence(S),
        "answer_type": datasets.Sequence(S),
        "image": datasets.Image(),
        "image_url": S,
        "data_split": S,
    }
    return _write(tmp_path, "infovqa", rows, feats)


RWQA_Q = (
    "  How many cars are parked?\nA. 2\nB. 3\nC. 4\n"
    "Please answer directly with only the letter of the correct option and nothing else. "
)


@pytest.fixture
def parquet_realworldqa(tmp_path):
    rows = {"image": [_img(1), _img(2)], "question": [RWQA_Q, "Is it raining?\nPlease answer directly with a single word or number."], "answer": ["B", "No"]}
    return _write(tmp_path, "realworldqa", rows, {"image": datasets.Image(), "question": S, "answer": S})


MMB_ROWS = {
    "index": [241, 242, 1000241],
    "question": ["Which animal is shown?", "What is the weather?", "Which animal is shown?"],
    "hint": ["The photo was taken at a farm.", "nan", None],
    "answer": ["B", "A", "C"],
    "A": ["cat", "sunny", "horse"],
    "B": ["cow", "rainy", "dog"],
    "C": ["dog", "snowy", "cow"],
    "D": ["nan", "cloudy", None],
    "category": ["object_localization", "image_scene", "object_localization"],
    "image": [_img(1), _img(2), _img(1)],
    "source": ["MMBench", "MMBench", "MMBench"],
    "L2-category": ["fine-grained perception", "coarse perception", "fine-grained perception"],
    "comment": ["nan", "nan", "nan"],
    "split": ["dev", "dev", "dev"],
}


@pytest.fixture
def parquet_mmbench(tmp_path):
    feats = {k: S for k in MMB_ROWS} | {"index": datasets.Value("int64"), "image": datasets.Image()}
    return _write(tmp_path, "mmbench", MMB_ROWS, feats)


# --------------------------------------------------------------------------------------
# registry, subsampling
# --------------------------------------------------------------------------------------


def test_registry_matches_lmms_eval_settings():
    assert list(BENCHMARKS) == ["chartqa", "pope", "infovqa", "realworldqa", "mmbench", "synth-chartqa", "synth-pope",
                                "strategyqa", "object_counting", "date_understanding", "bbh_sports_understanding",
                                "bbh_object_counting", "bbh_date_understanding", "gsm8k"]
    short = "\nAnswer the question using a single word or phrase."
    expect = {
        # chartqa.yaml at 75571cfe: its own post-prompt, not the other tasks' one
        "chartqa": ("relaxed", "\nAnswer the question with a single word.", 16, "lmms-lab/ChartQA", None, "test"),
        "pope": ("pope", short, 128, "lmms-lab/POPE", None, "test"),
        "infovqa": ("anls", short, 32, "lmms-lab/DocVQA", "InfographicVQA", "validation"),
        "realworldqa": ("exact", "", 16, "lmms-lab/RealWorldQA", None, "test"),
        "mmbench": (
            "option",
            "\n\nAnswer with the option's letter from the given choices directly.",
            1024,
            "lmms-lab/MMBench",
            "en",
            "dev",
        ),
    }
    for name, (metric, post, mnt, path, config, split) in expect.items():
        b = get_benchmark(name)
        assert (b.metric, b.post_prompt, b.max_new_tokens, b.hub_path, b.hub_config, b.split) == (
            metric, post, mnt, path, config, split)
        assert not b.synthetic
    for name, like in (("synth-chartqa", "chartqa"), ("synth-pope", "pope")):
        b, ref = get_benchmark(name), get_benchmark(like)
        assert b.synthetic and b.hub_path is None
        assert (b.metric, b.post_prompt, b.max_new_tokens) == (ref.metric, ref.post_prompt, ref.max_new_tokens)


def test_unknown_benchmark_error_is_one_line():
    with pytest.raises(MaiError) as info:
        get_benchmark("nope")
    msg = str(info.value)
    assert msg == "unknown benchmark 'nope'; choose from: " + ", ".join(BENCHMARKS)
    assert "\n" not in msg
    with pytest.raises(MaiError, match="unknown benchmark 'nope'"):
        load_benchmark("nope")


def test_subsample_indices():
    assert subsample_indices(10, None, 0) == list(range(10))
    assert subsample_indices(10, 10, 3) == list(range(10))
    assert subsample_indices(10, 50, 3) == list(range(10))
    assert subsample_indices(100, 7, 5) == sorted(random.Random(5).sample(range(100), 7))
    assert subsample_indices(100, 7, 5) == subsample_indices(100, 7, 5)
    assert subsample_indices(100, 7, 5) != subsample_indices(100, 7, 6)
    assert subsample_indices(100, 0, 1) == []


# --------------------------------------------------------------------------------------
# hub loaders on local parquet
# --------------------------------------------------------------------------------------


def test_chartqa_rows(parquet_chartqa):
    ex = load_benchmark("chartqa", data_files=parquet_chartqa)
    assert [e.id for e in ex] == [f"chartqa-{i}" for i in range(12)]
    e = ex[5]
    assert e.benchmark == "chartqa"
    assert e.question == "What is the value of bar 5? "  # verbatim, as chartqa_doc_to_text
    assert e.question + get_benchmark("chartqa").post_prompt == (
        "What is the value of bar 5? \nAnswer the question with a single word.")
    assert e.references == ["15"]
    assert e.meta == {"type": "augmented_test"}
    assert ex[4].meta == {"type": "human_test"}
    # kept undecoded until load_images
    assert isinstance(e.images[0], dict) and isinstance(e.images[0]["bytes"], bytes)
    (img,) = e.load_images()
    assert img.mode == "RGB" and img.size == (25, 15)
    for x in ex:
        json.dumps(x.meta)


def test_limit_and_seed_subsample_deterministically(parquet_chartqa):
    a = load_benchmark("chartqa", limit=4, seed=0, data_files=parquet_chartqa)
    b = load_benchmark("chartqa", limit=4, seed=0, data_files=parquet_chartqa)
    c = load_benchmark("chartqa", limit=4, seed=1, data_files=parquet_chartqa)
    ids = [e.id for e in a]
    assert ids == [e.id for e in b]
    assert ids == [f"chartqa-{i}" for i in subsample_indices(12, 4, 0)]
    assert [e.id for e in c] == [f"chartqa-{i}" for i in subsample_indices(12, 4, 1)]
    assert ids != [e.id for e in c]
    # the subsample keeps each row's own content
    for e in a + c:
        i = int(e.id.split("-")[1])
        assert e.references == [str(10 + i)]
        assert e.question == f"What is the value of bar {i}? "


def test_corrupt_image_fails_only_its_example(parquet_chartqa):
    ex = load_benchmark("chartqa", data_files=parquet_chartqa)  # the load itself succeeds
    bad = ex[3]
    with pytest.raises(ValueError, match=r"^unreadable image in chartqa-3: ") as info:
        bad.load_images()
    assert "\n" not in str(info.value)
    for e in ex[:3] + ex[4:]:
        assert e.load_images()[0].mode == "RGB"


def test_pope_rows(parquet_pope):
    ex = load_benchmark("pope", data_files=parquet_pope)
    assert [e.id for e in ex] == [f"pope-{100 + i}" for i in range(9)]
    e = ex[4]
    assert e.question == "Is there a dog4 in the image?"  # stripped, as pope_doc_to_text
    assert e.references == ["yes"] and ex[5].references == ["no"]
    assert e.meta["category"] == "popular"
    assert ex[0].meta["category"] == "adversarial" and ex[8].meta["category"] == "random"
    assert e.meta["question_id"] == "104"
    assert e.question + get_benchmark("pope").post_prompt == (
        "Is there a dog4 in the image?\nAnswer the question using a single word or phrase.")


def test_pope_ids_stay_unique_when_question_ids_repeat(tmp_path):
    cats = ["adversarial", "popular", "random"]
    rows = {"id": [], "question_id": [], "question": [], "answer": [], "image_source": [], "image": [], "category": []}
    for i in range(6):
        rows["id"].append(str(i))
        rows["question_id"].append(str(1 + i % 2))  # 1, 2 in every category
        rows["question"].append("Is there a cat in the image?")
        rows["answer"].append("yes")
        rows["image_source"].append("x")
        rows["image"].append(_img(i))
        rows["category"].append(cats[i // 2])
    path = _write(tmp_path, "pope_dup", rows, {k: S for k in rows if k != "image"} | {"image": datasets.Image()})
    ex = load_benchmark("pope", data_files=path)
    ids = [e.id for e in ex]
    assert len(set(ids)) == 6
    assert ids[0] == "pope-adversarial-1" and ids[5] == "pope-random-2"


def test_infovqa_rows(parquet_infovqa):
    ex = load_benchmark("infovqa", data_files=parquet_infovqa)
    assert [e.id for e in ex] == ["infovqa-98765", "infovqa-98766", "infovqa-98767"]
    assert ex[1].references == ["45%", "45 %"]
    assert ex[2].references == ["three", "3"]
    assert ex[1].question == "What percent own a car?"
    assert ex[2].meta["answer_type"] == ["non-extractive"]
    json.dumps([e.meta for e in ex])


def test_realworldqa_rows(parquet_realworldqa):
    ex = load_benchmark("realworldqa", data_files=parquet_realworldqa)
    assert [e.id for e in ex] == ["realworldqa-0", "realworldqa-1"]
    assert ex[0].question == RWQA_Q.strip()
    assert ex[0].question + get_benchmark("realworldqa").post_prompt == RWQA_Q.strip()
    assert ex[0].references == ["B"] and ex[1].references == ["No"]


def test_mmbench_question_text(parquet_mmbench):
    ex = load_benchmark("mmbench", data_files=parquet_mmbench)
    assert [e.id for e in ex] == ["mmbench-241", "mmbench-242", "mmbench-1000241"]
    # hint present, option D is the string "nan" -> dropped
    assert ex[0].question == (
        "The photo was taken at a farm. Which animal is shown? There are several options:\n"
        "A. cat\nB. cow\nC. dog"
    )
    assert ex[0].meta["options"] == ["A", "B", "C"]
    assert ex[0].references == ["B"]
    assert ex[0].meta["category"] == "object_localization"
    assert ex[0].meta["index"] == 241
    # hint "nan" -> no hint; all four options
    assert ex[1].question == (
        "What is the weather? There are several options:\nA. sunny\nB. rainy\nC. snowy\nD. cloudy"
    )
    assert ex[1].meta["options"] == ["A", "B", "C", "D"]
    # hint None, option D None
    assert ex[2].question == "Which animal is shown? There are several options:\nA. horse\nB. dog\nC. cow"
    assert ex[2].meta["options"] == ["A", "B", "C"]
    # The option texts the static scorer matches against (build_choices): A-D, a None left out, but the
    # string "nan" kept, as pd.isna("nan") is False there.
    assert ex[0].meta["choices"] == {"A": "cat", "B": "cow", "C": "dog", "D": "nan"}
    assert ex[2].meta["choices"] == {"A": "horse", "B": "dog", "C": "cow"}
    # the full Simple prompt equals mmbench_doc_to_text's f"{query}\n{post_prompt}"
    assert ex[1].question + get_benchmark("mmbench").post_prompt == (
        "What is the weather? There are several options:\nA. sunny\nB. rainy\nC. snowy\nD. cloudy"
        "\n\nAnswer with the option's letter from the given choices directly."
    )
    json.dumps([e.meta for e in ex])


def test_mmbench_limit_counts_questions_with_their_rotations(parquet_mmbench):
    """--limit on MMBench picks questions, each with every rotated copy, so CircularEval stays whole."""
    seen = set()
    for seed in range(6):
        ex = load_benchmark("mmbench", limit=1, seed=seed, data_files=parquet_mmbench)
        ids = [e.id for e in ex]
        assert ids in (["mmbench-241", "mmbench-1000241"], ["mmbench-242"])
        seen.add(tuple(ids))
    assert len(seen) == 2


def test_parquet_without_hf_metadata(tmp_path):
    """A struct {bytes, path} image column written by plain pandas/pyarrow also loads undecoded."""
    import pandas as pd

    path = tmp_path / "plain.parquet"
    pd.DataFrame({"image": [_img(1), BAD_IMAGE], "question": ["q1", "q2"], "answer": ["a", "b"]}).to_parquet(path)
    ex = load_benchmark("realworldqa", data_files=str(path))
    assert isinstance(ex[0].images[0], dict)
    assert ex[0].load_images()[0].size == (21, 11)
    with pytest.raises(ValueError, match="unreadable image in realworldqa-1"):
        ex[1].load_images()


def test_missing_columns_named(tmp_path):
    path = _write(tmp_path, "wrong", {"image": [_img(1)], "question": ["q"]}, {"image": datasets.Image(), "question": S})
    with pytest.raises(MaiError, match="chartqa: data lacks column\\(s\\) answer, type"):
        load_benchmark("chartqa", data_files=path)


def test_example_load_images_accepts_pil_and_reports_missing():
    e = Example("x-1", "x", "q", ["a"], [Image.new("L", (5, 4))], {})
    assert e.load_images()[0].mode == "RGB"
    with pytest.raises(ValueError, match="unreadable image in x-2: "):
        Example("x-2", "x", "q", ["a"], [], {}).load_images()
    with pytest.raises(ValueError, match="unreadable image in x-3: "):
        Example("x-3", "x", "q", ["a"], [{"bytes": None, "path": None}], {}).load_images()


# --------------------------------------------------------------------------------------
# no hub
# --------------------------------------------------------------------------------------

HUB_MSG = re.compile(
    r"^cannot reach the Hugging Face hub for lmms-lab/ChartQA: .+\. Download it where you have access "
    r"and pass its parquet files with --data-files, or set HF_DATASETS_OFFLINE=1 with a local cache\.$"
)


def test_unreachable_hub_fails_fast_before_load_dataset(monkeypatch):
    monkeypatch.setattr(hub, "offline_mode", lambda: False)
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(hub, "probe", lambda timeout: "huggingface.co:443 unreachable (gaierror: no DNS)")

    def boom(*a, **k):
        raise AssertionError("load_dataset must not be called when the probe fails")

    monkeypatch.setattr(datasets, "load_dataset", boom)
    with pytest.raises(MaiError) as info:
        load_benchmark("chartqa")
    msg = str(info.value)
    assert HUB_MSG.match(msg) and "\n" not in msg
    assert "gaierror: no DNS" in msg


def test_probe_against_unresolvable_endpoint_is_fast(monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")
    t = time.monotonic()
    reason = hub.probe(2.0)
    assert time.monotonic() - t < 5
    assert reason and "hub.invalid:443" in reason and "\n" not in reason


def test_connection_errors_from_load_dataset_are_wrapped(monkeypatch):
    monkeypatch.setenv("MAI_HUB_PROBE_TIMEOUT", "0")  # no probe: exercise the except clause

    def offline(*a, **k):
        raise ConnectionError("Couldn't reach 'lmms-lab/ChartQA' on the Hub (LocalEntryNotFoundError)\nmore")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(MaiError) as info:
        load_benchmark("chartqa", limit=3)
    assert HUB_MSG.match(str(info.value)) and "LocalEntryNotFoundError" in str(info.value)


def test_hub_ids_older_first_then_moved_and_recorded(monkeypatch, parquet_chartqa):
    """lmms-lab/* first; when the hub says it is not there, lmms-lab-encoder/* (moved 2026-07-30)."""
    from datasets.exceptions import DatasetNotFoundError

    monkeypatch.setenv("MAI_HUB_PROBE_TIMEOUT", "0")
    monkeypatch.setattr(hub, "offline_mode", lambda: False)
    local = datasets.load_dataset("parquet", data_files=parquet_chartqa, split="train")
    tried = []

    def fake(path, name=None, split=None, **kw):
        tried.append(path)
        if path.startswith("lmms-lab/"):
            raise DatasetNotFoundError(f"Dataset '{path}' doesn't exist on the Hub")
        return local

    monkeypatch.setattr(datasets, "load_dataset", fake)
    assert get_benchmark("infovqa").hub_ids() == ("lmms-lab/DocVQA", "lmms-lab-encoder/DocVQA")
    ex = load_benchmark("chartqa", limit=2)
    assert tried == ["lmms-lab/ChartQA", "lmms-lab-encoder/ChartQA"] and len(ex) == 2
    assert dataset_sources()["chartqa"] == "lmms-lab-encoder/ChartQA"
    tried.clear()
    monkeypatch.setattr(datasets, "load_dataset", lambda path, *a, **k: tried.append(path) or local)
    load_benchmark("chartqa", limit=2)
    assert tried == ["lmms-lab/ChartQA"] and dataset_sources()["chartqa"] == "lmms-lab/ChartQA"

    def nowhere(path, *a, **k):
        raise DatasetNotFoundError(f"Dataset '{path}' doesn't exist on the Hub")

    monkeypatch.setattr(datasets, "load_dataset", nowhere)
    with pytest.raises(MaiError, match=r"^chartqa: none of lmms-lab/ChartQA, lmms-lab-encoder/ChartQA loads") as info:
        load_benchmark("chartqa", limit=2)
    assert "\n" not in str(info.value)


def test_no_hub_end_to_end_is_one_line_and_fast(tmp_path):
    """Real path in a fresh process: endpoint that cannot resolve, empty HF cache."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("HF_")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_ENDPOINT="https://hub.invalid", PYTHONPATH=str(REPO))
    code = (
        "import time, mai.benchmarks as d\n"
        "t = time.monotonic()\n"
        "try:\n"
        "    d.load_benchmark('chartqa', limit=2)\n"
        "except Exception as e:\n"
        "    print('ERR', time.monotonic() - t); print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    lines = out.stdout.strip().splitlines()
    assert lines and lines[0].startswith("ERR"), out.stdout + out.stderr
    assert float(lines[0].split()[1]) < 10
    assert len(lines) == 2 and HUB_MSG.match(lines[1]), lines


# --------------------------------------------------------------------------------------
# synth-chartqa
# --------------------------------------------------------------------------------------


def _bytes(e: Example) -> bytes:
    return e.images[0].tobytes()


def test_synth_chartqa_deterministic_and_subsampled():
    a = load_benchmark("synth-chartqa", limit=5, seed=3)
    b = load_benchmark("synth-chartqa", limit=5, seed=3)
    assert len(a) == 5
    assert [(e.id, e.question, e.references, e.meta) for e in a] == [(e.id, e.question, e.references, e.meta) for e in b]
    assert [_bytes(e) for e in a] == [_bytes(e) for e in b]
    assert [e.id for e in a] == [f"synth-chartqa-s3-{i:03d}" for i in subsample_indices(synth_chartqa.SIZE, 5, 3)]
    for e in a:
        assert e.images[0].size == (400, 300)
        assert e.meta["type"] == "synthetic" and e.meta["chart"] in ("bar", "line", "pie")
        assert e.load_images()[0].mode == "RGB"
        json.dumps(e.meta)
    # the subsample picks from the same full set: content of an index does not depend on limit
    for e in a:
        i = int(e.id.rsplit("-", 1)[1])
        spec = synth_chartqa._chart_spec(3, i)
        assert (e.question, e.references) == (spec["question"], [spec["answer"]])
    other = [synth_chartqa._chart_spec(4, i)["question"] for i in range(synth_chartqa.SIZE)]
    assert other != [synth_chartqa._chart_spec(3, i)["question"] for i in range(synth_chartqa.SIZE)]


def test_synth_chartqa_answers_correct_by_construction():
    kinds = set()
    for seed in (0, 1):
        for i in range(synth_chartqa.SIZE):
            s = synth_chartqa._chart_spec(seed, i)
            d = dict(zip(s["labels"], s["values"]))
            kinds.add(s["kind"])
            assert len(set(s["values"])) == len(s["values"])
            if s["kind"] == "pie":
                assert sum(s["values"]) == 100
            q, ans = s["question"], s["answer"]
            if m := re.fullmatch(r"What is the value of (\w+)\?", q):
                assert ans == str(d[m[1]])
            elif q == "Which category has the highest value?":
                assert d[ans] == max(d.values())
            elif q == "Which category has the lowest value?":
                assert d[ans] == min(d.values())
            elif m := re.fullmatch(r"What is the sum of (\w+) and (\w+)\?", q):
                assert ans == str(d[m[1]] + d[m[2]])
            elif m := re.fullmatch(r"What is the difference between (\w+) and (\w+)\?", q):
                assert ans == str(d[m[1]] - d[m[2]]) and int(ans) > 0
            else:
                raise AssertionError(q)
    assert kinds == {"bar", "line", "pie"}


def test_synth_bar_heights_match_values():
    """The bars drawn have the heights of the values behind the answers."""
    import numpy as np

    color = np.array(Image.new("RGB", (1, 1), synth_chartqa.BAR_COLOR).getpixel((0, 0)))
    checked = 0
    for i in range(0, 12, 3):  # i % 3 == 0 -> bar charts
        spec = synth_chartqa._chart_spec(0, i)
        assert spec["kind"] == "bar"
        px = np.asarray(synth_chartqa.render_chart(spec))
        mask = (px == color).all(axis=2)
        cols = np.flatnonzero(mask.any(axis=0))
        runs = np.split(cols, np.flatnonzero(np.diff(cols) > 1) + 1)
        heights = [mask[:, r[len(r) // 2]].sum() for r in runs]
        assert len(heights) == len(spec["values"])
        vmax, hmax = max(spec["values"]), max(heights)
        for v, h in zip(spec["values"], heights):
            assert abs(h / hmax - v / vmax) < 0.03, (spec["values"], heights)
        checked += 1
    assert checked == 4


# --------------------------------------------------------------------------------------
# synth-pope
# --------------------------------------------------------------------------------------


def _pope_stats(ex):
    scenes = {}
    for e in ex:
        scenes.setdefault(e.meta["scene"], e.meta["objects"])
    vocab = synth_pope._vocabulary()
    freq = {o: sum(o in objs for objs in scenes.values()) for o in vocab}
    cooc = {p: {o: sum(p in objs and o in objs for objs in scenes.values()) for o in vocab} for p in vocab}
    return scenes, freq, cooc


def test_synth_pope_structure_and_negatives():
    ex = load_benchmark("synth-pope", seed=0)
    assert len(ex) == synth_pope.SIZE
    assert sum(e.references == ["yes"] for e in ex) == len(ex) // 2
    assert {e.meta["category"] for e in ex} == {"random", "popular", "adversarial"}
    scenes, freq, cooc = _pope_stats(ex)
    vocab = synth_pope._vocabulary()
    for e in ex:
        obj, present = e.meta["object"], e.meta["objects"]
        assert re.fullmatch(rf"Is there an? {obj} in the image\?", e.question)
        assert 2 <= len(present) <= 4 and len(set(present)) == len(present)
        if e.references == ["yes"]:
            assert obj in present
            continue
        assert e.references == ["no"] and obj not in present
        absent = [o for o in vocab if o not in present]
        if e.meta["category"] == "popular":
            assert freq[obj] == max(freq[o] for o in absent)
        elif e.meta["category"] == "adversarial":
            score = lambda o: sum(cooc[p][o] for p in present)  # noqa: E731
            assert score(obj) == max(score(o) for o in absent)
    # popular negatives are among the globally most frequent objects
    popular = {e.meta["object"] for e in ex if e.meta["category"] == "popular" and e.references == ["no"]}
    top = sorted(freq.values(), reverse=True)
    assert all(freq[o] >= top[len(popular) + 3] for o in popular)
    # adversarial negatives do co-occur with the scene's objects somewhere in the set
    adv = [e for e in ex if e.meta["category"] == "adversarial" and e.references == ["no"]]
    assert sum(sum(cooc[p][e.meta["object"]] for p in e.meta["objects"]) > 0 for e in adv) >= len(adv) // 2


def test_synth_pope_images_show_exactly_the_listed_objects():
    ex = load_benchmark("synth-pope", seed=2)
    seen = set()
    for e in ex:
        if e.meta["scene"] in seen:
            continue
        seen.add(e.meta["scene"])
        colours = {c for _, c in e.load_images()[0].getcolors(maxcolors=4096)} - {(255, 255, 255)}
        expect = {synth_pope.SHAPE_COLORS[o.split()[0]] for o in e.meta["objects"]}
        assert colours == expect
        assert e.images[0].size == (400, 300)


def test_synth_pope_deterministic_and_seeded():
    a = load_benchmark("synth-pope", seed=1)
    b = load_benchmark("synth-pope", seed=1)
    c = load_benchmark("synth-pope", seed=2)
    key = lambda ex: [(e.id, e.question, e.references, e.meta) for e in ex]  # noqa: E731
    assert key(a) == key(b)
    assert [_bytes(e) for e in a] == [_bytes(e) for e in b]
    assert [e.question for e in a] != [e.question for e in c]
    sub = load_benchmark("synth-pope", limit=10, seed=1)
    full = {e.id: e for e in a}
    assert [e.id for e in sub] == [f"synth-pope-s1-{i:03d}" for i in subsample_indices(len(a), 10, 1)]
    for e in sub:
        assert (e.question, e.references, e.meta) == (full[e.id].question, full[e.id].references, full[e.id].meta)
        assert _bytes(e) == _bytes(full[e.id])


def test_synthetic_rejects_data_files():
    with pytest.raises(MaiError, match="data_files does not apply"):
        load_benchmark("synth-pope", data_files="x.parquet")
