"""scripts/check_batch_ties.py: at the first token where a batch-1 and a batched output part, the logits of the
prompt plus their common prefix, from the prompt generate itself prefills (tiny fp32 model, a vendored GSM8K
question)."""
import importlib.util
import json
from pathlib import Path

import pytest
import torch

from mai.benchmarks import get_benchmark, load_benchmark
from mai.evaluate import request_for
from mai.generation import HFGenerator

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("check_batch_ties", ROOT / "scripts" / "check_batch_ties.py")
ties = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ties)


def test_bf16_spacing_is_the_gap_to_the_next_bf16_number():
    for x in (0.3, 1.0, 7.9, 20.0, -33.5):
        up = torch.tensor(abs(x)).bfloat16()
        nxt = torch.nextafter(up, torch.tensor(float("inf"), dtype=torch.bfloat16))
        assert ties.bf16_spacing(x) == float(nxt) - float(up)


def test_shared_prefix_stops_at_a_word_boundary():
    assert ties.shared_prefix("So the answer is 12.", "So the answer is 13.") == "So the answer is"
    assert ties.shared_prefix("Klas Jan", "Klaas Jan") == ""
    assert ties.shared_prefix("yes", "yes.") is None  # one text the other's start: no tie to measure


def _write_run(path: Path, rows: list[dict]):
    path.mkdir()
    (path / "config.json").write_text(json.dumps(dict(
        small="tiny-small", large="tiny-large", benchmarks=["gsm8k"], split="test", seed=0, think_tokens=12,
        simple_tokens=8, think_prompt=None, attn="sdpa")))
    (path / "results.jsonl").write_text("".join(json.dumps(dict(r, key=f"{r['example_id']}|{r['system']}")) + "\n"
                                                for r in rows))


def _write_speculative_run(path: Path, rows: list[dict]):
    """A 12_speculative_decoding run: its config also names the target and its prompt mode."""
    _write_run(path, rows)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps(dict(config, target="tiny-large", mode="think")))


def _pieces_join(tok, ids):
    return "".join(tok.decode([t]) for t in ids) == tok.decode(ids)


def _parting(tiny_large):
    """A vendored question, the tiny model's greedy output, and a step k of it where a rival text takes the
    runner-up token instead: what a batched run's bf16 tie would look like."""
    ex = load_benchmark("gsm8k", 2, 0, None, "test")[0]
    gen = HFGenerator(tiny_large)
    request = request_for(ex, get_benchmark("gsm8k"), [], "think", 12)
    prompt = gen.encode(request)["input_ids"]
    tok = tiny_large.tokenizer
    greedy = tok(gen.generate(request).text, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():  # every position's logits after the prompt and greedy's tokens before it
        logits = tiny_large.model(input_ids=torch.cat([prompt, torch.tensor([greedy])], 1)).logits[0].float()
    n = prompt.shape[1]

    def usable(k):
        """Greedy's step k with the runner-up as the batched text's token, where the script will find it: the
        texts' shared prefix re-tokenizes to greedy's own tokens and every piece decodes on its own."""
        rival = int(logits[n - 1 + k].topk(2).indices[1])
        single, batched = tok.decode(greedy[:k + 1]), tok.decode(greedy[:k]) + tok.decode([rival])
        prefix = ties.shared_prefix(single, batched)
        ids = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
        good = (prefix is not None and ids == greedy[:len(ids)] and _pieces_join(tok, greedy[:k + 1])
                and tok.decode([rival]) and tok.decode([greedy[k]])[:1] != tok.decode([rival])[:1])
        return (single, batched, rival) if good else None

    found = next(((k, u) for k in range(1, len(greedy)) for u in [usable(k)] if u), None)
    if found is None:
        pytest.fail(f"no usable step in the tiny model's output {greedy}")
    k, (single_text, batched_text, rival) = found
    margin = float(logits[n - 1 + k, greedy[k]] - logits[n - 1 + k, rival])
    return ex, k, single_text, batched_text, (tok.decode([greedy[k]]), tok.decode([rival])), margin


def _assert_measured_at(case: dict, k: int, tokens: tuple[str, str], margin: float):
    # The same fp32 weights at batch 1: decoding follows greedy to step k, whose top-1 is greedy's own token,
    # and the gap to the other text's token is the runner-up margin of an independent forward.
    fp32 = case["fp32"]
    assert fp32["position"] == k
    assert (fp32["single_token"], fp32["batched_token"]) == tokens
    assert fp32["top1_is"] == "single"
    assert fp32["gap"] == pytest.approx(margin, abs=1e-4) and fp32["top2_margin"] == pytest.approx(margin, abs=1e-4)


def test_the_tie_is_measured_where_the_outputs_part(tiny_large, tmp_path):
    ex, k, single_text, batched_text, tokens, margin = _parting(tiny_large)
    row = dict(example_id=ex.id, system="large-R", kind="large-R")
    single = [dict(row, prediction=single_text), dict(row, example_id="same", prediction="x"),
              dict(row, example_id="prefix", prediction="a b")]
    batched = [dict(row, prediction=batched_text), dict(row, example_id="same", prediction="x"),
               dict(row, example_id="prefix", prediction="a b c")]
    _write_run(tmp_path / "single", single)
    _write_run(tmp_path / "batched", batched)
    out = tmp_path / "ties.json"
    ties.main(["--single", str(tmp_path / "single"), "--batched", str(tmp_path / "batched"), "--kinds", "large-R",
               "--dtypes", "fp32", "--threads", "1", "--json", str(out)])
    report = json.loads(out.read_text())
    cases = {c["example_id"]: c for c in report["cases"]}
    assert set(cases) == {ex.id, "prefix"}  # equal outputs are not cases
    assert cases["prefix"]["prefix_only"] and "fp32" not in cases["prefix"]
    _assert_measured_at(cases[ex.id], k, tokens, margin)
    summary = report["summary"]["large-R"]
    assert summary["queries"] == 2 and summary["prefix_only"] == 1 and summary["fp32"]["measured"] == 1


def test_speculative_mode_pairs_the_target_alone_with_its_speculative_text(tiny_large, tmp_path):
    ex, k, alone_text, speculative_text, tokens, margin = _parting(tiny_large)
    rows = [dict(example_id=ex.id, system="1.5B-R", kind="target", prediction=alone_text),
            dict(example_id=ex.id, system="1.5B-R + draft", kind="speculative", prediction=speculative_text),
            dict(example_id=ex.id, system="MAI", kind="MAI", prediction="other"),
            dict(example_id="same", system="1.5B-R", kind="target", prediction="x"),
            dict(example_id="same", system="1.5B-R + draft", kind="speculative", prediction="x")]
    _write_speculative_run(tmp_path / "spec", rows)
    out = tmp_path / "ties.json"
    ties.main(["--speculative", str(tmp_path / "spec"), "--dtypes", "fp32", "--threads", "1", "--json", str(out)])
    report = json.loads(out.read_text())
    assert [(c["example_id"], c["kind"], c["model"]) for c in report["cases"]] == [(ex.id, "speculative", "tiny-large")]
    _assert_measured_at(report["cases"][0], k, tokens, margin)
    assert report["produced_by"]["speculative"].endswith("spec")


def test_rows_with_token_ids_are_measured_at_the_first_differing_id(tiny_large, tmp_path):
    # The ids route must not read the text: these predictions part at their first character, so the text route
    # would measure step 0. With ids, the step is where greedy's ids and the rival's part, at any step k.
    ex = load_benchmark("gsm8k", 2, 0, None, "test")[0]
    gen = HFGenerator(tiny_large)
    request = request_for(ex, get_benchmark("gsm8k"), [], "think", 12)
    prompt = gen.encode(request)["input_ids"]
    greedy = gen.generate(request).output_ids
    k = len(greedy) // 2
    with torch.inference_mode():
        logits = tiny_large.model(input_ids=torch.cat([prompt, torch.tensor([greedy[:k]])], 1)).logits[0, -1].float()
    top = logits.topk(2)
    assert int(top.indices[0]) == greedy[k]
    rival = int(top.indices[1])
    rows = [dict(example_id=ex.id, system="1.5B-R", kind="target", prediction="a", output_ids=greedy[:k + 1]),
            dict(example_id=ex.id, system="1.5B-R + draft", kind="speculative", prediction="b",
                 output_ids=greedy[:k] + [rival]),
            dict(example_id="cut", system="1.5B-R", kind="target", prediction="c d", output_ids=greedy[:3]),
            dict(example_id="cut", system="1.5B-R + draft", kind="speculative", prediction="c", output_ids=greedy[:2])]
    _write_speculative_run(tmp_path / "spec", rows)
    out = tmp_path / "ties.json"
    ties.main(["--speculative", str(tmp_path / "spec"), "--dtypes", "fp32", "--threads", "1", "--json", str(out)])
    cases = {c["example_id"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["cut"]["prefix_only"] and "fp32" not in cases["cut"]  # one output the other's start, by ids
    case = cases[ex.id]
    assert case["parted_by"] == "token ids" and not case["prefix_only"]
    fp32 = case["fp32"]
    tok = tiny_large.tokenizer
    assert fp32["position"] == k and fp32["top1_is"] == "single"
    assert (fp32["single_token"], fp32["batched_token"]) == (tok.decode([greedy[k]]), tok.decode([rival]))
    assert fp32["gap"] == pytest.approx(float(top.values[0] - top.values[1]), abs=1e-4)
