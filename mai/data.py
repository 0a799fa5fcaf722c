"""What every benchmark shares: examples, the benchmark interface, hub/parquet loading, subsampling.

Each benchmark is a module of its own in ``mai/benchmarks/`` (its hub ids and schema, its row -> Example
loader, its prompt, its lmms-eval scoring and its agreement rule), a subclass of ``HubBenchmark`` or
``SyntheticBenchmark`` here; ``mai.benchmarks`` registers them. Nothing here imports a benchmark.

Prompts, generation lengths, splits and dataset ids follow lmms-eval (EvolvingLMMs-Lab/lmms-eval) at
commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3 (``mai.metrics.LMMS_EVAL_COMMIT``), read from its
``lmms_eval/tasks/<task>/*.yaml`` and ``utils.py``.  ``Example.question`` is the text lmms-eval's
``doc_to_text`` builds *before* its post-prompt; ``Benchmark.post_prompt`` is the string lmms-eval
appends after it, so ``question + post_prompt`` is exactly the lmms-eval prompt of the "Simple" setting.

Hub benchmarks are read with ``datasets.load_dataset``, from the ``lmms-lab/*`` id first and then from
``lmms-lab-encoder/*`` (where the hub moved them on 2026-07-30, the ids lmms-eval's yamls name at that
commit); the loader says which one each benchmark came from, and runs record it. The image column is
cast to ``datasets.Image(decode=False)`` so every image stays an undecoded ``{"bytes", "path"}`` dict
until :meth:`Example.load_images` (one unreadable image fails one example, not the load).  The subsample
is taken before anything is decoded.  Synthetic benchmarks need no network: they are drawn on the spot,
deterministically in ``seed``.
"""

from __future__ import annotations

import io
import math
import os
import random
from dataclasses import dataclass, field
from typing import Any, Iterable

from PIL import Image

from mai import MaiError, hub
from mai.answers import Matcher, default_agreement
from mai.metrics import lmms_eval_response, mean

# lmms-eval's short-answer post-prompt (pope.yaml, infovqa's yamls and many other tasks at 75571cfe).
SHORT_ANSWER = "\nAnswer the question using a single word or phrase."

# --------------------------------------------------------------------------------------
# Examples
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
    # A text-only benchmark's example (BIG-bench's) has no image by design; any other example without
    # one lost it, and that stays an error.
    text_only: bool = False
    # The user text of the Think prompt when the run chose a style other than the default instruction
    # (--think-prompt: mai.prompts.think_text, e.g. the benchmark's few-shot chain-of-thought exemplars).
    think_prompt: str | None = None
    # The user text of the Simple prompt when the run chose a style other than the benchmark's post-prompt
    # (--simple-prompt: mai.prompts.simple_text, e.g. direct-answer few-shot exemplars).
    simple_prompt: str | None = None

    def load_images(self) -> list[Image.Image]:
        """Decode every image to RGB ([] for a text-only example); ``ValueError("unreadable image in
        <id>: ...")`` on failure."""
        if not self.images:
            if self.text_only:
                return []
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


def as_list(references) -> list[str]:
    """References as a list (a plain string is one reference)."""
    return [references] if isinstance(references, str) else list(references)


class Benchmark:
    """One benchmark: its prompt, how lmms-eval scores a raw output of it, and its agreement rule.

    A subclass sets the class attributes and, for its scoring, overrides ``correct`` (one response
    against one target; lmms-eval's ``process_results``), or ``score`` and ``aggregate`` where the task
    scores otherwise (ANLS, POPE's five numbers, MMBench's CircularEval).  ``agreement`` is its
    ``mai.answers.Matcher`` class; without one, the stated default for its ``metric``
    (``mai.answers.default_agreement``: ANLS >= 0.5 for an ANLS metric, else normalised exact match).
    """

    name: str = ""
    metric: str = ""  # what its lmms-eval metric is: relaxed, anls, pope, exact, option, ...
    headline: str = "accuracy"  # the key of aggregate() that the paper's tables report
    post_prompt: str = ""
    # The Simple prompt's explicit answer-format instruction (--simple-prompt format), where one is written.
    answer_format: str = ""
    max_new_tokens: int = 16
    split: str = "test"
    synthetic: bool = False
    hub_path: str | None = None
    hub_config: str | None = None
    columns: tuple[str, ...] = ()  # the hub schema's columns its loader reads
    agreement: type[Matcher] | None = None
    scoring: str | None = None  # a note for the run's config.json (which lmms-eval variant scores it)
    order: int = 100  # listing order; the paper's five benchmarks come first, in its order

    def __init__(self):
        if self.agreement is None:
            self.agreement = default_agreement(self.metric)

    def load(self, limit: int | None, seed: int, data_files=None) -> tuple[list[Example], str]:
        """``limit`` examples (all when None) and where they came from (a hub id, local files, "synthetic")."""
        raise NotImplementedError

    def missing_columns(self, columns) -> list[str]:
        """The columns of the benchmark's hub schema that a table with ``columns`` lacks (what the loader
        reads; checked on a parquet file's schema before a run loads anything, and on the loaded data)."""
        return [c for c in self.columns if c not in columns]

    # Our reading of answers and the cascade's agreement (mai.answers).

    def matcher(self, question: str = "", rule: str = "paper") -> Matcher:
        return self.agreement(question, rule)

    def extract(self, text: str, reasoning: bool = False) -> str:
        return self.agreement.extract(text, reasoning)

    # lmms-eval's scoring.

    def correct(self, response: str, target: str) -> bool:
        """One processed response against one target: equal ignoring case and surrounding whitespace."""
        return response.lower().strip() == target.lower().strip()

    def score(self, prediction: str, references, question: str | None = None, meta: dict | None = None) -> float:
        """Per-example score in [0, 1] of a raw output, as lmms-eval's pipeline gives it: the response
        (reasoning blocks and whitespace stripped) is right when it is ``correct`` for any reference."""
        response = lmms_eval_response(prediction)
        return 1.0 if any(self.correct(response, ref) for ref in as_list(references)) else 0.0

    def score_extracted(self, prediction: str, references, question: str | None = None,
                        meta: dict | None = None) -> float:
        """``score`` of the answer our extraction reads off the output (what an R row also reports)."""
        return self.score(self.extract(prediction), references, question, meta)

    def row_scores(self, rows: list[dict], extracted_answers: bool = False) -> list[float]:
        score = self.score_extracted if extracted_answers else self.score
        return [score(r["prediction"], r["references"], r.get("question"), r.get("meta") or {}) for r in rows]

    def aggregate(self, rows: Iterable[dict], extracted_answers: bool = False) -> dict:
        """The benchmark's numbers (fractions in [0, 1]) from rows of raw predictions.

        Each row has "prediction" (raw text) and "references" (list of str; a plain str is accepted),
        optionally "question" and "meta".  With ``extracted_answers`` every prediction first goes
        through our extraction (``score_extracted``'s numbers)."""
        return {self.headline: mean(self.row_scores(list(rows), extracted_answers))}


class HubBenchmark(Benchmark):
    """A benchmark read from the hub (``hub_path``, ``hub_config``, ``split``) or from local parquet files
    in its schema; a subclass turns one row into an Example (``example``)."""

    def example(self, row: dict, idx: int) -> Example:
        raise NotImplementedError

    def hub_ids(self) -> tuple[str, ...]:
        """The ids tried, in order: the older lmms-lab/* one, then lmms-lab-encoder/* (moved 2026-07-30)."""
        if self.hub_path is None:
            return ()
        moved = self.hub_path.replace("lmms-lab/", "lmms-lab-encoder/", 1)
        return (self.hub_path,) if moved == self.hub_path else (self.hub_path, moved)

    def load(self, limit, seed, data_files=None):
        ds, source = open_hub_dataset(self, data_files)
        missing = self.missing_columns(ds.column_names)
        if missing:
            raise MaiError(f"{self.name}: data lacks column(s) {', '.join(missing)} of the {self.hub_path} schema "
                           f"(has: {', '.join(ds.column_names)})")
        return self.examples(ds, self.indices(ds, limit, seed)), source

    def indices(self, ds, limit: int | None, seed: int) -> list[int]:
        """The rows of the subsample."""
        return subsample_indices(len(ds), limit, seed)

    def examples(self, ds, indices: list[int]) -> list[Example]:
        """The chosen rows as Examples, images left undecoded."""
        rows = cast_image_undecoded(ds.select(indices))
        return [self.example(row, idx) for idx, row in zip(indices, rows)]


class SyntheticBenchmark(Benchmark):
    """A benchmark drawn on the spot (no network), deterministically in ``seed`` (``generate``)."""

    synthetic = True
    split = "synthetic"

    def generate(self, limit: int | None, seed: int) -> list[Example]:
        raise NotImplementedError

    def load(self, limit, seed, data_files=None):
        if data_files is not None:
            raise MaiError(f"{self.name} is generated locally; data_files does not apply to it")
        return self.generate(limit, seed), "synthetic"


# --------------------------------------------------------------------------------------
# Subsampling, hub access, rows
# --------------------------------------------------------------------------------------


def subsample_indices(n: int, limit: int | None, seed: int) -> list[int]:
    """Indices of a deterministic subsample: sorted(Random(seed).sample(range(n), limit)) when limit < n."""
    if limit is None or limit >= n:
        return list(range(n))
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return sorted(random.Random(seed).sample(range(n), limit))


def _hub_error(bench: Benchmark, reason: Any) -> MaiError:
    return MaiError(
        f"cannot reach the Hugging Face hub for {bench.hub_path}: {_one_line(reason)}. "
        "Download it where you have access and pass its parquet files with --data-files, "
        "or set HF_DATASETS_OFFLINE=1 with a local cache."
    )


def open_hub_dataset(bench: Benchmark, data_files: str | list[str] | None):
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
    for hub_id in bench.hub_ids():
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
    raise MaiError(f"{bench.name}: none of {', '.join(bench.hub_ids())} loads ({_one_line('; '.join(missing))})")


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        return jsonable(value.item())
    return str(value)


def is_missing(value: Any) -> bool:
    """lmms-eval's ``pd.isna(x) or x == "nan"`` test (used for MMBench hints and options)."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and value == "nan"


def cast_image_undecoded(ds, column: str = "image"):
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
