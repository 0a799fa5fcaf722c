"""A soak of mixed traffic against `python -m mai serve` on 127.0.0.1: does bad traffic hurt good traffic?

    python scripts/bench_soak.py --preset cpu                                   # transformers backend
    .venv-vllm/bin/python scripts/bench_soak.py --preset cpu --backend vllm     # vLLM's CPU engine
    python scripts/bench_soak.py --preset cpu --rounds 5                        # a longer soak
    python scripts/bench_soak.py --preset cpu-real --valid 4 --client-timeout 1800 --server-arg=--request-timeout \\
        --server-arg=1800 --server-arg=--benchmark --server-arg=bbh_object_counting

1. Starts the server (this script's Python; --max-body-bytes 4 MiB) and waits for GET /health; each valid
   question once, untimed, so that both phases find the same warm caches (vLLM's prefix cache).
2. Clean phase: each valid question once, one at a time, from the official openai client; latency of each.
3. Mixed phase: the same valid questions, one at a time, while --bad-workers threads send bad traffic in turn
   for as long as the valid ones run: malformed JSON, JSON nested 20,000 deep, a body past --max-body-bytes
   (413), a 300,000-word question (past every served context), refused fields (n=2, max_tokens 0), a valid
   request whose client leaves after 50 ms (disconnect), and a 12,000-word question (within every served
   context) whose client gives up after 0.5 s, mid-prefill (timeout). Each kind has the status the server
   must count for it.
4. Long phase: the same valid questions, one at a time, while --long-workers threads send long but legal
   questions (--long-words words, within every served context, each answered 200) back to back for as long as
   the valid ones run. The valid (short) queries' p50 and p99 here against the clean phase's are the ratio that
   says whether a long query holds the short ones (issue 40: at most 3x).
5. Waits (bounded) for the queue and the running queries to reach 0, reads GET /metrics, the server's resident
   memory (its process tree's VmRSS) at the start of the clean phase and at the end, stops the server.
6. Answers each valid question alone the way experiments/10_mai.py does (mai.evaluate.cascade_system over the
   backend's own generators, mai.experiment.scale_generators), in this process after the server stopped (so
   the real pair is never loaded twice at once), and compares every served answer with it.
Prints one JSON summary and exits 1 if any check fails. Loopback only, every loop bounded in count and time.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

QUESTIONS = ["Which bar is the tallest?", "Is a tomato a fruit?", "How many legs does a spider have?",
             "What is the capital of France?", "Is the sky blue on a clear day?", "What is 7 times 8?",
             "Which is larger, 12 or 21?", "Can penguins fly?"]
BODY_LIMIT = 4 << 20  # the server's --max-body-bytes here: the 300,000-word question (~1.5 MB) passes it
OVER_CONTEXT_WORDS = 300_000


def bad_kinds(model: str) -> dict:
    """kind -> (body, client timeout s, the status the server counts); a bytes body is sent as it is."""
    user = lambda text, **kw: json.dumps({"model": model, "messages": [{"role": "user", "content": text}], **kw})  # noqa: E731
    return {
        "malformed": (b'{"model": "mai", "messages": [', None, 400),
        "deep_json": (b'{"messages": ' + b"[" * 20_000 + b"]" * 20_000 + b"}", None, 400),
        "oversized": (user("x" * (BODY_LIMIT + 1)).encode(), None, 413),
        "over_context": (user("word " * OVER_CONTEXT_WORDS).encode(), None, 400),
        "bad_field": (user("Is it?", n=2).encode(), None, 400),
        "bad_max_tokens": (user("Is it?", max_tokens=0).encode(), None, 400),
        "disconnect": (user("Which bar is the tallest?").encode(), 0.05, 499),
        "timeout": (user("word " * 12_000 + "Which word is it?").encode(), 0.5, 499),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss_mib(pid: int) -> float:
    """VmRSS of a process and its descendants (vLLM's engine cores are children), MiB, from /proc."""
    pids, total = [pid], 0
    for p in pids:
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        pids.extend(int(c) for c in children)
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return round(total / 1024, 1)


def metrics(base: str) -> dict[str, float]:
    out = {}
    for line in httpx.get(f"{base}/metrics", timeout=10).text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="cpu", help="the server's --preset (cpu, cpu-text, cpu-real)")
    p.add_argument("--backend", choices=("transformers", "vllm"), default="transformers")
    p.add_argument("--valid", type=int, default=8, help="valid questions per phase (default 8, at most 8)")
    p.add_argument("--rounds", type=int, default=1,
                   help="times each phase asks every valid question (default 1; more: a longer soak)")
    p.add_argument("--bad-per-valid", type=int, default=3,
                   help="bad requests per valid one in the mixed phase, at least (default 3; at least one of each kind)")
    p.add_argument("--bad-workers", type=int, default=2, help="threads sending bad traffic (default 2)")
    p.add_argument("--client-timeout", type=float, default=300, help="a valid request's client timeout, s")
    p.add_argument("--long-words", type=int, default=4000,
                   help="words of the long but legal question of the long phase (default 4000; 0: no long phase)")
    p.add_argument("--long-workers", type=int, default=1, help="threads sending long questions (default 1)")
    p.add_argument("--long-timeout", type=float, default=1800, help="a long request's client timeout, s")
    p.add_argument("--ready-timeout", type=float, default=900, help="seconds for the server to load")
    p.add_argument("--server-arg", action="append", default=[], help="one more flag for the server (repeatable)")
    args = p.parse_args(argv)
    if not 1 <= args.valid <= len(QUESTIONS):
        p.error(f"--valid must lie in 1..{len(QUESTIONS)}")
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    return args


def start(args, port: int, log) -> subprocess.Popen:
    command = [sys.executable, "-m", "mai", "serve", "--preset", args.preset, "--backend", args.backend,
               "--port", str(port), "--max-body-bytes", str(BODY_LIMIT), "--log-level", "warning", *args.server_arg]
    return subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(server: subprocess.Popen, base: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode} before it was ready")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"the server was not ready within {timeout:g} s")


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGINT)  # uvicorn's graceful shutdown: the worker and engines close
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)


def ask_valid(client, model: str, questions: list[str]) -> list[tuple[str, float]]:
    out = []
    for question in questions:
        t0 = time.perf_counter()
        response = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}])
        out.append((response.choices[0].message.content, time.perf_counter() - t0))
    return out


def send_bad(base: str, kinds: dict, turns, stop_when: threading.Event, minimum: int, sent: dict, lock) -> None:
    """Bad requests, each kind in turn (`turns`, shared by the threads), until the valid ones are done and at
    least `minimum` were sent in all (bounded: 10,000 per thread)."""
    for _ in range(10_000):
        with lock:
            if stop_when.is_set() and sum(map(len, sent.values())) >= minimum:
                return
            kind = next(turns)
        body, timeout, expected = kinds[kind]
        try:
            r = httpx.post(f"{base}/v1/chat/completions", content=body, timeout=timeout or 60,
                           headers={"content-type": "application/json"})
            got = r.status_code
        except httpx.TimeoutException:
            got = 499  # the client left; the server counts it 499 (never sent)
        with lock:
            sent.setdefault(kind, []).append(got)


def send_long(base: str, model: str, words: int, timeout: float, stop_when: threading.Event, sent: list,
              started: threading.Event) -> None:
    """Long but legal questions, one after another, until the valid ones are done (bounded: 1,000)."""
    body = {"model": model, "messages": [{"role": "user", "content": "word " * words + "Which word is it?"}]}
    for _ in range(1000):
        if stop_when.is_set():
            return
        started.set()
        try:
            got = httpx.post(f"{base}/v1/chat/completions", json=body, timeout=timeout).status_code
        except httpx.TimeoutException:
            got = 499
        sent.append(got)


def references(args, questions: list[str]) -> list[dict]:
    """Each question's answer (10_mai's row output: text, route, trace) as experiments/10_mai.py computes it
    alone (after the server stopped), its prompts in the served styles as 10_mai's examples carry them
    (mai.experiment.style_examples): the preset's Think prompt (cpu-real: few-shot chain of thought) and the
    benchmark's Simple style. Built bare, an example is asked with the default styles, and a question that reaches
    the small model's reasoning then differs from the served one for that reason alone."""
    from mai import cli, experiment
    from mai.benchmarks import get_benchmark
    from mai.cascade import Cascade
    from mai.data import Example
    from mai.evaluate import cascade_system
    from mai.serving import server as mai_server  # not `server`: this file's Popen handles are named so

    served = mai_server.parse(["--preset", args.preset, "--backend", args.backend, *args.server_arg])
    served.backend = "hf" if args.backend == "transformers" else "vllm"
    served.max_model_len = served.max_model_len or 16384
    config = cli.cascade_config(served)
    small, large = experiment.scale_generators(served, None, config)
    labels = [getattr(g, "label", None) or g.loaded.label for g in (small, large)]
    cascade = Cascade(small, large, config, *labels)
    bench = get_benchmark(served.benchmark)
    answer = cascade_system(cascade, served.simple_tokens)
    examples = experiment.style_examples([Example(f"q{i}", bench.name, q, [], []) for i, q in enumerate(questions)],
                                         served.think_prompt, served.simple_prompt, [bench.name])
    return [answer(example, bench, []) for example in examples]


def main(argv=None) -> int:
    args = parse_args(argv)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    questions = QUESTIONS[:args.valid]
    log_path = ROOT / "runs" / "bench_soak" / f"server-{args.preset}-{args.backend}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    import openai

    with open(log_path, "w") as log:
        server = start(args, port, log)
        try:
            wait_ready(server, base, args.ready_timeout)
            model = httpx.get(f"{base}/v1/models", timeout=10).json()["data"][0]["id"]
            client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0, timeout=args.client_timeout)
            ask_valid(client, model, questions)  # one-time costs and first prefills out of both phases
            rss_start = tree_rss_mib(server.pid)
            asked = questions * args.rounds
            clean = ask_valid(client, model, asked)
            kinds, sent, lock, done = bad_kinds(model), {}, threading.Lock(), threading.Event()
            minimum, turns = max(args.bad_per_valid * len(asked), len(kinds)), itertools.cycle(sorted(kinds))
            with concurrent.futures.ThreadPoolExecutor(args.bad_workers) as pool:
                bad = [pool.submit(send_bad, base, kinds, turns, done, minimum, sent, lock)
                       for _ in range(args.bad_workers)]
                try:
                    mixed = ask_valid(client, model, asked)
                finally:
                    done.set()
                for future in bad:
                    future.result()
            long_phase, long_sent = [], []
            if args.long_words:
                done, started = threading.Event(), threading.Event()
                with concurrent.futures.ThreadPoolExecutor(args.long_workers) as pool:
                    longs = [pool.submit(send_long, base, model, args.long_words, args.long_timeout, done, long_sent,
                                         started) for _ in range(args.long_workers)]
                    started.wait(60)
                    time.sleep(1.0)  # the long question is admitted and running when the first short one comes
                    try:
                        long_phase = ask_valid(client, model, asked)
                    finally:
                        done.set()
                    for future in longs:
                        future.result()
            deadline = time.time() + 120
            while time.time() < deadline:
                m = metrics(base)
                if m.get("mai_queue_depth", 1) == 0 and m.get("mai_queries_running", 1) == 0:
                    break
                time.sleep(0.2)
            m, rss_end = metrics(base), tree_rss_mib(server.pid)
        finally:
            stop(server)
    ref = [r["text"] for r in references(args, questions)]
    # mai_requests_total{status="200"} 17.0 -> {200: 17}: every status the server counted.
    counted = {int(name.split('"')[1]): int(value) for name, value in m.items()
               if name.startswith("mai_requests_total{") and value}
    # What the clients saw (a client that left counts 499): the server must have counted the same.
    expected = {200: len(questions) + 2 * len(asked) + len(long_phase)}
    for status in itertools.chain(*sent.values(), long_sent):
        expected[status] = expected.get(status, 0) + 1
    clean_s, mixed_s = [s for _, s in clean], [s for _, s in mixed]
    summary = dict(
        preset=args.preset, backend=args.backend, valid_per_phase=len(asked),
        bad_sent={kind: len(v) for kind, v in sorted(sent.items())},
        bad_statuses={kind: sorted(set(v)) for kind, v in sorted(sent.items())},
        answers_equal_10_mai=dict(clean=sum(a == r for (a, _), r in zip(clean, ref * args.rounds)),
                                  mixed=sum(a == r for (a, _), r in zip(mixed, ref * args.rounds)), of=len(asked)),
        latency_s=dict(clean_p50=round(percentile(clean_s, 0.5), 3), clean_p99=round(percentile(clean_s, 0.99), 3),
                       mixed_p50=round(percentile(mixed_s, 0.5), 3), mixed_p99=round(percentile(mixed_s, 0.99), 3)),
        rss_mib=dict(start=rss_start, end=rss_end),
        long_sent=dict(words=args.long_words, statuses=sorted(long_sent)),
        queue_depth_end=m.get("mai_queue_depth"), running_end=m.get("mai_queries_running"),
        requests_counted=counted, requests_expected=expected)
    lat = summary["latency_s"]
    summary["latency_ratio"] = dict(p50=round(lat["mixed_p50"] / lat["clean_p50"], 2),
                                    p99=round(lat["mixed_p99"] / lat["clean_p99"], 2))
    if long_phase:
        long_s = [s for _, s in long_phase]
        lat.update(long_p50=round(percentile(long_s, 0.5), 3), long_p99=round(percentile(long_s, 0.99), 3))
        # The short queries with long traffic against without it, in the same run (issue 40: at most 3x).
        summary["latency_ratio_long"] = dict(p50=round(lat["long_p50"] / lat["clean_p50"], 2),
                                             p99=round(lat["long_p99"] / lat["clean_p99"], 2))
        summary["answers_equal_10_mai"]["long"] = sum(a == r for (a, _), r in zip(long_phase, ref * args.rounds))
    failures = []
    if summary["answers_equal_10_mai"]["clean"] != len(asked) or summary["answers_equal_10_mai"]["mixed"] != len(asked):
        failures.append("a served answer differs from 10_mai's")
    if long_phase and summary["answers_equal_10_mai"]["long"] != len(asked):
        failures.append("a served answer beside long traffic differs from 10_mai's")
    if long_phase and set(long_sent) != {200}:
        failures.append(f"long but legal questions answered {sorted(set(long_sent))}, not 200")
    wrong = {k: v for k, v in sent.items() if set(v) != {kinds[k][2]}}
    if wrong:
        failures.append(f"statuses other than expected: { {k: sorted(set(v)) for k, v in wrong.items()} }")
    if (summary["queue_depth_end"], summary["running_end"]) != (0, 0):
        failures.append("queue or running queries not back to 0")
    if counted != expected:
        failures.append("/metrics counters differ from what was sent")
    summary["failures"] = failures
    print(json.dumps(summary, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
