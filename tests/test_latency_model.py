"""The latency model: lines fitted on a synthetic profile, exact predictions per MAI variant, and predictions
made from a real tiny profile and a real (forced-route) cascade run."""
import dataclasses
import json

import pytest

from analysis import latency_model as lm
from mai import MaiError
from mai.forced import draw_route

# A synthetic machine: every number below follows from these by hand.
SMALL = dict(preprocess=0.01, vision=0.1, prefill=(0.05, 0.001), decode=(0.02, 0.04))
LARGE = dict(preprocess=0.01, vision=0.2, prefill=(0.2, 0.004), decode=(0.03, 0.1))


def _profile_rows(label, m, prompts=(100, 300), outputs=(8, 32)):
    rows = []
    for p in prompts:
        for n in outputs:
            times = dict(preprocess=m["preprocess"], vision=m["vision"], prefill=m["prefill"][0] + m["prefill"][1] * p,
                         decode=m["decode"][0] + m["decode"][1] * (n - 1))
            rows.append(dict(key=f"{label}/{p}/{n}", model=label, warmup=False, error=None, question_tokens=p - 20,
                             requested_output_tokens=n, input_tokens=p, output_tokens=n, times=times,
                             latency=sum(times.values())))
    return rows


def _write_run(path, rows, config=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config or {}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def costs(tmp_path):
    run = _write_run(tmp_path / "03", _profile_rows("2B", SMALL) + _profile_rows("8B", LARGE))
    return lm.profile(run)


def test_fit_recovers_the_lines(costs):
    s, big = costs["2B"], costs["8B"]
    assert (s.preprocess, s.vision) == pytest.approx((0.01, 0.1))
    assert (s.prefill_base, s.prefill_per_token) == pytest.approx((0.05, 0.001))
    assert (s.decode_base, s.decode_per_token) == pytest.approx((0.02, 0.04))
    assert (big.prefill_base, big.prefill_per_token, big.decode_per_token) == pytest.approx((0.2, 0.004, 0.1))


def test_one_prompt_length_cannot_fit_a_line(tmp_path):
    run = _write_run(tmp_path / "03", _profile_rows("2B", SMALL, prompts=(100,)))
    with pytest.raises(MaiError, match="two or more"):
        lm.profile(run)


def test_call_costs(costs):
    s = costs["2B"]
    # A fresh prompt: preprocess + vision + prefill(200) + decode(10): 0.01 + 0.1 + 0.25 + (0.02 + 0.36).
    assert s.call(200, 10) == pytest.approx(0.74)
    # A second stage over 30 new tokens after 250 cached ones: no image, prefill(30) + decode(4).
    assert s.call(280, 4, cached=250) == pytest.approx(0.08 + 0.14)
    # A capture: a forward without decode.
    assert s.call(280, 0, cached=250) == pytest.approx(0.08)
    assert lm.predict_call(s, dict(input_tokens=280, cached_tokens=250, output_tokens=4)) == pytest.approx(0.22)
    # A recorded call is charged its own measured preprocessing (it depends on the input images), not the profile's.
    measured = dict(input_tokens=200, output_tokens=10, times=dict(preprocess=0.5, vision=9, prefill=9, decode=9))
    assert lm.predict_call(s, measured) == pytest.approx(0.74 - 0.01 + 0.5)


Q = lm.Query(prompt=100, think_prompt=120, simple_tokens=4, reasoning_tokens=50, large_reasoning_tokens=200,
             transfer_prompt=150, suffix=20, answer_tokens=5, capture_suffix=20)


@pytest.mark.parametrize("verify,transfer,reasoning,transfer_route", [
    # simple:    small.call(100, 4) 0.11+0.15+0.14 + large.call(100, 4) 0.21+0.6+0.33     = 1.54
    # reasoning: + small.call(120, 50) 0.01+0.1+0.17+1.98 = 2.26; verify=answer adds the second stage
    #            over 20 new tokens, 5 out: 0.07 + 0.18 = 0.25
    # transfer:  + large.call(150, 4) 0.01+0.2+0.8+0.33 = 1.34; sparse with verify=reasoning adds one
    #            suffix-only forward of the small model: prefill(20) = 0.07
    ("answer", "full", 1.54 + 2.26 + 0.25, 1.54 + 2.26 + 0.25 + 1.34),
    ("answer", "sparse", 1.54 + 2.26 + 0.25, 1.54 + 2.26 + 0.25 + 1.34),  # the capture rides on the 2nd stage
    ("reasoning", "full", 1.54 + 2.26, 1.54 + 2.26 + 1.34),
    ("reasoning", "sparse", 1.54 + 2.26, 1.54 + 2.26 + 1.34 + 0.07),
])
def test_each_variant_call_by_call(costs, verify, transfer, reasoning, transfer_route):
    routes = lm.route_latency(costs["2B"], costs["8B"], Q, verify, transfer)
    assert routes == pytest.approx(dict(simple=1.54, reasoning=reasoning, transfer=transfer_route))
    p = lm.predict_mai(costs["2B"], costs["8B"], Q, dict(simple=0.55, reasoning=0.15, transfer=0.30), verify, transfer)
    expected = 0.55 * 1.54 + 0.15 * reasoning + 0.30 * transfer_route
    # L-R: large.call(120, 200) = 0.01 + 0.2 + 0.68 + (0.03 + 19.93) = 20.82
    assert p["mai_s"] == pytest.approx(expected) and p["large_r_s"] == pytest.approx(20.82)
    assert p["speedup"] == pytest.approx(20.82 / expected)


def _call(role, model, mode, prompt, outputs, cached=0):
    return dict(role=role, model=model, mode=mode, result=dict(input_tokens=prompt, output_tokens=outputs,
                                                               cached_tokens=cached))


def test_a_recorded_run_call_by_call(tmp_path, costs):
    trace = [_call("small", "2B", "simple", 100, 4), _call("large", "8B", "simple", 100, 4),
             _call("small", "2B", "think", 120, 50), _call("small", "2B", "answer", 190, 5, cached=170)]
    rows = [dict(key="a", benchmark="b", system="MAI", kind="MAI", route="reasoning", trace=trace, latency=4.0),
            dict(key="c", benchmark="b", system="8B-R", kind="large-R", input_tokens=120, output_tokens=200,
                 cached_tokens=0, latency=20.0)]
    run = _write_run(tmp_path / "10", rows, dict(small="qwen3-vl-2b", large="qwen3-vl-8b"))
    out = {(r["benchmark"], r["system"]): r for r in lm.predict_run(run, costs)}
    assert out["b", "MAI"]["predicted_s"] == pytest.approx(1.54 + 2.26 + 0.25)
    assert out["b", "MAI"]["error_pct"] == pytest.approx(100 * (4.05 - 4.0) / 4.0)
    assert out["b", "8B-R"]["predicted_s"] == pytest.approx(20.82)
    q = lm.query_from_rows(rows + [dict(kind="Full RT", trace=[_call("large", "8B", "transfer", 150, 4)])],
                           lm.run_labels(dict(small="qwen3-vl-2b", large="qwen3-vl-8b")))
    assert (q.prompt, q.think_prompt, q.reasoning_tokens, q.suffix, q.transfer_prompt) == (100, 120, 50, 20, 150)
    assert q.preprocess is None  # these calls recorded no times: the profile's preprocessing is used
    assert q.large_reasoning_tokens == 200


def test_predicts_a_forced_route_cascade_run(tmp_path, experiment):
    """03 at two prompt lengths, then 10_mai with forced routes and that profile: every route takes its
    real calls at forced lengths, and Table 10 puts the prediction beside the measurement."""
    common = ["--wandb", "disabled", "--out", str(tmp_path / "runs"), "--report-dir", str(tmp_path)]
    experiment("03_stage_profiling").main(["--preset", "cpu", "--image-size", "64x64", "--question-tokens", "4,40",
                                           "--output-tokens", "2,4", "--warmup", "0", "--runs", "1", *common])
    profile = tmp_path / "runs" / "03_stage_profiling" / "cpu"
    experiment("10_mai").main(["--preset", "cpu", "--limit", "3", "--benchmarks", "synth-pope", "--think-tokens", "4",
                               "--simple-tokens", "2", "--answer-tokens", "3", "--run-name", "forced",
                               "--force-routes", "simple=0.4,reasoning=0.3,transfer=0.3",
                               "--latency-profile", str(profile), *common])
    run = tmp_path / "runs" / "10_mai" / "forced"
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    fractions = dict(simple=0.4, reasoning=0.3, transfer=0.3)
    modes = {("answer", "simple"): ["simple", "simple"], ("answer", "reasoning"): ["simple", "simple", "think", "answer"],
             ("answer", "transfer"): ["simple", "simple", "think", "answer", "transfer"],
             ("reasoning", "simple"): ["simple", "simple"], ("reasoning", "reasoning"): ["simple", "simple", "think"],
             ("reasoning", "transfer"): ["simple", "simple", "think", "transfer"]}
    limits = dict(simple=2, think=4, answer=3, transfer=2)
    mai = [r for r in rows if r["kind"] == "MAI"]
    assert len(mai) == 6 and not any(r["error"] for r in rows)  # 3 examples x both verification variants
    for r in mai:
        assert r["route"] == r["forced_route"] == draw_route(r["example_id"], fractions, 0)
        assert [c["mode"] for c in r["trace"]] == modes[r["verify"], r["route"]]
        assert all(c["result"]["output_tokens"] == limits[c["mode"]] for c in r["trace"])
        answer = [c["result"] for c in r["trace"] if c["mode"] == "answer"]
        assert all(a["cached_tokens"] > 0 for a in answer)  # the second stage continues the kept cache
    assert all(r["output_tokens"] == 4 for r in rows if r["kind"] in ("large-R", "small-R"))  # forced baselines
    table = (tmp_path / "paper_tables" / "table10_mai.cpu.md").read_text()
    assert "routes forced" in table.splitlines()[0] and "Routes forced" in table.splitlines()[2]
    assert "predicted_s" in table
    assert "MAI verify=answer: at the forced fractions" in table and "MAI verify=reasoning: at the forced" in table
    costs = lm.profile(profile)
    assert set(costs) == {"tiny-small", "tiny-large"}
    predicted = {(r["benchmark"], r["system"]): r for r in lm.predict_run(run, costs)}
    systems = {s for _, s in predicted}
    assert {"tiny-large-S", "tiny-large-R", "tiny-small-R", "Full RT"} <= systems
    assert sum(s.startswith("MAI ") for s in systems) == 2  # one row per verification variant
    assert all(r["predicted_s"] > 0 and r["measured_s"] > 0 for r in predicted.values())


def test_profiles_pool_and_preprocessing_comes_from_the_run(tmp_path):
    # Two 03 runs with one prompt length each (say, before and after a 10_mai run) fit one line together.
    a = _write_run(tmp_path / "a", _profile_rows("2B", SMALL, prompts=(100,)) + _profile_rows("8B", LARGE, prompts=(100,)))
    b = _write_run(tmp_path / "b", _profile_rows("2B", SMALL, prompts=(300,)) + _profile_rows("8B", LARGE, prompts=(300,)))
    costs = lm.profile(a, b)
    assert (costs["2B"].prefill_base, costs["2B"].prefill_per_token) == pytest.approx((0.05, 0.001))
    # A run's measured preprocessing (0.11 s a fresh call instead of the profile's 0.01) on each fresh call:
    # two at the Simple stage, one more when reasoning (the second stage continues the cache), one at transfer.
    q = dataclasses.replace(Q, preprocess=0.11)
    routes = lm.route_latency(costs["2B"], costs["8B"], q, "answer", "full")
    assert routes == pytest.approx(dict(simple=1.54 + 0.2, reasoning=1.54 + 2.26 + 0.25 + 0.3,
                                        transfer=1.54 + 2.26 + 0.25 + 1.34 + 0.4))
