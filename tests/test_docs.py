"""The README and docs/ stay true: links and anchors resolve, every shell command is run here as written or says
why not, generated blocks are current, the README stays short, and dated figures live on one page.

The rules are docs/contributing.md's ("Keeping the pages true"). Commands run in a copy of the repository's
files with this interpreter's virtualenv linked in as .venv, so they read and write nothing of the checkout.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MEASUREMENTS = ROOT / "docs" / "measurements.md"
# Files another change adds (the change that adds it): a link to one passes while it is missing.
PENDING: dict[str, str] = {}
# Why a command is not run here: the first words after '# needs:' (comma-separated reasons).
REASONS = ("GPU", "8 GPUs", "hub", "network", "real pair", "vLLM CPU env", "lmms-eval extra", "local checkpoints",
           "a terminal", "the whole suite", "minutes", "a git checkout", "the files above")
MARK = re.compile(r"#\s*needs:\s*(?P<why>.+)$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
# Numbers the README may print without a measurement: names, not results (the arXiv id, model sizes, Python and
# CUDA versions, the paper's delta and layer, table numbers, "0-based").
README_NAMES = {"2604.04929", "0.5B", "1.5B", "2B", "8B", "3.11", "13", "0.8", "L12", "0", "9", "10", "12"}


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def blocks(text: str):
    """(language, [(line number, line)]) of every fenced code block."""
    out, lang, body = [], None, []
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang, body = m["lang"] or "text", []
        elif line.strip() == "```" and lang is not None:
            out.append((lang, body))
            lang = None
        elif lang is not None:
            body.append((n, line))
    return out


def prose(text: str) -> str:
    """The page without its fenced blocks and inline code (where links and numbers are not prose)."""
    return re.sub(r"`[^`]*`", "", prose_keep_code(text))


def slug(heading: str) -> str:
    """The anchor the code host makes of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen, out = {}, set()
    for line in prose_keep_code(page.read_text()).splitlines():
        m = re.match(r"^#{1,6} (.+)$", line)
        if m:
            s = slug(m[1])
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
    return out


def prose_keep_code(text: str) -> str:
    """The page without fenced blocks, inline code kept (a heading's code is part of its anchor)."""
    kept, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line) or (inside and line.strip() == "```"):
            inside = not inside
            continue
        if not inside:
            kept.append(line)
    return "\n".join(kept)


def links(page: Path):
    text = prose_keep_code(page.read_text())
    text = re.sub(r"`[^`]*`", lambda m: " " * len(m[0]) if "](" not in m[0] else m[0], text)
    for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)\)", text):
        yield m[1]


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in PAGES:
        for target in links(page):
            if re.match(r"^[a-z]+:", target):  # http(s), mailto: not checked here
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            rel = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
            if not dest.exists():
                if rel not in PENDING:
                    broken.append(f"{page_id(page)}: {target} (no such file)")
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page_id(page)}: {target} (no heading makes #{anchor} in {rel})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_pending_links_name_their_change():
    """A pending file is allowed only while it is missing: once its change lands, it leaves PENDING."""
    landed = [p for p in PENDING if (ROOT / p).exists()]
    assert not landed, f"these exist now; remove them from PENDING in tests/test_docs.py: {landed}"


def commands():
    """(page, line number, command, reason or None) of every line of a fenced shell block."""
    out = []
    for page in PAGES:
        for lang, body in blocks(page.read_text()):
            if lang not in ("bash", "sh", "shell", "console"):
                continue
            block_reason, pending = None, ""
            for i, (n, line) in enumerate(body):
                stripped = line.strip()
                if not stripped:
                    continue
                if stripped.startswith("#"):
                    m = MARK.match(stripped)
                    if m and i == 0:
                        block_reason = m["why"]
                    continue
                if stripped.endswith("\\"):  # a continued command: one logical line
                    pending += stripped[:-1] + " "
                    continue
                command, pending = pending + stripped, ""
                m = MARK.search(command)
                reason = m["why"] if m else block_reason
                out.append((page_id(page), n, MARK.sub("", command).strip(), reason))
    return out


def test_every_marker_gives_a_known_reason():
    bad = []
    for page, n, command, reason in commands():
        if reason is None:
            continue
        first = [r.strip().split(" (")[0] for r in reason.split(",")][0]
        if first not in REASONS:
            bad.append(f"{page}:{n}: '# needs: {reason}' (known: {', '.join(REASONS)})")
    assert not bad, "\n".join(bad)


RUN = [c for c in commands() if c[3] is None]


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The repository's files (tracked and new, not ignored) in a temporary directory, .venv linked in."""
    dest = tmp_path_factory.mktemp("repo")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    (dest / ".venv").symlink_to(Path(sys.prefix))  # the virtualenv running the tests
    return dest


@pytest.mark.parametrize("page,line,command", [c[:3] for c in RUN], ids=[f"{c[0]}:{c[1]}" for c in RUN])
def test_command_runs_as_written(copy, page, line, command):
    env = dict(os.environ, PATH=f"{copy / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}", WANDB_MODE="disabled",
               HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run(["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{page}:{line}: `{command}` exited {done.returncode}:\n{done.stderr[-3000:]}"


def test_generated_blocks_are_current():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout


def test_readme_is_at_most_200_lines():
    n = len((ROOT / "README.md").read_text().splitlines())
    assert n <= 200, f"README.md has {n} lines; move detail to a page under docs/"


def test_readme_keeps_the_claims_marks_and_the_ci_command():
    text = (ROOT / "README.md").read_text()
    assert "<!-- claims table: python -m analysis.claims --readme -->" in text
    assert "<!-- end of claims table -->" in text
    ci = (ROOT / ".ci" / "run").read_text()
    command = "bash scripts/setup.sh && .venv/bin/python -m pytest -q -n 2 --dist worksteal"
    assert command in ci and command in text, "the README's test command is the one .ci/run runs"


def generated_out(text: str) -> str:
    """The page with its generated blocks and the claims table blanked (line numbers kept): the code's text."""
    blank = lambda m: "\n" * m[0].count("\n")  # noqa: E731
    text = re.sub(r"<!-- generated: ([\w-]+) .*?<!-- end generated: \1 -->", blank, text, flags=re.S)
    return re.sub(r"<!-- claims table:.*?<!-- end of claims table -->", blank, text, flags=re.S)


def test_readme_numbers_are_names_or_measurements():
    """A number in the README's own prose is a name (a model size, a table, a version) or is quoted from
    docs/measurements.md; results come from generated blocks and the claims table."""
    text = prose(generated_out((ROOT / "README.md").read_text()))
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    measured = MEASUREMENTS.read_text()
    bad = sorted({n for n in re.findall(r"(?<![\w.-])L?\d[\d,.]*[A-Za-z]?(?![\w])", text)
                  if n.rstrip(".,") not in README_NAMES and n.rstrip(".,") not in measured})
    assert not bad, f"README.md prints {bad}: generate them (scripts/docs.py) or quote docs/measurements.md"


def test_dates_machines_and_run_ids_only_on_the_measurements_page():
    rules = {"a date": r"\b20\d\d-\d\d-\d\d\b", "this machine": r"\bthis machine\b",
             "a W&B run id": r"offline-run-\d|run-\d{8}_\d{6}-\w+", "'here' as a place": r"\b(?:measured|run|ran|checked|tested) here\b"}
    found = []
    for page in PAGES:
        if page == MEASUREMENTS:
            continue
        text = generated_out(page.read_text())
        for what, pattern in rules.items():
            for m in re.finditer(pattern, text, flags=re.I):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{page_id(page)}:{line}: {what} ('{m[0]}')")
    assert not found, "move these to docs/measurements.md:\n" + "\n".join(found)


def test_every_page_says_who_it_is_for():
    missing = [page_id(p) for p in PAGES[1:] if not re.search(r"^For\b", p.read_text(), flags=re.M)]
    assert not missing, f"pages without a 'For ...' line: {missing}"


def test_every_experiment_help_lists_its_presets():
    """Each script's own --help says what each of its presets is, and its block on the experiments page shows
    --preset with every one of them."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import docs

    for name in docs.SCRIPTS:
        parser = docs._parser_of(name)
        (action,) = [a for a in parser._actions if a.option_strings == ["--preset"]]
        text = parser._get_formatter()._expand_help(action)
        block = docs.help_block(name)
        for preset in docs.presets_of(name):
            assert f"{preset}:" in text, f"{name}.py --help does not describe --preset {preset}"
            assert preset in block.split("--preset {", 1)[1].split("}", 1)[0], f"{name}: --preset {preset} not shown"


def test_experiments_page_lists_each_flag_once_and_stays_short():
    """docs/experiments.md: the shared flags once, each script's own flags, at most 400 lines."""
    text = (ROOT / "docs" / "experiments.md").read_text()
    assert len(text.splitlines()) <= 400, f"docs/experiments.md has {len(text.splitlines())} lines"
    assert text.count("`--dtype DTYPE`") == 1 and text.count("`--threads THREADS`") == 1


def test_the_paper_preset_says_what_it_downloads_before_it_does(tmp_path):
    """09 with no flags: the download list, the GPU time and the CPU presets come first, then (offline) the hub
    fails: nothing was fetched before the user was told."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_MODE="disabled")
    done = subprocess.run([sys.executable, str(ROOT / "experiments" / "09_layer_ablation.py"), "--out",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    err = done.stderr
    assert "Qwen/Qwen3-VL-2B-Instruct" in err and "lmms-lab/POPE" in err and " GB" in err, err[-2000:]
    assert "at least" in err and " h for Table 9" in err, err[-2000:]
    assert "--preset cpu" in err and "--preset cpu-real" in err, err[-2000:]
    assert done.returncode != 0, "offline, the run cannot have fetched the paper's models"
    told, failed = err.index("It will download"), err.find("error")
    assert failed == -1 or failed > told, err[-2000:]


def test_licence_and_citation_agree():
    import yaml

    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "Apache-2.0" and cff["authors"]
    paper = cff["preferred-citation"]
    assert [a["family-names"] for a in paper["authors"]] == ["Dong", "Hu", "Li", "Wen", "Qian"]
    assert "2604.04929" in paper["url"]
    readme = (ROOT / "README.md").read_text()
    assert "eprint        = {2604.04929}" in readme and paper["title"] in readme


def ci_trap_exit(body: str) -> int:
    """Exit status of a script with .ci/run's options, its `stop` and its EXIT trap, around a vLLM setup that has
    finished and the body."""
    ci = (ROOT / ".ci" / "run").read_text()
    stop = re.search(r"^stop\(\) .*$", ci, flags=re.M)
    trap = re.search(r"^trap '.*' EXIT$", ci, flags=re.M)
    assert stop and trap, ".ci/run has a one-line stop() and one EXIT trap line"
    script = (f"set -euo pipefail\nvllm_log=$(mktemp)\ntrue &\nvllm_setup=$!\n{stop[0]}\n{trap[0]}\n"
              f"wait $vllm_setup\n{body}\n")
    return subprocess.run(["bash", "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          timeout=30).returncode


def test_ci_exit_trap_keeps_a_passing_run_passing_and_a_failing_one_failing():
    """Under `set -e` a trap command that fails becomes the script's status: killing the already finished
    setup once failed a CI run whose every part passed."""
    assert ci_trap_exit("echo every part passed") == 0
    assert ci_trap_exit("false") == 1


def test_a_failing_ci_part_stops_the_engine_tests_running_beside_it():
    """The engine tests run in the background beside the real-weight tests: when a part fails, the trap ends them
    and what they started (here a subshell running a uniquely long sleep, as a part runs pytest)."""
    marker = "sleep 317.25"
    body = f"bash -c '{marker}; true' &\nengine_tests=$!\nsleep 0.5\nfalse"
    assert ci_trap_exit(body) == 1
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert not left, f"the trap left {marker} running: {left}"
