"""Benchmarks: registry, hub loaders (lmms-eval prompt conventions) and offline synthetic sets.

Prompts, generation lengths, splits and dataset ids follow lmms-eval (EvolvingLMMs-Lab/lmms-eval) at
commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3 (``mai.metrics.LMMS_EVAL_COMMIT``), read from its
``lmms_eval/tasks/<task>/*.yaml`` and ``utils.py``.

Every benchmark becomes a list of :class:`Example`.  ``Example.question`` is the text
lmms-eval's ``doc_to_text`` builds *before* its post-prompt; ``Benchmark.post_prompt`` is
the string lmms-eval appends after it, so ``question + post_prompt`` is exactly the
lmms-eval prompt of the "Simple" setting.

Hub benchmarks are read with ``datasets.load_dataset``, from the ``lmms-lab/*`` id first and then from
``lmms-lab-encoder/*`` (where the hub moved them on 2026-07-30, the ids lmms-eval's yamls name at that
commit); ``dataset_sources()`` says which one each benchmark came from, and runs record it. the image column is cast to
``datasets.Image(decode=False)`` so every image stays an undecoded ``{"bytes", "path"}``
dict until :meth:`Example.load_images` (one unreadable image fails one example, not the
load).  The subsample is taken before anything is decoded.

Synthetic benchmarks (``synth-chartqa``, ``synth-pope``) need no network: they are drawn
here, deterministically in ``seed``, with answers that are correct by construction.
"""

from __future__ import annotations

import io
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from PIL import Image, ImageDraw

from mai import MaiError, hub
from mai.metrics import MMBENCH_CIRCULAR_MOD, mmbench_choices

__all__ = [
    "Example",
    "dataset_sources",
    "hub_ids",
    "Benchmark",
    "BENCHMARKS",
    "SYNTH_SIZE",
    "get_benchmark",
    "load_benchmark",
    "missing_columns",
    "REQUIRED_COLUMNS",
    "subsample_indices",
]

# Size of each synthetic benchmark before ``limit`` (the synthetic sets are small by design:
# they exist to exercise the pipeline offline, not to measure a model).
SYNTH_SIZE = 60


# --------------------------------------------------------------------------------------
# Data classes
# --------------------------------------------------------------------------------------


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


@dataclass
class Example:
    id: str
    benchmark: str
    question: str
    references: list[str]
    images: list
    meta: dict = field(default_factory=dict)

    def load_images(self) -> list[Image.Image]:
        """Decode every image to RGB; ``ValueError("unreadable image in <id>: ...")`` on failure."""
        if not self.images:
            raise ValueError(f"unreadable image in {self.id}: the example has no image")
        out = []
        for k, item in enumerate(self.images):
            try:
                out.append(_decode_image(item))
            except Exception as exc:  # PIL raises many types (UnidentifiedImageError, OSError, SyntaxError...)
                where = f" (image {k})" if len(self.images) > 1 else ""
                reason = _one_line(f"{type(exc).__name__}: {exc}")
                raise ValueError(f"unreadable image in {self.id}{where}: {reason}") from exc
        return out


def _decode_image(item: Any) -> Image.Image:
    if isinstance(item, Image.Image):
        item.load()
        return item.convert("RGB")
    if isinstance(item, dict):
        data, path = item.get("bytes"), item.get("path")
        if data is not None:
            img = Image.open(io.BytesIO(data))
        elif path:
            img = Image.open(path)
        else:
            raise ValueError("image entry has neither bytes nor path")
    elif isinstance(item, (bytes, bytearray)):
        img = Image.open(io.BytesIO(item))
    elif isinstance(item, (str, os.PathLike)):
        img = Image.open(item)
    elif item is None:
        raise ValueError("image is missing (None)")
    else:
        raise TypeError(f"unsupported image entry of type {type(item).__name__}")
    img.load()  # force a full decode here, so truncated files fail now
    return img.convert("RGB")


@dataclass(frozen=True)
class Benchmark:
    name: str
    metric: str  # "relaxed" | "pope" | "anls" | "exact" | "option"
    post_prompt: str
    max_new_tokens: int
    hub_path: str | None
    hub_config: str | None
    split: str
    synthetic: bool


# lmms-eval prompt strings (lmms_eval/tasks/<task>/*.yaml "default" kwargs at 75571cfe).
_SHORT = "\nAnswer the question using a single word or phrase."
# chartqa/chartqa.yaml's own post-prompt differs from the other tasks'.
_CHARTQA_POST = "\nAnswer the question with a single word."
# mmbench en_utils.mmbench_doc_to_text appends "\n" + post_prompt, and the yaml's post_prompt
# itself starts with "\n": the prompt lmms-eval builds has a blank line before the instruction.
_MMBENCH_POST = "\n\nAnswer with the option's letter from the given choices directly."

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in [
        # chartqa.yaml: max_new_tokens 16, default post_prompt _CHARTQA_POST, split test.
        Benchmark("chartqa", "relaxed", _CHARTQA_POST, 16, "lmms-lab/ChartQA", None, "test", False),
        # pope.yaml: max_new_tokens 128, default post_prompt _SHORT, split test.
        Benchmark("pope", "pope", _SHORT, 128, "lmms-lab/POPE", None, "test", False),
        # infovqa/_default_template_infovqa_yaml + infovqa_val.yaml: max_new_tokens 32, split validation.
        Benchmark("infovqa", "anls", _SHORT, 32, "lmms-lab/DocVQA", "InfographicVQA", "validation", False),
        # realworldqa.yaml: max_new_tokens 16, default post_prompt "" (the question carries its instruction).
        Benchmark("realworldqa", "exact", "", 16, "lmms-lab/RealWorldQA", None, "test", False),
        # _default_template_mmbench_en_yaml: max_new_tokens 1024; mmbench_en_dev(_static).yaml: split dev,
        # config en.  Scored as mmbench_en_dev_static (no GPT judge), see mai.metrics.
        Benchmark("mmbench", "option", _MMBENCH_POST, 1024, "lmms-lab/MMBench", "en", "dev", False),
        Benchmark("synth-chartqa", "relaxed", _CHARTQA_POST, 16, None, None, "synthetic", True),
        Benchmark("synth-pope", "pope", _SHORT, 128, None, None, "synthetic", True),
    ]
}


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise MaiError(f"unknown benchmark {name!r}; choose from: {', '.join(BENCHMARKS)}") from None


# The hub id each loaded benchmark came from (or the local files), for the run's config.json.
_SOURCES: dict[str, str] = {}


def hub_ids(bench: Benchmark) -> tuple[str, ...]:
    """The ids tried, in order: the older lmms-lab/* one, then lmms-lab-encoder/* (moved 2026-07-30)."""
    if bench.hub_path is None:
        return ()
    moved = bench.hub_path.replace("lmms-lab/", "lmms-lab-encoder/", 1)
    return (bench.hub_path,) if moved == bench.hub_path else (bench.hub_path, moved)


def dataset_sources() -> dict[str, str]:
    """Where each benchmark loaded in this process came from: a hub id (with its config), local
    files, or "synthetic"."""
    return dict(_SOURCES)


def subsample_indices(n: int, limit: int | None, seed: int) -> list[int]:
    """Indices of a deterministic subsample: sorted(Random(seed).sample(range(n), limit)) when limit < n."""
    if limit is None or limit >= n:
        return list(range(n))
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return sorted(random.Random(seed).sample(range(n), limit))


def load_benchmark(
    name: str,
    limit: int | None = None,
    seed: int = 0,
    data_files: str | list[str] | None = None,
) -> list[Example]:
    """Load ``limit`` examples (all when None) of benchmark ``name``.

    Hub benchmarks come from the Hugging Face hub, or from local parquet files in the hub
    schema when ``data_files`` is given.  Synthetic ones are generated in memory from ``seed``.
    """
    bench = get_benchmark(name)
    if bench.synthetic:
        if data_files is not None:
            raise MaiError(f"{name} is generated locally; data_files does not apply to it")
        _SOURCES[name] = "synthetic"
        return _SYNTH_LOADERS[name](limit=limit, seed=seed)
    ds, source = _open_hub_dataset(bench, data_files)
    examples = _examples_from_dataset(bench, ds, limit, seed)
    _SOURCES[name] = source
    return examples


# --------------------------------------------------------------------------------------
# Hub access
# --------------------------------------------------------------------------------------

def _hub_error(bench: Benchmark, reason: Any) -> MaiError:
    return MaiError(
        f"cannot reach the Hugging Face hub for {bench.hub_path}: {_one_line(reason)}. "
        "Download it where you have access and pass its parquet files with --data-files, "
        "or set HF_DATASETS_OFFLINE=1 with a local cache."
    )


def _open_hub_dataset(bench: Benchmark, data_files: str | list[str] | None):
    """The dataset and where it came from: local parquet files, or the first of ``hub_ids`` that loads."""
    import datasets

    if data_files is not None:
        files = [data_files] if isinstance(data_files, str) else list(data_files)
        ds = datasets.load_dataset("parquet", data_files=data_files, split="train")
        return ds, f"parquet files ({', '.join(map(str, files))}) in the {bench.hub_path} schema"

    offline = hub.offline_mode()
    reason = hub.unreachable()
    if reason is not None:
        raise _hub_error(bench, reason)
    config = f" ({bench.hub_config})" if bench.hub_config else ""
    missing = []
    for hub_id in hub_ids(bench):
        try:
            return datasets.load_dataset(hub_id, bench.hub_config, split=bench.split), hub_id + config
        except hub.connection_errors() as exc:
            reason = f"{type(exc).__name__}: {exc}"
            if offline:
                reason = f"offline mode is on and the dataset is not in the local cache ({reason})"
            raise _hub_error(bench, reason) from exc
        except FileNotFoundError as exc:  # datasets' DatasetNotFoundError: try the next id
            missing.append(f"{hub_id}: {type(exc).__name__}: {exc}")
    if offline:  # offline mode and no local cache of this dataset
        raise _hub_error(bench, f"offline mode is on and the dataset is not in the local cache ({'; '.join(missing)})")
    raise MaiError(f"{bench.name}: none of {', '.join(hub_ids(bench))} loads ({_one_line('; '.join(missing))})")


# --------------------------------------------------------------------------------------
# Hub rows -> Examples (prompt text as lmms-eval's doc_to_text builds it)
# --------------------------------------------------------------------------------------


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return _jsonable(value.item())
    return str(value)


def _is_missing(value: Any) -> bool:
    """lmms-eval's ``pd.isna(x) or x == "nan"`` test (used for MMBench hints and options)."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value == "nan"


def _row_chartqa(bench: Benchmark, row: dict, idx: int) -> Example:
    # chartqa/utils.py: f"{pre_prompt}{question}{post_prompt}", question not stripped.
    return Example(
        id=f"chartqa-{idx}",
        benchmark=bench.name,
        question=row["question"],
        references=[str(row["answer"])],
        images=[row["image"]],
        meta={"type": _jsonable(row.get("type"))},
    )


def _row_pope(bench: Benchmark, row: dict, idx: int, id_key: Callable[[dict, int], str]) -> Example:
    # pope/utils.py: question = doc["question"].strip(); f"{pre_prompt}{question}{post_prompt}".
    return Example(
        id=f"pope-{id_key(row, idx)}",
        benchmark=bench.name,
        question=row["question"].strip(),
        references=[str(row["answer"]).strip().lower()],
        images=[row["image"]],
        meta={
            "category": _jsonable(row.get("category")),
            "question_id": _jsonable(row.get("question_id")),
            "image_source": _jsonable(row.get("image_source")),
        },
    )


def _row_infovqa(bench: Benchmark, row: dict, idx: int) -> Example:
    # infovqa/utils.py: f"{pre_prompt}{question}{post_prompt}"; doc_to_target "answers" (a list).
    answers = row["answers"]
    refs = [str(a) for a in answers] if isinstance(answers, (list, tuple)) else [str(answers)]
    meta = {"question_id": _jsonable(row.get("questionId"))}
    if "answer_type" in row:
        meta["answer_type"] = _jsonable(row["answer_type"])
    return Example(
        id=f"infovqa-{row['questionId']}",
        benchmark=bench.name,
        question=row["question"],
        references=refs,
        images=[row["image"]],
        meta=meta,
    )


def _row_realworldqa(bench: Benchmark, row: dict, idx: int) -> Example:
    # realworldqa/utils.py: question = doc["question"].strip(); the default post_prompt is "" so
    # the dataset's own instruction ("Please answer directly with ...") stays in the question.
    return Example(
        id=f"realworldqa-{idx}",
        benchmark=bench.name,
        question=row["question"].strip(),
        references=[str(row["answer"]).strip()],
        images=[row["image"]],
        meta={},
    )


_MMBENCH_LETTERS = ("A", "B", "C", "D", "E")


def mmbench_question(row: dict) -> tuple[str, list[str]]:
    """MMBench-en prompt before the post-prompt, as mmbench/en_utils.py + mmbench_evals.py build it.

    Options: every letter column present with a truthy value that is not NaN/"nan", as
    "L. text" lines after "There are several options:".  Then
    f"{hint} {question} {options}" when the hint is not NaN/"nan", else f"{question} {options}".
    """
    letters = [c for c in _MMBENCH_LETTERS if c in row and row[c] and not _is_missing(row[c])]
    options = "There are several options:\n" + "".join(f"{c}. {row[c]}\n" for c in letters)
    options = options.rstrip("\n")
    hint = row.get("hint")
    if _is_missing(hint):
        text = f"{row['question']} {options}"
    else:
        text = f"{hint} {row['question']} {options}"
    return text, letters


def _row_mmbench(bench: Benchmark, row: dict, idx: int) -> Example:
    text, letters = mmbench_question(row)
    meta = {
        "category": _jsonable(row.get("category")),
        "options": letters,
        "index": _jsonable(row.get("index")),  # >= 1e6: a circular-shift copy of index % 1e6
        # the option texts lmms-eval's static scorer matches answers against (mai.metrics.mmbench_choices)
        "choices": {k: _jsonable(v) for k, v in mmbench_choices(row).items()},
    }
    for key, out in (("L2-category", "l2_category"), ("source", "source"), ("split", "split")):
        if key in row:
            meta[out] = _jsonable(row[key])
    return Example(
        id=f"mmbench-{row['index']}",
        benchmark=bench.name,
        question=text,
        references=[str(row["answer"]).strip()],
        images=[row["image"]],
        meta=meta,
    )


REQUIRED_COLUMNS = {
    "chartqa": ("image", "question", "answer", "type"),
    "pope": ("question_id", "question", "answer", "image", "category"),
    "infovqa": ("questionId", "question", "answers", "image"),
    "realworldqa": ("image", "question", "answer"),
    "mmbench": ("index", "question", "hint", "answer", "A", "B", "image", "category"),
}


def missing_columns(name: str, columns) -> list[str]:
    """The columns of benchmark `name`'s hub schema that a table with `columns` lacks (what the loader
    reads; checked on a parquet file's schema before a run loads anything, and on the loaded data)."""
    return [c for c in REQUIRED_COLUMNS[name] if c not in columns]


def _pope_id_key(ds) -> Callable[[dict, int], str]:
    """``question_id`` when it is unique in the split, else category + question_id, else the row."""
    qids = [str(q) for q in ds.data.column("question_id").to_pylist()]
    if len(set(qids)) == len(qids):
        return lambda row, idx: str(row["question_id"])
    cats = [str(c) for c in ds.data.column("category").to_pylist()]
    if len(set(zip(cats, qids))) == len(qids):
        return lambda row, idx: f"{row['category']}-{row['question_id']}"
    return lambda row, idx: str(idx)


def _cast_image_undecoded(ds, column: str = "image"):
    import datasets

    feature = ds.features[column]
    if isinstance(feature, datasets.Image):
        if feature.decode:
            ds = ds.cast_column(column, datasets.Image(decode=False))
        return ds
    # parquet written without HF metadata: a {bytes, path} struct (or raw binary / paths)
    try:
        return ds.cast_column(column, datasets.Image(decode=False))
    except Exception:
        return ds  # left as is; Example.load_images copes with bytes, paths and dicts


def _mmbench_indices(ds, limit: int | None, seed: int) -> list[int]:
    """Rows of a subsample of MMBench *questions*, each with all its rotated copies.

    CircularEval (mai.metrics.mmbench_circular) scores a question over every row whose index modulo
    1e6 is its index, so ``limit`` counts questions (index < 1e6) here, not rows.
    """
    index = [int(i) for i in ds.data.column("index").to_pylist()]
    questions = sorted({i for i in index if i < MMBENCH_CIRCULAR_MOD})
    chosen = {questions[k] for k in subsample_indices(len(questions), limit, seed)}
    return [row for row, i in enumerate(index) if i % MMBENCH_CIRCULAR_MOD in chosen]


def _examples_from_dataset(bench: Benchmark, ds, limit: int | None, seed: int) -> list[Example]:
    missing = missing_columns(bench.name, ds.column_names)
    if missing:
        raise MaiError(
            f"{bench.name}: data lacks column(s) {', '.join(missing)} of the {bench.hub_path} schema "
            f"(has: {', '.join(ds.column_names)})"
        )
    indices = _mmbench_indices(ds, limit, seed) if bench.name == "mmbench" else subsample_indices(len(ds), limit, seed)
    if bench.name == "pope":
        id_key = _pope_id_key(ds)
        build = lambda row, idx: _row_pope(bench, row, idx, id_key)  # noqa: E731
    else:
        build = {
            "chartqa": _row_chartqa,
            "infovqa": _row_infovqa,
            "realworldqa": _row_realworldqa,
            "mmbench": _row_mmbench,
        }[bench.name]
        build = (lambda f: lambda row, idx: f(bench, row, idx))(build)
    ds = ds.select(indices)
    ds = _cast_image_undecoded(ds)
    return [build(row, idx) for idx, row in zip(indices, ds)]


# --------------------------------------------------------------------------------------
# synth-chartqa: matplotlib charts with exact answers
# --------------------------------------------------------------------------------------

_CHART_LABELS = (
    "Apple", "Birch", "Cedar", "Delta", "Ember", "Falcon", "Grove", "Harbor", "Iris", "Jade",
    "Kite", "Lotus", "Maple", "Nova", "Onyx", "Pine", "Quill", "Raven", "Sage", "Tide",
    "Umber", "Vale", "Willow", "Zinc",
)
_CHART_TITLES = (
    "Units sold", "Survey results", "Annual output", "Visitors per site", "Budget share",
    "Votes by option", "Orders by store", "Energy use",
)
_CHART_KINDS = ("bar", "line", "pie")
BAR_COLOR = "#4c72b0"  # single bar colour (the tests measure bars by it)


def _chart_spec(seed: int, i: int) -> dict:
    rng = random.Random(f"synth-chartqa:{seed}:{i}")
    kind = _CHART_KINDS[i % len(_CHART_KINDS)]
    if kind == "pie":
        k = rng.randint(3, 5)
        while True:  # distinct integer percentages >= 5 that sum to 100
            vals = rng.sample(range(5, 46), k - 1)
            last = 100 - sum(vals)
            if 5 <= last <= 60 and last not in vals:
                values = vals + [last]
                break
    else:
        k = rng.randint(4, 6)
        values = rng.sample(range(5, 96), k)  # distinct, so highest / lowest are unique
    labels = rng.sample(_CHART_LABELS, k)
    data = dict(zip(labels, values))
    qtype = rng.choice(("value", "value", "max", "min", "sum", "diff"))
    if qtype == "value":
        a = rng.choice(labels)
        question, answer = f"What is the value of {a}?", str(data[a])
    elif qtype == "max":
        question, answer = "Which category has the highest value?", max(labels, key=data.__getitem__)
    elif qtype == "min":
        question, answer = "Which category has the lowest value?", min(labels, key=data.__getitem__)
    elif qtype == "sum":
        a, b = rng.sample(labels, 2)
        question, answer = f"What is the sum of {a} and {b}?", str(data[a] + data[b])
    else:
        a, b = sorted(rng.sample(labels, 2), key=data.__getitem__, reverse=True)
        question, answer = f"What is the difference between {a} and {b}?", str(data[a] - data[b])
    return {
        "kind": kind,
        "title": rng.choice(_CHART_TITLES),
        "labels": labels,
        "values": values,
        "qtype": qtype,
        "question": question,
        "answer": answer,
    }


def render_chart(spec: dict) -> Image.Image:
    """Draw a chart spec as a 400x300 RGB image (Agg canvas, no pyplot, no global backend change)."""
    import matplotlib
    import matplotlib.style
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels, values = spec["labels"], spec["values"]
    with matplotlib.style.context("default"):
        fig = Figure(figsize=(4, 3), dpi=100)
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_subplot(1, 1, 1)
        if spec["kind"] == "bar":
            x = range(len(labels))
            ax.bar(x, values, color=BAR_COLOR, width=0.6, antialiased=False)
            for xi, v in zip(x, values):
                ax.text(xi, v + 1.5, str(v), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(list(x), labels, fontsize=8)
            ax.set_ylim(0, max(values) * 1.18)
        elif spec["kind"] == "line":
            x = range(len(labels))
            ax.plot(list(x), values, marker="o", color="#dd8452")
            for xi, v in zip(x, values):
                ax.text(xi, v + 3, str(v), ha="center", va="bottom", fontsize=8)
            ax.set_xticks(list(x), labels, fontsize=8)
            ax.set_ylim(0, max(values) * 1.25)
            ax.set_xlim(-0.5, len(labels) - 0.5)
        else:
            ax.pie(
                values,
                labels=[f"{lab} ({v}%)" for lab, v in zip(labels, values)],
                startangle=90,
                counterclock=False,
                textprops={"fontsize": 8},
            )
            ax.set_aspect("equal")
        ax.set_title(spec["title"], fontsize=10)
        fig.tight_layout(pad=0.4)
        canvas.draw()
        rgba = canvas.buffer_rgba()
        img = Image.frombuffer("RGBA", canvas.get_width_height(), rgba, "raw", "RGBA", 0, 1)
        img = img.convert("RGB")  # copies out of the canvas buffer
    return img


def _load_synth_chartqa(limit: int | None, seed: int) -> list[Example]:
    out = []
    for i in subsample_indices(SYNTH_SIZE, limit, seed):
        spec = _chart_spec(seed, i)
        out.append(
            Example(
                id=f"synth-chartqa-s{seed}-{i:03d}",
                benchmark="synth-chartqa",
                question=spec["question"],
                references=[spec["answer"]],
                images=[render_chart(spec)],
                meta={
                    "chart": spec["kind"],
                    "type": "synthetic",
                    "qtype": spec["qtype"],
                    "data": dict(zip(spec["labels"], spec["values"])),
                },
            )
        )
    return out


# --------------------------------------------------------------------------------------
# synth-pope: coloured shapes, POPE-style negative sampling
# --------------------------------------------------------------------------------------

SHAPE_COLORS = {
    "red": (220, 30, 30),
    "green": (30, 150, 60),
    "blue": (30, 80, 220),
    "yellow": (240, 200, 0),
    "purple": (140, 50, 170),
    "orange": (250, 130, 0),
}
SHAPES = ("circle", "square", "triangle", "star", "diamond", "cross")
POPE_CATEGORIES = ("random", "popular", "adversarial")
_CANVAS = (400, 300)
_GRID = (3, 2)  # columns, rows: one object per cell, so shapes never overlap
_N_THEMES = 4


def _vocabulary() -> list[str]:
    return [f"{c} {s}" for c in SHAPE_COLORS for s in SHAPES]


def _make_scenes(seed: int, n_scenes: int) -> list[list[tuple[str, tuple[int, int, int]]]]:
    """Scenes as lists of (object, (cx, cy, radius)), structured like POPE's COCO images.

    The vocabulary is split into themes (like "kitchen" or "street" in COCO); a scene takes
    most of its objects from one theme, so objects of a theme co-occur (what adversarial
    negatives exploit).  Themes and objects have skewed popularities, so a few objects are
    frequent over the whole set (what popular negatives exploit).
    """
    rng = random.Random(f"synth-pope:{seed}")
    vocab = _vocabulary()
    shuffled = vocab[:]
    rng.shuffle(shuffled)
    themes = [shuffled[t::_N_THEMES] for t in range(_N_THEMES)]
    theme_weight = [1.0 / (t + 1) for t in range(_N_THEMES)]
    weight = {o: 1.0 / (r + 1) ** 0.7 for theme in themes for r, o in enumerate(theme)}
    cw, ch = _CANVAS[0] // _GRID[0], _CANVAS[1] // _GRID[1]
    scenes = []
    for _ in range(n_scenes):
        m = rng.randint(2, 4)
        theme = rng.choices(themes, weights=theme_weight)[0]
        chosen: list[str] = []
        while len(chosen) < m:
            pool = [o for o in (theme if rng.random() < 0.8 else vocab) if o not in chosen]
            pool = pool or [o for o in vocab if o not in chosen]
            chosen.append(rng.choices(pool, weights=[weight[o] for o in pool])[0])
        cells = rng.sample(range(_GRID[0] * _GRID[1]), m)
        placed = []
        for obj, cell in zip(chosen, cells):
            col, row = cell % _GRID[0], cell // _GRID[0]
            r = rng.randint(34, 48)
            cx = col * cw + cw // 2 + rng.randint(-(cw // 2 - r - 4), cw // 2 - r - 4)
            cy = row * ch + ch // 2 + rng.randint(-(ch // 2 - r - 4), ch // 2 - r - 4)
            placed.append((obj, (cx, cy, r)))
        scenes.append(placed)
    return scenes


def _shape_polygon(shape: str, cx: int, cy: int, r: int) -> list[tuple[float, float]]:
    if shape == "triangle":
        return [(cx + r * math.cos(a), cy - r * math.sin(a)) for a in (math.pi / 2, 7 * math.pi / 6, 11 * math.pi / 6)]
    if shape == "diamond":
        return [(cx, cy - r), (cx + 0.7 * r, cy), (cx, cy + r), (cx - 0.7 * r, cy)]
    if shape == "star":
        pts = []
        for k in range(10):
            rad = r if k % 2 == 0 else r * 0.42
            a = math.pi / 2 + k * math.pi / 5
            pts.append((cx + rad * math.cos(a), cy - rad * math.sin(a)))
        return pts
    if shape == "cross":
        t = r * 0.33
        return [
            (cx - t, cy - r), (cx + t, cy - r), (cx + t, cy - t), (cx + r, cy - t), (cx + r, cy + t),
            (cx + t, cy + t), (cx + t, cy + r), (cx - t, cy + r), (cx - t, cy + t), (cx - r, cy + t),
            (cx - r, cy - t), (cx - t, cy - t),
        ]
    raise ValueError(shape)


def render_scene(scene: list[tuple[str, tuple[int, int, int]]]) -> Image.Image:
    img = Image.new("RGB", _CANVAS, (255, 255, 255))
    draw = ImageDraw.Draw(img)
    for obj, (cx, cy, r) in scene:
        colour, shape = obj.split()
        fill = SHAPE_COLORS[colour]
        if shape == "circle":
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
        elif shape == "square":
            s = int(r * 0.85)
            draw.rectangle([cx - s, cy - s, cx + s, cy + s], fill=fill)
        else:
            draw.polygon(_shape_polygon(shape, cx, cy, r), fill=fill)
    return img


def pope_negative(category: str, present: list[str], freq: dict, cooc: dict, rng: random.Random) -> str:
    """POPE's negative sampling for one image (k = 1).

    random: any absent object; popular: the absent object most frequent over the whole set;
    adversarial: the absent object that co-occurs most often with the image's objects.
    Ties go to the more frequent object, then to vocabulary order.
    """
    vocab = _vocabulary()
    absent = [o for o in vocab if o not in present]
    if category == "random":
        return rng.choice(absent)
    order = {o: k for k, o in enumerate(vocab)}
    if category == "popular":
        return min(absent, key=lambda o: (-freq[o], order[o]))
    if category == "adversarial":
        return min(absent, key=lambda o: (-sum(cooc[p][o] for p in present), -freq[o], order[o]))
    raise ValueError(f"unknown POPE category {category!r}")


def _article(phrase: str) -> str:
    return "an" if phrase[:1].lower() in "aeiou" else "a"


def _load_synth_pope(limit: int | None, seed: int) -> list[Example]:
    per_scene = 2 * len(POPE_CATEGORIES)  # one yes and one no question per category
    scenes = _make_scenes(seed, math.ceil(SYNTH_SIZE / per_scene))
    vocab = _vocabulary()
    objects = [[o for o, _ in s] for s in scenes]
    freq = {o: sum(o in objs for objs in objects) for o in vocab}
    cooc = {p: {o: sum(p in objs and o in objs for objs in objects) for o in vocab} for p in vocab}

    # questions for the whole set first (cheap), so limit / seed only pick among them
    specs = []
    for s, present in enumerate(objects):
        rng = random.Random(f"synth-pope:{seed}:scene:{s}")
        for c, category in enumerate(POPE_CATEGORIES):
            positive = present[c % len(present)]
            negative = pope_negative(category, present, freq, cooc, rng)
            specs.append((s, category, positive, "yes"))
            specs.append((s, category, negative, "no"))
    specs = specs[:SYNTH_SIZE]

    images: dict[int, Image.Image] = {}
    out = []
    for i in subsample_indices(len(specs), limit, seed):
        s, category, obj, answer = specs[i]
        if s not in images:
            images[s] = render_scene(scenes[s])
        out.append(
            Example(
                id=f"synth-pope-s{seed}-{i:03d}",
                benchmark="synth-pope",
                question=f"Is there {_article(obj)} {obj} in the image?",
                references=[answer],
                images=[images[s].copy()],
                meta={"category": category, "scene": s, "object": obj, "objects": list(objects[s])},
            )
        )
    return out


_SYNTH_LOADERS: dict[str, Callable[..., list[Example]]] = {
    "synth-chartqa": _load_synth_chartqa,
    "synth-pope": _load_synth_pope,
}
