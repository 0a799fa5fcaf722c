"""Local lmms-eval tasks for the plugin tests: parquet files in the hub schema, and task YAMLs that
`include:` lmms-eval's own task files and point `dataset_path: parquet` at them (lmms-eval 0.7.3 loads a
task's dataset with datasets.load_dataset(dataset_path, **dataset_kwargs)). Offline: nothing from the hub.

The rows are synthetic (drawn bars and shapes, hand-set answers); they test the pipeline, not a model.
"""
from __future__ import annotations

import io
from pathlib import Path

from PIL import Image, ImageDraw

# local task -> (the lmms-eval task file it includes, the split that file reads)
LOCAL_TASKS = {
    "mai_local_pope": ("pope/pope.yaml", "test"),
    "mai_local_chartqa": ("chartqa/chartqa.yaml", "test"),
    "mai_local_infovqa": ("infovqa/infovqa_val.yaml", "validation"),
    "mai_local_realworldqa": ("realworldqa/realworldqa.yaml", "test"),
    "mai_local_mmbench": ("mmbench/mmbench_en_dev_static.yaml", "dev"),
}


def _png(seed: int) -> dict:
    img = Image.new("RGB", (96, 64), "white")
    draw = ImageDraw.Draw(img)
    for i in range(3):
        h = 10 + (seed * 7 + i * 13) % 45
        draw.rectangle([8 + 28 * i, 60 - h, 28 + 28 * i, 60], fill=("red", "green", "blue")[(seed + i) % 3])
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": None}


def pope_rows(n: int) -> dict:
    """lmms-lab/POPE's columns: id, question_id, question, answer, image_source, image, category."""
    objects = ("car", "dog", "chair", "cup", "tree", "bus")
    return dict(id=[str(i) for i in range(n)], question_id=[str(100 + i) for i in range(n)],
                question=[f" Is there a {objects[i % len(objects)]} in the image? " for i in range(n)],
                answer=["yes" if i % 2 else "no" for i in range(n)], image_source=[f"img{i}" for i in range(n)],
                image=[_png(i) for i in range(n)],
                category=[("adversarial", "popular", "random")[i % 3] for i in range(n)])


def chartqa_rows(n: int) -> dict:
    """lmms-lab/ChartQA's columns: image, question, answer, type (human_test or augmented_test)."""
    return dict(image=[_png(i) for i in range(n)], question=[f"What is the value of bar {i % 3}?" for i in range(n)],
                answer=[str(10 + 5 * i) for i in range(n)],
                type=["human_test" if i % 2 else "augmented_test" for i in range(n)])


def infovqa_rows(n: int) -> dict:
    """lmms-lab/DocVQA InfographicVQA's columns that its task reads: questionId, question, answers, image."""
    return dict(questionId=[str(i) for i in range(n)], question=[f"What is written in panel {i}?" for i in range(n)],
                answers=[[f"panel {i}", f"p{i}"] for i in range(n)], image=[_png(i) for i in range(n)])


def realworldqa_rows(n: int) -> dict:
    """lmms-lab/RealWorldQA's columns: image, question (with its own instruction), answer."""
    return dict(image=[_png(i) for i in range(n)],
                question=["Which bar is tallest?\nA. Left\nB. Middle\nC. Right\nPlease answer directly with only "
                          "the letter of the correct option and nothing else." for _ in range(n)],
                answer=["ABC"[i % 3] for i in range(n)])


def mmbench_rows(n: int) -> dict:
    """lmms-lab/MMBench en's columns: index, question, hint, answer, A-D, category, L2-category, source, split,
    image."""
    return dict(index=list(range(n)), question=["Which colour is the left bar?"] * n, hint=["nan"] * n,
                answer=["ABCD"[i % 4] for i in range(n)], A=["red"] * n, B=["green"] * n, C=["blue"] * n,
                D=["nan"] * n, category=["colour"] * n, **{"L2-category": ["perception"] * n},
                source=["synthetic"] * n, split=["dev"] * n, image=[_png(i) for i in range(n)])


ROWS = {"mai_local_pope": pope_rows, "mai_local_chartqa": chartqa_rows, "mai_local_infovqa": infovqa_rows,
        "mai_local_realworldqa": realworldqa_rows, "mai_local_mmbench": mmbench_rows}


def _features(rows: dict):
    import datasets

    def feature(key, values):
        if key == "image":
            return datasets.Image()
        if isinstance(values[0], list):
            return datasets.Sequence(datasets.Value("string"))
        return datasets.Value("int64" if isinstance(values[0], int) else "string")

    return datasets.Features({k: feature(k, v) for k, v in rows.items()})


def write_tasks(directory: Path, n: int = 4, tasks=("mai_local_pope", "mai_local_chartqa"),
                answers: dict | None = None) -> Path:
    """Parquet files and task YAMLs under `directory`; returns it (lmms-eval's --include_path).
    answers: {task: {doc index: answer}} replaces answers of the drawn rows."""
    import datasets
    import lmms_eval

    tasks_root = Path(lmms_eval.__file__).parent / "tasks"
    directory.mkdir(parents=True, exist_ok=True)
    for name in tasks:
        rows = ROWS[name](n)
        for i, answer in (answers or {}).get(name, {}).items():
            rows["answer"][i] = answer
        parquet = directory / f"{name}.parquet"
        datasets.Dataset.from_dict(rows, features=_features(rows)).to_parquet(str(parquet))
        include, split = LOCAL_TASKS[name]
        (directory / f"{name}.yaml").write_text(
            f"include: {tasks_root / include}\n"
            f"task: {name}\n"
            "dataset_path: parquet\n"
            "dataset_name: null\n"  # infovqa and mmbench name a hub config; a parquet file has none
            "dataset_kwargs:\n"
            "  data_files:\n"
            f"    {split}: {parquet}\n")
    return directory


def write_unknown_task(directory: Path, n: int = 2, name: str = "mai_local_unknown") -> str:
    """A task we have no agreement rule for: ChartQA's rows and metric, but its own doc_to_text (the bare
    question column), so neither its name nor its doc_to_text is one of ours. Returns its name."""
    import datasets
    import lmms_eval

    rows = chartqa_rows(n)
    parquet = directory / f"{name}.parquet"
    datasets.Dataset.from_dict(rows, features=_features(rows)).to_parquet(str(parquet))
    include = Path(lmms_eval.__file__).parent / "tasks" / "chartqa" / "chartqa.yaml"
    (directory / f"{name}.yaml").write_text(
        f"include: {include}\ntask: {name}\ndoc_to_text: question\ndataset_path: parquet\n"
        f"dataset_kwargs:\n  data_files:\n    test: {parquet}\n")
    return name


# Text-only questions in the style of BIG-bench's object_counting (numeric answers), written here: none of
# BIG-bench's own rows, which tests must not need.
TEXT_QUESTIONS = (
    ("I have a chair, two potatoes, a cauliflower, a lettuce head, two tables, a cabbage, two onions, and three "
     "fridges. How many vegetables do I have?", "7"),
    ("I have a flute, a piano, a trombone, four stoves, a violin, an accordion, a clarinet, a drum, two lamps, and "
     "a trumpet. How many musical instruments do I have?", "8"),
    ("I have a peach, an orange, a car, and two apples. How many fruits do I have?", "4"),
)


def write_text_task(directory: Path, n: int = 3, answers: dict | None = None, name: str = "mai_local_text") -> str:
    """A text-only generate_until task: no doc_to_visual (lmms-eval then hands the model no visuals), the
    question column as the prompt, exact match (lmms-eval's own, ignoring case and punctuation) on the answer
    column. lmms-eval 0.7.3 ships text-only generate_until tasks (gsm8k, ...), but each reads the hub and
    scores through regex filters that find nothing in a random-weight model's text; this one reads a local
    parquet file and scores the returned text itself. answers: {doc index: answer} replaces answers.
    Returns the task's name."""
    import datasets

    directory.mkdir(parents=True, exist_ok=True)
    rows = dict(question=[TEXT_QUESTIONS[i % len(TEXT_QUESTIONS)][0] for i in range(n)],
                answer=[TEXT_QUESTIONS[i % len(TEXT_QUESTIONS)][1] for i in range(n)])
    for i, answer in (answers or {}).items():
        rows["answer"][i] = answer
    parquet = directory / f"{name}.parquet"
    datasets.Dataset.from_dict(rows).to_parquet(str(parquet))
    (directory / f"{name}.yaml").write_text(
        f"task: {name}\n"
        "dataset_path: parquet\n"
        "dataset_kwargs:\n"
        "  data_files:\n"
        f"    test: {parquet}\n"
        "test_split: test\n"
        "output_type: generate_until\n"
        "doc_to_text: question\n"
        "doc_to_target: answer\n"
        "generation_kwargs:\n"
        "  max_new_tokens: 8\n"
        "  do_sample: false\n"
        "metric_list:\n"
        "  - metric: exact_match\n"
        "    aggregation: mean\n"
        "    higher_is_better: true\n"
        "    ignore_case: true\n"
        "    ignore_punctuation: true\n")
    return name
