"""One benchmark, one file: docs/benchmarks.md's example registers itself from a file of its own and runs
through a tiny model; the shared modules import no benchmark."""
import io
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from PIL import Image

import mai.benchmarks as benchmarks
from mai.answers import AnlsMatcher
from mai.benchmarks import BENCHMARKS, get_benchmark, load_benchmark
from mai.metrics import anls

REPO = Path(__file__).resolve().parents[1]


def readme_example() -> str:
    """The code block of the "Adding a benchmark" section of docs/benchmarks.md."""
    text = (REPO / "docs" / "benchmarks.md").read_text()
    section = text[text.index("## Adding a benchmark"):]
    end = section.find("\n## ", 1)
    section = section if end < 0 else section[:end]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    return code


@pytest.fixture
def benchmark_file(tmp_path, monkeypatch):
    """Put the README's docvqa.py beside the package's own modules (a folder on mai.benchmarks' path), as
    adding the file to mai/benchmarks/ does; forget it afterwards."""
    folder = tmp_path / "more_benchmarks"
    folder.mkdir()
    (folder / "docvqa.py").write_text(readme_example())
    monkeypatch.setattr(benchmarks, "__path__", [*benchmarks.__path__, str(folder)])
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    yield folder
    BENCHMARKS.pop("docvqa", None)
    sys.modules.pop("mai.benchmarks.docvqa", None)


def _png(k: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (48 + 8 * k, 40), (40 * k, 120, 200)).save(buf, format="PNG")
    return buf.getvalue()


def _docvqa_parquet(path: Path) -> str:
    """Three rows in the hub schema of lmms-lab/DocVQA (config DocVQA)."""
    rows = {"questionId": ["337", "338", "339"], "question": ["What is the date?", "Who signed?", "Total?"],
            "answers": [["May 5, 1976", "5 May 1976"], ["J. Smith"], ["$12.50"]],
            "image": [{"bytes": _png(k), "path": None} for k in range(3)]}
    features = datasets.Features({"questionId": datasets.Value("string"), "question": datasets.Value("string"),
                                  "answers": datasets.Sequence(datasets.Value("string")), "image": datasets.Image()})
    datasets.Dataset.from_dict(rows, features=features).to_parquet(str(path))
    return str(path)


def test_the_readme_benchmark_is_one_file(benchmark_file, tmp_path, tiny_small):
    from mai.cascade import Cascade, CascadeConfig
    from mai.evaluate import cascade_system, evaluate_model, run_systems
    from mai.generation import HFGenerator
    from mai.results import RunStore

    assert "docvqa" not in BENCHMARKS
    benchmarks.discover()
    bench = get_benchmark("docvqa")
    assert type(bench).__module__ == "mai.benchmarks.docvqa"  # found by its file name, registered by itself
    assert list(BENCHMARKS)[-1] == "docvqa"  # after the paper's and the synthetic ones
    assert bench.agreement is AnlsMatcher  # no rule of its own: the stated default for an ANLS metric
    assert bench.missing_columns(["question", "image"]) == ["questionId", "answers"]

    examples = load_benchmark("docvqa", limit=2, seed=0, data_files=_docvqa_parquet(tmp_path / "docvqa.parquet"))
    assert [e.benchmark for e in examples] == ["docvqa", "docvqa"]
    assert examples[0].references in (["May 5, 1976", "5 May 1976"], ["J. Smith"], ["$12.50"])
    assert benchmarks.dataset_sources()["docvqa"].startswith("parquet files (")

    gen = HFGenerator(tiny_small)
    store = RunStore(tmp_path / "runs", "exp", "run", {})
    assert evaluate_model(store, gen.generate, "tiny-small", examples, ["simple"], think_tokens=4, simple_tokens=3) == 2
    cascade = Cascade(gen, gen, CascadeConfig(think_tokens=4, answer_tokens=2), "S", "S")
    assert run_systems(store, [({"system": "mai"}, cascade_system(cascade, simple_tokens=3))], examples) == 2
    rows = store.rows()
    assert [r["error"] for r in rows] == [None] * 4
    for row in rows:  # scored by the file's own score(): ANLS of the raw output, stripped as lmms-eval does
        assert row["score"] == anls(row["prediction"].strip(), row["references"])
    mai_rows = [r for r in rows if r.get("system") == "mai"]
    assert [r["route"] for r in mai_rows] == ["simple", "simple"]  # one model on both sides agrees with itself
    assert get_benchmark("docvqa").aggregate(rows) == {"anls": pytest.approx(sum(r["score"] for r in rows) / 4)}


def test_a_name_is_registered_once(benchmark_file):
    benchmarks.discover()
    (benchmark_file / "docvqa_copy.py").write_text(readme_example())
    with pytest.raises(ValueError, match=r"benchmark 'docvqa' is registered twice: mai\.benchmarks\.docvqa\.DocVQA "
                                         r"and mai\.benchmarks\.docvqa_copy\.DocVQA"):
        benchmarks.discover()
    sys.modules.pop("mai.benchmarks.docvqa_copy", None)


def test_the_shared_modules_import_no_benchmark():
    """metrics -> answers -> data, one way: none of them loads mai.benchmarks or a benchmark module."""
    code = ("import sys, mai.metrics, mai.answers, mai.data\n"
            "print(sorted(m for m in sys.modules if m.startswith('mai')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout)
    assert "mai.data" in loaded and not any(m.startswith("mai.benchmarks") for m in loaded), loaded
    code = "import sys, mai.metrics\nprint(sorted(m for m in sys.modules if m.startswith('mai.')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert eval(out.stdout) == ["mai.metrics"]  # lmms-eval's shared scoring stands alone
