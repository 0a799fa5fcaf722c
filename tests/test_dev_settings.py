"""The dev-split rules that chose cpu-real's Think prompt and reasoning budget (analysis/dev_settings.decide)."""
import pandas as pd

from analysis.dev_settings import decide


def _frame(rows):
    return pd.DataFrame([dict(model="0.5B", think_prompt=s, benchmark=b, R_answered_cue=a, R_minus_S=g, R_tokens=t)
                         for s, b, a, g, t in rows])


def test_a_prompt_that_answers_without_reasoning_loses_to_one_that_reasons():
    df = _frame([("instruction", "gsm8k", 100, 0, 8), ("instruction", "bbh_object_counting", 100, 0, 8),
                 ("fewshot-cot", "gsm8k", 90, 10, 200), ("fewshot-cot", "bbh_object_counting", 95, 20, 90),
                 ("zeroshot-cot", "gsm8k", 30, 25, 300), ("zeroshot-cot", "bbh_object_counting", 95, 5, 250)])
    chosen = decide(df, {"fewshot-cot": [100] * 19 + [300]})
    assert chosen["think_prompt"] == "fewshot-cot"  # zeroshot-cot gains more on gsm8k but rarely names an answer
    assert chosen["think_tokens"] == 256  # 19 of 20 finish within 256: 95%
    assert decide(df, {"fewshot-cot": [100] * 18 + [300] * 2})["think_tokens"] == 384


def test_when_no_prompt_is_eligible_the_best_answered_still_ranks_by_its_gain():
    df = _frame([("a", "gsm8k", 40, 5, 100), ("b", "gsm8k", 45, 1, 100)])
    assert decide(df, {})["think_prompt"] == "a"


def test_the_frozen_settings_are_the_ones_the_committed_dev_rows_choose():
    """mai.cli's cpu-real settings were frozen from the dev split (runs/07_prompt_modes/dev-*) before any test
    row: the committed dev rows must still choose them."""
    from pathlib import Path

    from analysis.dev_settings import dev_runs, reasoning_lengths, summarize
    from mai import cli

    runs = dev_runs(Path(__file__).resolve().parent.parent / "runs")
    chosen = decide(summarize(runs), reasoning_lengths(runs))
    assert (chosen["think_prompt"], chosen["think_tokens"]) == (cli.REAL_THINK_PROMPT, cli.REAL_THINK_TOKENS)
