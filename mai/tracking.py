"""Weights & Biases logging that never blocks a run.

Mode `auto` (the default) logs online only when the user is logged in (WANDB_API_KEY or a netrc entry),
offline otherwise; `online` asks for it; `disabled` turns W&B off. If W&B cannot start (no network,
a broken install), the run goes on without it and says so once.

What a run holds, so that runs compare in W&B's UI: runs are grouped by experiment and tagged with their
preset ("preset:cpu") and "random-weights" when any model had random weights; the summary has one key per
(benchmark, system, metric) under stable names ("synth-pope/MAI-answer/accuracy", systems named by their
role, not their checkpoint: analysis.report.system_key); each table and chart of the analysis is logged as a
wandb.Table with a native wandb.plot chart over it (`log_charts`), beside the figures as images. An offline
run ends by printing the exact `wandb sync` command that uploads it.
"""
from __future__ import annotations

import json
import netrc
import os
import sys
from pathlib import Path

MODES = ("auto", "online", "offline", "disabled")
PROJECT = os.environ.get("WANDB_PROJECT", "mai")


def logged_in() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (OSError, netrc.NetrcParseError):
        return False


def resolve_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown --wandb mode '{mode}'; choose from: {', '.join(MODES)}")
    if mode == "auto":
        return "online" if logged_in() else "offline"
    return mode


class Tracker:
    """A thin wrapper over one wandb run; every method is a no-op when W&B is off."""

    def __init__(self, mode: str, run_dir: Path, name: str, group: str, config: dict):
        self.mode = resolve_mode(mode)
        self.run = None
        self.run_dir = Path(run_dir)
        if self.mode == "disabled":
            return
        try:
            import wandb

            os.environ.setdefault("WANDB_SILENT", "true")
            self.run = wandb.init(project=PROJECT, name=name, group=group, config=config, dir=str(run_dir),
                                  mode=self.mode, reinit="finish_previous", tags=tags(config),
                                  settings=wandb.Settings(init_timeout=60, console="off"))
        except Exception as err:  # W&B must never fail a run
            if self.mode == "online":
                print(f"W&B online failed ({err}); logging offline instead", file=sys.stderr)
                self.__init__("offline", run_dir, name, group, config)
                return
            print(f"W&B disabled: {err}", file=sys.stderr)
            self.mode, self.run = "disabled", None

    @property
    def path(self) -> str | None:
        return None if self.run is None else str(Path(self.run.dir).parent)

    def log_table(self, name: str, rows: list[dict]) -> None:
        if self.run is None or not rows:
            return
        import wandb

        columns = sorted({k for r in rows for k in r})
        data = [[_cell(r.get(c)) for c in columns] for r in rows]
        self.run.log({name: wandb.Table(columns=columns, data=data)})

    def summary(self, metrics: dict) -> None:
        if self.run is not None:
            self.run.summary.update(metrics)

    def log_image(self, name: str, path: str | os.PathLike) -> None:
        if self.run is not None:
            import wandb

            self.run.log({name: wandb.Image(str(path))})

    def log_charts(self, charts: list[dict]) -> None:
        """Each chart as a native W&B chart (wandb.plot) over a wandb.Table, or for kind "table" the table alone.

        A chart: {name, kind: line | bar | scatter | table, columns, data (rows of values), title, and x, y
        (line, scatter; line also stroke: the column that splits series) or label, value (bar)}."""
        if self.run is None or not charts:
            return
        import wandb

        logged = {}
        for c in charts:
            table = wandb.Table(columns=list(c["columns"]), data=[[_cell(v) for v in row] for row in c["data"]])
            title = c.get("title", c["name"])
            if c["kind"] == "table":  # a chart's table is logged with it, as charts/<name>_table
                logged[f"tables/{c['name']}"] = table
            elif c["kind"] == "line":
                logged[f"charts/{c['name']}"] = wandb.plot.line(table, c["x"], c["y"], stroke=c.get("stroke"),
                                                                title=title)
            elif c["kind"] == "bar":
                logged[f"charts/{c['name']}"] = wandb.plot.bar(table, c["label"], c["value"], title=title)
            elif c["kind"] == "scatter":
                logged[f"charts/{c['name']}"] = wandb.plot.scatter(table, c["x"], c["y"], title=title)
        self.run.log(logged)

    def finish(self) -> None:
        """Close the run; tag it "random-weights" when models.json says so; for an offline run, print the
        command that uploads it."""
        if self.run is None:
            return
        described = self.run_dir / "models.json"
        if described.exists() and any(d.get("random_weights") for d in json.loads(described.read_text()).values()):
            self.run.tags = tuple(sorted({*self.run.tags, RANDOM_TAG}))
        offline = self.mode == "offline" and self.path
        path = self.path
        self.run.finish()
        self.run = None
        if offline:
            print(f"W&B run saved offline; upload it with:\n  wandb sync {path}")


RANDOM_TAG = "random-weights"


def tags(config: dict) -> list[str]:
    """The run's tags known before any model loads: its preset, its backend when not transformers, and
    "random-weights" for the CPU presets' random models (finish() adds it for any run that had one)."""
    out = [f"preset:{config.get('preset')}"]
    if config.get("backend", "hf") != "hf":
        out.append(f"backend:{config['backend']}")
    if config.get("preset") == "cpu":
        out.append(RANDOM_TAG)
    return out


def _cell(value):
    """W&B tables take scalars; nested values are shown as their JSON-ish text."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
