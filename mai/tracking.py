"""Weights & Biases logging that never blocks a run.

Mode `auto` (the default) logs online only when the user is logged in (WANDB_API_KEY or a netrc entry),
offline otherwise; `online` asks for it; `disabled` turns W&B off. If W&B cannot start (no network,
a broken install), the run goes on without it and says so once.
"""
from __future__ import annotations

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
        if self.mode == "disabled":
            return
        try:
            import wandb

            os.environ.setdefault("WANDB_SILENT", "true")
            self.run = wandb.init(project=PROJECT, name=name, group=group, config=config, dir=str(run_dir),
                                  mode=self.mode, reinit="finish_previous",
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

    def finish(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


def _cell(value):
    """W&B tables take scalars; nested values are shown as their JSON-ish text."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
