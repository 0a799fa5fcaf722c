"""What an offline W&B run of experiments 09 and 10 holds, read back from the run's own .wandb file (W&B
writes it without a network): tags, group, the stable per-(benchmark, system) summary keys, the native
charts and the tables; the printed `wandb sync` command; and one step of Table 9's sweep file run as
`wandb agent` runs it, offline."""
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TINY = ["--preset", "cpu", "--limit", "1", "--think-tokens", "6", "--simple-tokens", "3"]


def read_wandb(run_dir: Path) -> dict:
    """The records of the one offline W&B run under run_dir: tags, group, summary (key -> value), config
    entries, and the media files written. The .wandb file is W&B's LevelDB-style log (wandb 0.31: 7-byte
    file header ':W&B' magic version; 32 KiB blocks of records with a 7-byte header crc32, length, type
    1 full / 2 first / 3 middle / 4 last), each record a wandb_internal_pb2.Record."""
    from wandb.proto import wandb_internal_pb2 as pb

    (path,) = (run_dir / "wandb").glob("offline-run-*/run-*.wandb")
    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pos, part, block = [], 7, b"", 32768
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if kind == 0:
            break
        part += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(part)
            records.append(record)
            part = b""
    out = dict(tags=set(), group=None, summary={}, config={},
               media=sorted(p.relative_to(path.parent / "files").as_posix()
                            for p in (path.parent / "files" / "media").rglob("*") if p.is_file()))
    for r in records:
        kind = r.WhichOneof("record_type")
        if kind == "run":  # the config passed to wandb.init travels in the run record
            out["tags"].update(r.run.tags)
            out["group"] = r.run.run_group
            out["config"].update({u.key or "/".join(u.nested_key): json.loads(u.value_json)
                                  for u in r.run.config.update})
        elif kind == "summary":
            out["summary"].update({u.key or "/".join(u.nested_key): json.loads(u.value_json) for u in r.summary.update})
        elif kind == "config":
            out["config"].update({u.key or "/".join(u.nested_key): json.loads(u.value_json) for u in r.config.update})
    return out


def _chart(run: dict, name: str) -> dict:
    return run["config"][f"_wandb/visualize/charts/{name}"]["panel_config"]


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.delenv("WANDB_MODE", raising=False)  # conftest turns W&B off for every other test
    monkeypatch.delenv("WANDB_API_KEY", raising=False)


def test_an_offline_run_of_09_holds_keys_charts_and_tables(tmp_path, experiment, capsys, offline):
    experiment("09_layer_ablation").main(TINY + ["--layers", "1,2", "--wandb", "offline", "--out", str(tmp_path / "runs"),
                                                 "--report-dir", str(tmp_path)])
    run_dir = tmp_path / "runs" / "09_layer_ablation" / "cpu"
    run = read_wandb(run_dir)
    assert {"preset:cpu", "random-weights"} <= run["tags"] and run["group"] == "09_layer_ablation"
    s = run["summary"]
    for system in ("large-S", "Full-RT", "sparse-L1", "sparse-L2"):
        assert 0 <= s[f"synth-pope/{system}/accuracy"] <= 100
    assert s["synth-pope/sparse/accuracy"] == pytest.approx((s["synth-pope/sparse-L1/accuracy"]
                                                              + s["synth-pope/sparse-L2/accuracy"]) / 2)
    assert s["synth-pope/sparse-L1/kept_tokens"] >= 1
    line = _chart(run, "table9_accuracy_per_layer")
    assert line["panelDefId"] == "wandb/line/v0"
    assert line["fieldSettings"] == {"x": "layer", "y": "accuracy", "stroke": "benchmark"}
    assert _chart(run, "table9_kept_tokens_per_layer")["fieldSettings"]["y"] == "kept_tokens"
    table = json.loads((next((run_dir / "wandb").glob("offline-run-*")) / "files" / s["tables/table9/path"]).read_text())
    assert "layer" in table["columns"] and len(table["data"]) == 4  # large-S, Full, L1, L2
    assert any(m.startswith("media/images/table9_layer_ablation.cpu") for m in run["media"])
    printed = capsys.readouterr().out
    sync = next(x.strip() for x in printed.splitlines() if x.strip().startswith("wandb sync "))
    assert Path(sync.split(" ", 2)[2]).parent == run_dir / "wandb"


def test_an_offline_run_of_10_holds_keys_charts_and_tables(tmp_path, experiment, offline):
    experiment("10_mai").main(TINY + ["--wandb", "offline", "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)])
    run = read_wandb(tmp_path / "runs" / "10_mai" / "cpu")
    assert {"preset:cpu", "random-weights"} <= run["tags"] and run["group"] == "10_mai"
    s = run["summary"]
    for bench in ("synth-chartqa", "synth-pope"):
        assert s[f"{bench}/large-R/speedup_vs_R"] == 1.0
        for system in ("large-S", "large-R", "small-R", "Full-RT", "MAI-answer", "MAI-reasoning"):
            assert 0 <= s[f"{bench}/{system}/accuracy"] <= 100
            assert s[f"{bench}/{system}/latency_s"] > 0
        for variant in ("MAI-answer", "MAI-reasoning"):
            routes = [s[f"{bench}/{variant}/route_{r}"] for r in ("simple", "reasoning", "transfer")]
            assert sum(routes) == pytest.approx(1.0)
            assert s[f"{bench}/{variant}/small_tokens"] >= 0 and s[f"{bench}/{variant}/large_tokens"] >= 1
    assert _chart(run, "table10_accuracy")["panelDefId"] == "wandb/bar/v0"
    assert _chart(run, "table10_routes")["fieldSettings"] == {"label": "bar", "value": "percent"}
    assert _chart(run, "table10_speedup")["fieldSettings"] == {"label": "bar", "value": "speedup_vs_R"}
    assert _chart(run, "table10_latency_accuracy")["panelDefId"] == "wandb/scatter/v0"
    assert s["tables/table10/nrows"] == 12  # two benchmarks x six systems
    assert s["results/nrows"] == 12


def test_one_step_of_the_table9_sweep_runs_offline(tmp_path, offline):
    """The sweep file's first grid point, turned into a command exactly as `wandb agent` does
    (wandb.sdk.launch.sweeps.utils and wandb_agent._command_run, wandb 0.31), run offline; only the tiny
    settings that keep a test short are appended."""
    from wandb.sdk.launch.sweeps import utils as sweep_utils

    sweep = sweep_utils.load_sweep_config(str(REPO / "experiments" / "09_layer_ablation.sweep.yaml"))
    assert sweep["method"] == "grid" and set(sweep["parameters"]) == {"layers", "delta"}
    args = {k: {"value": v["values"][0]} for k, v in sweep["parameters"].items()}
    macros = sweep_utils.create_sweep_command_args({"args": args})
    macros.update(env=["/usr/bin/env"], interpreter=[sys.executable], program=[sweep["program"]])
    command = [x for c in sweep_utils.create_sweep_command(list(sweep["command"]))
               for x in (macros[c[2:-1]] if c.startswith("${") else [c])]
    command += ["--limit=1", "--think-tokens=6", "--simple-tokens=3", f"--out={tmp_path / 'runs'}",
                f"--report-dir={tmp_path}"]
    env = dict(os.environ, WANDB_SWEEP_ID="offline0", WANDB_DIR=str(tmp_path))
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = tmp_path / "runs" / "09_layer_ablation" / "cpu-sweep-L0-d0.5"
    run = read_wandb(run_dir)
    assert run["config"]["layers"] == [0] and run["config"]["delta"] == 0.5
    assert sweep["metric"]["name"] in run["summary"]
    assert "wandb sync " in done.stdout
