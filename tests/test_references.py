"""Every `module.name` that the experiments, analysis, scripts and mai itself read from a mai module exists.

Read with ast, as tests/test_layers.py reads imports: a name moved between modules (cli.finish went to
mai.experiment when cli.py was split) fails here, not at the end of a 10-minute run. Modules that need an
optional package (vLLM, lmms-eval) and cannot be imported in this environment are skipped.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("experiments", "analysis", "scripts", "mai")


def _module(name: str):
    try:
        return importlib.import_module(name)
    except ImportError:  # an optional package missing here
        return None


def _is_module(name: str) -> bool:
    """name is a module of mai (a submodule is only looked for inside a package)."""
    parent = name.rpartition(".")[0]
    if parent and not hasattr(_module(parent), "__path__"):
        return False
    return importlib.util.find_spec(name) is not None


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> mai module, for `import mai.x as y` and `from mai import x` where x is a module."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update({a.asname or a.name: a.name for a in node.names if a.name.split(".")[0] == "mai"})
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "mai" and not node.level:
            for a in node.names:
                if _is_module(f"{node.module}.{a.name}"):
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def test_every_attribute_read_from_a_mai_module_exists():
    missing, read = [], 0
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            aliases = _aliases(tree)
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and node.value.id in aliases):
                    continue
                module = _module(aliases[node.value.id])
                if module is None:
                    continue
                read += 1
                if not hasattr(module, node.attr) and not _is_module(f"{module.__name__}.{node.attr}"):
                    missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: {module.__name__} has no {node.attr!r}")
    assert read > 100  # the walk found the references it is meant to check
    assert not missing, "\n".join(missing)
