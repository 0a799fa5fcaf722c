"""The questions that ship with the repository (mai/assets/bbh, mai/assets/gsm8k): sha256-checked reads, the
fixed dev/test split, the Think prompt's styles, and scoring as lm-evaluation-harness scores bbh/cot_zeroshot
and gsm8k (expected values worked out by hand from those tasks' yaml at mai.benchmarks._bbh.LM_EVAL_COMMIT;
tests/test_vendored_lm_eval.py runs lm-eval's own filters where it is installed)."""
from __future__ import annotations

import shutil

import pytest

from mai import MaiEnvironmentError, MaiError, prompts
from mai.benchmarks import _vendored, get_benchmark, load_benchmark
from mai.benchmarks._bbh import cot_strict, map_regex, multiple_choice, number
from mai.benchmarks.bbh_sports_understanding import PLAUSIBLE
from mai.benchmarks.gsm8k import NumberMatcher, flexible

VENDORED = ("bbh_sports_understanding", "bbh_object_counting", "bbh_date_understanding", "gsm8k")


@pytest.mark.parametrize("name", VENDORED)
def test_dev_and_test_are_disjoint_and_fixed(name):
    bench = get_benchmark(name)
    dev, _ = bench.load(None, 0, None, "dev")
    test, _ = bench.load(None, 0, None, "test")
    assert len(dev) == 50
    assert len(test) == (1319 if name == "gsm8k" else 200)
    if name != "gsm8k":  # GSM8K's dev comes from its train file, its test from the test file
        assert {e.meta["index"] for e in dev}.isdisjoint(e.meta["index"] for e in test)
        assert len({e.meta["index"] for e in dev} | {e.meta["index"] for e in test}) == 250
    # --seed and --limit subsample within a split and never move a question across it
    assert {e.id for e in bench.load(20, 3, None, "dev")[0]} <= {e.id for e in dev}
    assert all(e.id.startswith(f"{name}-dev-") for e in dev)


def test_the_split_is_the_one_fixed_before_any_run():
    # The first dev indices of a 250-question task under SPLIT_SEED: a change of seed or method fails here.
    first = _vendored.split_indices(250, "dev")
    assert first == _vendored.split_indices(250, "dev") == sorted(first)  # deterministic, in file order
    assert first[:6] == [3, 4, 5, 6, 11, 19]


def test_a_changed_file_is_refused(tmp_path, monkeypatch):
    shutil.copytree(_vendored.ASSETS / "bbh", tmp_path / "bbh")
    path = tmp_path / "bbh" / "object_counting.json"
    path.chmod(0o644)
    path.write_bytes(path.read_bytes().replace(b'"target": "8"', b'"target": "9"', 1))
    monkeypatch.setattr(_vendored, "ASSETS", tmp_path)
    with pytest.raises(MaiEnvironmentError, match="sha256 .* is not the one in SHA256SUMS"):
        get_benchmark("bbh_object_counting").load(None, 0, None, "test")


def test_data_files_and_missing_splits_are_one_line_errors():
    with pytest.raises(MaiError, match="--data-files does not apply"):
        get_benchmark("gsm8k").load(3, 0, "x.json", "test")
    with pytest.raises(MaiError, match="has no dev split"):
        load_benchmark("synth-pope", 2, 0, None, "dev")
    with pytest.raises(MaiError, match="unknown split"):
        get_benchmark("gsm8k").load(3, 0, None, "validation")


def test_exemplars_drop_the_canary_and_keep_three_solutions():
    for name in VENDORED:
        text = get_benchmark(name).exemplars()
        assert "canary" not in text and not text.startswith("-----")
        assert text.count("Q: ") == 3 and text.count(prompts.COT_CUE) == 3


def test_think_prompt_styles():
    q = "How many?"
    assert prompts.think_text(q, "instruction") == q + prompts.THINK_INSTRUCTION
    assert prompts.think_text(q, "zeroshot-cot") == "Q: How many?\nA: Let's think step by step."
    assert prompts.think_text(q, "fewshot-cot", "Q: a\nA: b") == "Q: a\nA: b\n\nQ: How many?\nA: Let's think step by step."
    with pytest.raises(ValueError, match="exemplars"):
        prompts.think_text(q, "fewshot-cot")
    # the style replaces question + instruction in a Think prompt only; Simple prompts are untouched
    assert prompts.user_text(q, "think", "\nP", think_prompt="T") == "T"
    assert prompts.user_text(q, "simple", "\nP", think_prompt="T") == q + "\nP"


# -- scoring: bbh/cot_zeroshot reads the LAST answer, bbh/zeroshot the first ------------------------------

def test_object_counting_reads_the_conclusion_of_a_reasoning():
    bench = get_benchmark("bbh_object_counting")
    reasoning = "1. Oven\n2. Stove\nNow 1 + 1 + 10 = 12. So the answer is 12."
    assert number(reasoning, 0) == "1" and number(reasoning, -1) == "12"
    assert bench.score(reasoning, ["12"]) == 1.0
    scores = bench.aggregate([dict(prediction=reasoning, references=["12"], question="")])
    assert scores == {"cot_flexible_extract": 1.0, "cot_strict_match": 1.0, "zeroshot_flexible_extract": 0.0,
                      "zeroshot_strict_match": 0.0}
    assert bench.score("7", ["7"]) == 1.0 and bench.score("seventeen", ["17"]) == 1.0


def test_sports_understanding_maps_plausible_and_takes_the_last():
    assert map_regex("Not plausible.", PLAUSIBLE, -1) == "no"
    assert map_regex("It is plausible", PLAUSIBLE, 0) == "yes"
    assert map_regex("Implausible", PLAUSIBLE, 0) == "[invalid]"  # no word boundary before "plausible"
    said = "Yes, he is a player. But hockey has no touchdowns. So the answer is no."
    assert map_regex(said, PLAUSIBLE, 0) == "yes" and map_regex(said, PLAUSIBLE, -1) == "no"
    assert get_benchmark("bbh_sports_understanding").score(said, ["no"]) == 1.0


def test_date_understanding_takes_the_last_option_named():
    bench = get_benchmark("bbh_date_understanding")
    question = "What is the date?\nOptions:\n(A) 01/02/2020\n(B) 03/04/2021"
    said = "Not (A): it is a year later. So the answer is (B)."
    assert multiple_choice(said, question, 0) == "(A)" and multiple_choice(said, question, -1) == "(B)"
    assert bench.score(said, ["(B)"], question) == 1.0
    assert cot_strict(said) == "(B)"


def test_cot_strict_match_wants_the_answer_is():
    assert cot_strict("So the answer is yes.") == "yes"
    assert cot_strict("yes") == "[invalid]"


def test_gsm8k_flexible_and_strict():
    bench = get_benchmark("gsm8k")
    assert flexible("She sells 9 eggs at $2, making $18.") == "$18."
    assert bench.score("She sells 9 eggs at $2, making $18.", ["18"]) == 1.0
    assert bench.score("1,234", ["1234"]) == 1.0
    assert bench.score("The answer is 17 and not 18", ["18"]) == 1.0  # the last number, as lm-eval reads it
    rows = [dict(prediction="So 4 * 5 = 20. The answer is 20.", references=["20"]),
            dict(prediction="#### 7", references=["7"])]
    assert bench.aggregate(rows) == {"flexible_extract": 1.0, "strict_match": 0.5, "cot_strict_match": 0.5}


def test_gsm8k_agreement_compares_values():
    m = NumberMatcher("")
    assert m.agree(m.read("$1,000.00"), m.read("The answer is 1000."))
    assert not m.agree(m.read("18"), m.read("19"))
    assert m.read("no number here") == ""
