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


def _simple_frame(rows):
    return pd.DataFrame([dict(simple_prompt=s, model=m, benchmark=b, S_readable=r, S_hit_probe_cap=c, S_accuracy=a,
                              S_input_tokens=t) for s, m, b, r, c, a, t in rows])


def test_simple_rule_takes_the_best_eligible_style_and_the_smallest_safe_cap():
    from analysis.dev_settings import decide_simple

    df = _simple_frame([("post-prompt", "0.5B", "gsm8k", 98, 14, 10, 100), ("post-prompt", "1.5B", "gsm8k", 98, 90, 40, 100),
                        ("format", "0.5B", "gsm8k", 100, 2, 8, 106), ("format", "1.5B", "gsm8k", 95, 4, 30, 106),
                        ("fewshot-direct", "0.5B", "gsm8k", 60, 0, 50, 220),
                        ("fewshot-direct", "1.5B", "gsm8k", 100, 0, 60, 220)])
    # post-prompt is more accurate but runs into the cap; fewshot-direct is unreadable for the 0.5B.
    lengths = {("format", "0.5B", "gsm8k"): [3] * 96 + [20] * 3 + [None],
               ("format", "1.5B", "gsm8k"): [3] * 100, ("post-prompt", "0.5B", "gsm8k"): [None] * 100}
    chosen = decide_simple(df, lengths)
    assert chosen["styles"] == {"gsm8k": "format"} and not chosen["failing"]
    assert chosen["simple_tokens"] == 8  # 4% of the 0.5B's answers are longer than 8: within the 5% allowed
    lengths[("format", "0.5B", "gsm8k")] = [3] * 90 + [20] * 9 + [None]
    assert decide_simple(df, lengths)["simple_tokens"] == 24  # 10% are over 8 and 16, 1% over 24


def test_simple_rule_names_a_benchmark_no_style_serves():
    from analysis.dev_settings import decide_simple

    df = _simple_frame([("post-prompt", "0.5B", "gsm8k", 98, 14, 10, 100), ("post-prompt", "1.5B", "gsm8k", 98, 9, 40, 100),
                        ("format", "0.5B", "gsm8k", 100, 6, 8, 106), ("format", "1.5B", "gsm8k", 95, 4, 30, 106)])
    chosen = decide_simple(df, {})
    assert chosen["styles"] == {"gsm8k": "format"} and chosen["failing"] == ["gsm8k"]  # 6% at cap beats 14%


def test_a_prefixed_answer_is_not_readable():
    """'A: yes' is scored yes but would be compared as 'a: yes': it does not count as readable."""
    from analysis.dev_settings import _readable
    from mai.benchmarks import get_benchmark

    sports = get_benchmark("bbh_sports_understanding")
    assert _readable(sports, "yes", "q") == "yes" and _readable(sports, "A: yes", "q") == ""
    assert _readable(get_benchmark("gsm8k"), "The total is $1,250.", "q") == repr(1250.0)
    assert _readable(get_benchmark("gsm8k"), "none", "q") == ""


def test_the_frozen_simple_settings_are_the_ones_the_committed_dev_rows_choose():
    """mai.cli's Simple prompt per task and its cap were frozen from runs/07_prompt_modes/dev-*-simple-* before the
    test rows made under them: the committed dev rows must still choose them."""
    from pathlib import Path

    from analysis.dev_settings import decide_simple, dev_runs, summarize_simple
    from mai import cli

    df, lengths = summarize_simple(dev_runs(Path(__file__).resolve().parent.parent / "runs", simple=True))
    chosen = decide_simple(df, lengths)
    assert cli.simple_prompt_styles(cli.REAL_SIMPLE_PROMPT, cli.REAL_BENCHMARKS) == chosen["styles"]
    assert cli.REAL_SIMPLE_TOKENS == chosen["simple_tokens"]
