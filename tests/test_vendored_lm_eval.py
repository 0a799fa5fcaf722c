"""Our bbh/cot_zeroshot, bbh/zeroshot and gsm8k scoring against lm-evaluation-harness's own filter and metric
code, where it is installed (`bash scripts/setup.sh --lmms` installs lm-eval 0.4.13 without its dependencies).

We match lm-eval at commit 4e7e0d47f33bc71070c1d38394bafbb52b117163 (mai.benchmarks._bbh.LM_EVAL_COMMIT);
0.4.13 is the first release after it. Of the code run here, 0.4.13 differs from that commit in one place
only: MultiChoiceRegexFilter's option-text fallback tries longer option texts first (so that an option
that is a prefix of another cannot shadow it). The date questions below have no option that is a prefix of
another, where both versions read the same; RegexFilter, MapRegexFilter, NumberParseRegexFilter, the task
yaml files and exact_match_hf_evaluate are the same in both (compared file by file).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval not installed: bash scripts/setup.sh --lmms")
pytest.importorskip("word2number", reason="lm-eval's NumberParseRegexFilter needs word2number")

from lm_eval.api.metrics import exact_match_hf_evaluate  # noqa: E402
from lm_eval.filters.extraction import RegexFilter  # noqa: E402

from mai.benchmarks import get_benchmark  # noqa: E402
from mai.benchmarks._bbh import COT_STRICT_PATTERN, IGNORE, map_regex, multiple_choice, number, regex_filter  # noqa: E402
from mai.benchmarks._bbh import exact_match as bbh_exact  # noqa: E402
from mai.benchmarks import gsm8k as ours_gsm8k  # noqa: E402
from mai.benchmarks.bbh_sports_understanding import PLAUSIBLE  # noqa: E402

TASKS = Path(lm_eval.__file__).parent / "tasks"


def _utils(kind: str):
    spec = importlib.util.spec_from_file_location(f"lm_eval_bbh_{kind}_utils", TASKS / "bbh" / kind / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _apply(filt, responses, docs=None):
    return [out[0] for out in filt.apply([[r] for r in responses], docs or [{}] * len(responses))]


RESPONSES = ["12", "twelve", "1. Oven\n2. Stove\nSo the answer is 12.", "I count 3 apples and 4 pears: 7 fruits.",
             "no number", "-3", "It is not plausible. So the answer is no.", "Yes, plausible. The answer is yes.",
             "Implausible", "So the answer is (B).", "(A) or (C)? The answer: (C)", "She makes $1,234.50.",
             "#### 42", "The answer is 17. Then 18", "seventeen and twenty", "yes and no and yes"]
DATE_Q = "When?\nOptions:\n(A) 12/14/2026\n(B) 12/15/2026\n(C) 01/01/1999"
DATE_RESPONSES = ["(B)", "It is 12/15/2026.", "Not (A). So the answer is (B).", "Answer: C", "none", "01/01/1999 or (A)"]


@pytest.mark.parametrize("select", [0, -1])
def test_number_filter(select):
    theirs = _utils("cot_zeroshot").NumberParseRegexFilter(regex_pattern="([-0-9]+)", group_select=select)
    assert [number(r, select) for r in RESPONSES] == _apply(theirs, RESPONSES)


@pytest.mark.parametrize("select", [0, -1])
def test_map_regex_filter(select):
    theirs = _utils("cot_zeroshot").MapRegexFilter(regex_pattern_to_value=PLAUSIBLE, group_select=select,
                                                   ignore_case=True)
    assert [map_regex(r, PLAUSIBLE, select) for r in RESPONSES] == _apply(theirs, RESPONSES)


@pytest.mark.parametrize("select", [0, -1])
def test_multiple_choice_filter(select):
    theirs = _utils("cot_zeroshot").MultiChoiceRegexFilter(regex_pattern=r"(\([A-Z]\))", group_select=select,
                                                           ignore_case=True, ignore_punctuation=True)
    ours = [multiple_choice(r, DATE_Q, select) for r in DATE_RESPONSES]
    assert ours == _apply(theirs, DATE_RESPONSES, [{"input": DATE_Q}] * len(DATE_RESPONSES))


def test_cot_strict_and_gsm8k_regexes():
    for pattern, select in ((COT_STRICT_PATTERN, 0), (ours_gsm8k.FLEXIBLE, -1), (ours_gsm8k.STRICT, 0),
                            (ours_gsm8k.COT_STRICT, 0)):
        theirs = _apply(RegexFilter(regex_pattern=pattern, group_select=select), RESPONSES)
        assert [regex_filter(pattern, r, select) for r in RESPONSES] == theirs, pattern


def test_exact_match_with_each_task_s_ignores():
    pairs = [("$1,234.50.", "#### 1234.50"), ("18.", "Janet ... #### 18"), ("(B).", "(B)"), ("Yes", "yes"),
             ('"12"', "12"), ("12 ", "12")]
    for prediction, reference in pairs:
        bbh = exact_match_hf_evaluate([prediction], [reference], regexes_to_ignore=list(IGNORE), ignore_case=True)
        gsm = exact_match_hf_evaluate([prediction], [reference], regexes_to_ignore=list(ours_gsm8k.IGNORE),
                                      ignore_case=True)
        assert bbh_exact(prediction, reference) == bool(bbh["exact_match"]), (prediction, reference)
        assert ours_gsm8k.exact_match(prediction, reference) == bool(gsm["exact_match"]), (prediction, reference)


def test_a_reasoning_is_scored_at_its_conclusion():
    # end to end on a real benchmark object: what lm-eval's cot_zeroshot pipeline would score
    bench = get_benchmark("bbh_object_counting")
    theirs = _utils("cot_zeroshot").NumberParseRegexFilter(regex_pattern="([-0-9]+)", group_select=-1)
    said = "1. Oven\n2. Stove\nSo the answer is 12."
    answer = _apply(theirs, [said])[0]
    expected = exact_match_hf_evaluate([answer], ["12"], regexes_to_ignore=list(IGNORE), ignore_case=True)
    assert bench.score(said, ["12"]) == expected["exact_match"] == 1.0
