"""lmms-eval-identical scoring (mai.metrics and each benchmark's module), answer extraction, agreement.

Expected values are worked out by hand from lmms-eval's source at 75571cfe (chartqa/utils.py,
api/metrics.py anls, pope/utils.py, realworldqa/utils.py, api/task.py, api/reasoning.py) and, for
RealWorldQA's older scoring, at d0c1eae7 (realworldqa.yaml filters).  The issue's own examples are
in test_lmms_eval_scoring.py.
"""

import pytest

from mai import MaiError
from mai.benchmarks import BENCHMARKS, get_benchmark
from mai.benchmarks.pope import pope_metrics
from mai.benchmarks.realworldqa import RealWorldQA
from mai.metrics import anls, levenshtein, relaxed_correctness

CHARTQA, POPE, INFOVQA, REALWORLDQA, MMBENCH = map(get_benchmark, ("chartqa", "pope", "infovqa", "realworldqa", "mmbench"))
RWQA_D0C1EAE7 = RealWorldQA(scoring="d0c1eae7")


def agree(a, b, bench, question="", rule="paper"):
    """The cascade's agreement of two raw plain answers under the benchmark's rule."""
    m = bench.matcher(question, rule)
    return m.agree(m.read(a), m.read(b))


def _now(prediction, target, question=None):
    """RealWorldQA's score at 75571cfe of one raw output against one target."""
    return REALWORLDQA.score(prediction, [target], question) == 1.0


def _old(prediction, target, question=None):
    """The same at d0c1eae7."""
    return RWQA_D0C1EAE7.score(prediction, [target], question) == 1.0


# ---------------------------------------------------------------------------
# ChartQA relaxed correctness
# ---------------------------------------------------------------------------


class TestRelaxedCorrectness:
    def test_percentages(self):
        assert relaxed_correctness("50%", "0.5")
        assert relaxed_correctness("0.5", "50%")
        assert relaxed_correctness("50%", "50%")
        assert not relaxed_correctness("50", "50%")  # 50 vs 0.5

    def test_five_percent_boundary(self):
        assert relaxed_correctness("105", "100")  # exactly 5%: inclusive
        assert relaxed_correctness("95", "100")
        assert not relaxed_correctness("105.1", "100")
        assert not relaxed_correctness("94.9", "100")
        assert relaxed_correctness("110", "100", max_relative_change=0.1)

    def test_zero_target_is_string_comparison(self):
        assert not relaxed_correctness("0", "0.0")
        assert not relaxed_correctness("0.0", "0")
        assert relaxed_correctness("0", "0")
        assert not relaxed_correctness("0.001", "0")

    def test_case_insensitive(self):
        assert relaxed_correctness("Yes", "yes")
        assert relaxed_correctness("PARIS", "Paris")

    def test_commas_not_stripped(self):
        assert not relaxed_correctness("1,000", "1000")
        assert not relaxed_correctness("1000", "1,000")
        assert relaxed_correctness("1,000", "1,000")  # string equality

    def test_non_numeric(self):
        assert not relaxed_correctness("Paris", "London")
        assert not relaxed_correctness("five", "5")  # prediction does not parse
        assert not relaxed_correctness("5", "five")  # target does not parse
        assert relaxed_correctness("-3.2", "-3.3")  # 0.1/3.3 = 3.0%

    def test_no_stripping_inside_relaxed_correctness(self):
        # float() tolerates whitespace, string equality does not, and "50% " does not end with "%".
        assert relaxed_correctness(" 5 ", "5")
        assert not relaxed_correctness("yes ", "yes")
        assert not relaxed_correctness("50% ", "0.5")

    def test_score_strips_prediction_like_lmms_eval_task_py(self):
        assert CHARTQA.score("yes \n", ["yes"]) == 1.0
        assert CHARTQA.score(" 50% ", ["0.5"]) == 1.0
        assert CHARTQA.score("1,000", ["1000"]) == 0.0

    def test_plain_trailing_period_scored_as_lmms_eval(self):
        # No output is cleaned: "Yes." != "Yes", as in lmms-eval, with or without a think block.
        assert CHARTQA.score("Yes.", ["Yes"]) == 0.0
        assert CHARTQA.score("<think>look</think>Yes.", ["Yes"]) == 0.0
        assert CHARTQA.score("<think>look</think> Yes\n", ["Yes"]) == 1.0


# ---------------------------------------------------------------------------
# InfoVQA ANLS
# ---------------------------------------------------------------------------


class TestAnls:
    def test_levenshtein(self):
        assert levenshtein("kitten", "sitting") == 3
        assert levenshtein("", "abc") == 3
        assert levenshtein("abc", "") == 3
        assert levenshtein("flaw", "lawn") == 2
        assert levenshtein("same", "same") == 0

    def test_exact(self):
        assert anls("Paris", ["Paris"]) == pytest.approx(1.0)

    def test_near_miss_above_threshold(self):
        assert anls("color", ["colour"]) == pytest.approx(1 - 1 / 6)

    def test_below_threshold_is_zero(self):
        assert anls("abc", ["xyz"]) == 0.0
        assert anls("abcd", ["abxyzw"]) == 0.0  # 1 - 4/6 = 0.333 < 0.5

    def test_threshold_boundary_is_kept(self):
        # 1 - 1/2 = 0.5 is not below 0.5, so it is kept.
        assert anls("ab", ["ax"]) == pytest.approx(0.5)

    def test_multiple_references_take_best(self):
        assert anls("color", ["colour", "color"]) == pytest.approx(1.0)
        assert anls("colr", ["xx", "color"]) == pytest.approx(1 - 1 / 5)

    def test_case_and_whitespace_normalised(self):
        assert anls("  New   York ", ["new york"]) == pytest.approx(1.0)
        assert anls("PARIS", ["paris"]) == pytest.approx(1.0)

    def test_denominator_uses_raw_lengths(self):
        # Normalised "new yorkk" vs "new york": distance 1; raw lengths 10 and 8 -> 1 - 1/10.
        assert anls("NEW  YORKK", ["new york"]) == pytest.approx(0.9)
        # len("ß".upper()) == 2, as lmms-eval measures: 1 - 1/2.
        assert anls("ß", ["x"]) == pytest.approx(0.5)

    def test_empty_strings(self):
        assert anls("", [""]) == pytest.approx(1.0)  # zero denominator -> distance 0
        assert anls("", ["abc"]) == 0.0
        assert anls("abc", [""]) == 0.0
        assert anls("abc", []) == 0.0

    def test_score_and_aggregate(self):
        assert INFOVQA.score(" colour\n", ["color"]) == pytest.approx(1 - 1 / 6)
        rows = [
            {"prediction": "Paris", "references": ["paris"]},
            {"prediction": "color", "references": ["colour", "hue"]},
            {"prediction": "nothing", "references": ["abc"]},
        ]
        assert INFOVQA.aggregate(rows) == {"anls": pytest.approx((1 + (1 - 1 / 6) + 0) / 3)}


# ---------------------------------------------------------------------------
# POPE
# ---------------------------------------------------------------------------


class TestPope:
    def test_confusion_matrix(self):
        preds = ["yes", "Yes ", "no", "NO", "yes", "maybe", "no", "yes"]
        gts = ["yes", "no", "yes", "no", "yes", "yes", "no", "no"]
        # TP = 2 (0, 4), FP = 2 (1, 7), FN = 1 (2; "maybe" is not an FN), correct = 4 (0, 3, 4, 6).
        m = pope_metrics(preds, gts)
        assert set(m) == {"accuracy", "precision", "recall", "f1", "yes_ratio"}
        assert m["accuracy"] == pytest.approx(4 / 8, abs=1e-9)
        assert m["precision"] == pytest.approx(2 / 4, abs=1e-9)
        assert m["recall"] == pytest.approx(2 / 3, abs=1e-9)
        assert m["f1"] == pytest.approx(4 / 7, abs=1e-9)
        assert m["yes_ratio"] == pytest.approx(4 / 8, abs=1e-9)  # ground truth, not predictions

    def test_yes_ratio_is_over_ground_truth(self):
        m = pope_metrics(["no", "no", "no"], ["yes", "yes", "no"])
        assert m["yes_ratio"] == pytest.approx(2 / 3, abs=1e-9)

    def test_all_no_predictions_zero_division(self):
        m = pope_metrics(["no", "no", "no"], ["yes", "no", "yes"])
        assert m["accuracy"] == pytest.approx(1 / 3, abs=1e-9)
        assert m["precision"] == 0.0
        assert m["recall"] == 0.0
        assert m["f1"] == 0.0

    def test_no_positive_ground_truth(self):
        m = pope_metrics(["yes", "yes"], ["no", "no"])
        assert m["precision"] == 0.0
        assert m["recall"] == 0.0  # TP + FN == 0
        assert m["yes_ratio"] == 0.0

    def test_invalid_ground_truth(self):
        with pytest.raises(ValueError):
            pope_metrics(["yes"], ["maybe"])
        with pytest.raises(ValueError):
            pope_metrics(["yes", "no"], ["yes"])

    def test_plain_sentence_is_not_mapped(self):
        # lmms-eval compares the whole stripped, lowercased answer.
        assert POPE.score("Yes, there is a dog.", ["yes"]) == 0.0
        assert POPE.score("  YES \n", ["yes"]) == 1.0
        # Nor is a reasoning output: only its think block goes.
        assert POPE.score("<think>I see a dog</think>Yes, there is a dog.", ["yes"]) == 0.0
        assert POPE.score("<think>I see a dog</think>Yes", ["yes"]) == 1.0

    def test_aggregate(self):
        rows = [
            {"prediction": "Yes", "references": ["yes"]},
            {"prediction": "no", "references": ["yes"]},
            {"prediction": "I looked.</think>\nNo", "references": ["no"]},  # a lone closing tag: the rest
            {"prediction": "yes", "references": "no"},
        ]
        m = POPE.aggregate(rows)
        assert m == {
            "accuracy": pytest.approx(0.5),
            "precision": pytest.approx(0.5),
            "recall": pytest.approx(0.5),
            "f1": pytest.approx(0.5),
            "yes_ratio": pytest.approx(0.5),
        }


# ---------------------------------------------------------------------------
# RealWorldQA exact match
# ---------------------------------------------------------------------------


class TestExactMatch:
    """RealWorldQA at 75571cfe: extract_mcq_answer for an A-D target, lower/strip/rstrip('.') otherwise."""

    def test_letters_and_punctuation(self):
        assert _now("B", "B")
        assert not _now("b", "B")  # extract_mcq_answer reads upper-case letters only
        assert _now("B.", "B")
        assert _now("(B)", "B")
        assert _now("B", "b")  # the target's case does not matter
        assert not _now("A", "B")

    def test_open_answers(self):
        assert not _now("Two", "2")  # no number-word map any more
        assert _now("3", "3")
        assert _now("3.5", "3.5")  # punctuation is no longer deleted
        assert _now("Downhill.", "downhill")  # one trailing "." goes
        assert not _now("yes!", "yes")

    def test_choice_text_is_not_mapped(self):
        q = "Which way is the car turning?\nA. Left\nB. Right\nC. Straight\nPlease answer directly."
        assert not _now("Right", "B", question=q)
        assert REALWORLDQA.score("Right", ["B"], question=q) == 0.0

    def test_score(self):
        assert REALWORLDQA.score(" C.\n", ["C"]) == 1.0
        assert REALWORLDQA.score("The answer is C.", ["C"]) == 1.0


class TestExactMatchD0c1eae7:
    """RealWorldQA as scored before 9ca4445d: the yaml's flexible-extract filters, then exact match."""

    def test_letters_and_punctuation(self):
        assert _old("b", "B")
        assert _old("(B)", "B")
        assert not _old("I think A", "A")  # "i think a" != "a"

    def test_number_words(self):
        assert _old("Two", "2")
        # The number-word map only applies to the whole response, before punctuation goes.
        assert not _old("two.", "2")
        # The filter deletes "[^\w\s]", so "3.5" becomes "35".
        assert not _old("3.5", "3.5")
        assert _old("yes!", "yes")

    def test_choice_text_mapping_needs_question(self):
        q = "Which way is the car turning?\nA. Left\nB. Right\nC. Straight\nPlease answer directly."
        assert _old("Right", "B", question=q)
        assert not _old("Right", "B")
        assert RWQA_D0C1EAE7.score("Right", ["B"], question=q) == 1.0

    def test_unknown_scoring_is_one_line(self):
        with pytest.raises(MaiError, match="unknown RealWorldQA scoring 'v0'; known: 75571cfe, d0c1eae7"):
            RealWorldQA(scoring="v0")
        assert REALWORLDQA.aggregate([
            {"prediction": "A", "references": ["A"]},
            {"prediction": "B", "references": ["A"]},
        ]) == {"exact_match": pytest.approx(0.5)}


# ---------------------------------------------------------------------------
# MMBench option letters
# ---------------------------------------------------------------------------


class TestOption:
    @pytest.mark.parametrize(
        "text, letter",
        [
            ("B", "B"),
            ("B.", "B"),
            ("(B)", "B"),
            ("b", "B"),
            ("B) cat", "B"),
            ("B. cat", "B"),
            ("(C) a red car", "C"),
            ("The answer is C", "C"),
            ("The answer is (C).", "C"),
            ("Answer: D", "D"),
            ("**E**", "E"),
            ("I think option C is right", "C"),
            ("<think>maybe A or B</think>\nB", "B"),
            ("A cat sits on the mat", ""),  # article, not option A
            ("Both A and B", ""),  # ambiguous
            ("no idea", ""),
        ],
    )
    def test_extraction(self, text, letter):
        assert MMBENCH.extract(text) == letter

    def test_option_match(self):
        assert MMBENCH.score("The answer is C", ["C"])
        assert MMBENCH.score("C", ["C"])
        assert not MMBENCH.score("(a)", ["A"])  # MMBench static reads upper-case letters only
        assert not MMBENCH.score("C", ["D"])
        assert not MMBENCH.score("no idea", ["A"])
        assert MMBENCH.score("B) a dog", ["B"]) == 1.0
        # Rows without an index are questions of their own.
        assert MMBENCH.aggregate([
            {"prediction": "A", "references": ["A"]},
            {"prediction": "B", "references": ["A"]},
            {"prediction": "(A)", "references": ["A"]},
            {"prediction": "?", "references": ["A"]},
        ]) == {"circular_accuracy": pytest.approx(0.5), "accuracy": pytest.approx(0.5), "questions": 4}


# ---------------------------------------------------------------------------
# Answer extraction
# ---------------------------------------------------------------------------


class TestExtractAnswer:
    def test_balanced_think_block(self):
        assert CHARTQA.extract("<think>\nlong reasoning\n</think>\n\n42") == "42"

    def test_lone_close_tag_from_thinking_template(self):
        assert POPE.extract("reasoning...\n</think>\n\nYes") == "yes"
        assert CHARTQA.extract("a</think>b</think>C") == "C"  # after the last one

    def test_unterminated_think(self):
        assert CHARTQA.extract("<think>\nreasoning that got cut") == ""
        assert MMBENCH.extract("<think>\nreasoning that got cut") == ""

    def test_answer_cue(self):
        assert CHARTQA.extract("<think>x</think>The answer is **12.5%**.") == "12.5%"
        assert CHARTQA.extract("The answer is: 5\nBecause the bar is tallest.") == "5"
        assert CHARTQA.extract("Answer: 3. Wait, the final answer is 4.") == "4"  # last cue
        assert INFOVQA.extract("FINAL ANSWER IS \"Paris\"") == "Paris"
        assert REALWORLDQA.extract("Answer:\nB") == "B"

    def test_plain_output_only_stripped(self):
        # No think tag and no cue: what lmms-eval scores, untouched apart from whitespace.
        assert CHARTQA.extract("  Yes.  ") == "Yes."
        assert INFOVQA.extract("\"Paris\"") == "\"Paris\""
        assert POPE.extract("Yes, there is.") == "Yes, there is."
        assert CHARTQA.extract("1,000") == "1,000"

    def test_pope_mapping_for_reasoning_outputs(self):
        assert POPE.extract("</think>No, there is no cat.") == "no"
        assert POPE.extract("<think></think>Not sure") == "Not sure"  # "Not" is not "no"
        assert POPE.extract("<think></think>Yesterday") == "Yesterday"


# ---------------------------------------------------------------------------
# agreement (the cascade's matcher, each benchmark's rule)
# ---------------------------------------------------------------------------


class TestAnswersAgree:
    def test_relaxed(self):
        assert agree("102", "100", CHARTQA)
        assert agree("105", "100", CHARTQA)
        assert not agree("106", "100", CHARTQA)
        assert agree("Yes.", "yes", CHARTQA)
        assert agree("50%", "0.5", CHARTQA)
        assert not agree("0", "0.0", CHARTQA)
        assert agree("<think>hmm</think>The answer is 7", "7", CHARTQA)

    def test_empty_never_agrees(self):
        for bench in BENCHMARKS.values():
            assert not agree("", "", bench)
            assert not agree("<think>cut off", "<think>cut off", bench)

    def test_anls(self):
        assert agree("New  York", "new york", INFOVQA)
        assert agree("\"Paris\".", "paris", INFOVQA)
        assert not agree("1995", "1996", INFOVQA, rule="strict")  # ANLS 0.75: agrees only by the paper's rule

    def test_pope(self):
        assert agree("Yes, there is a dog.", "yes", POPE)
        assert agree("No", "</think>no", POPE)
        assert not agree("no", "Yes", POPE)
        assert not agree("maybe", "maybe", POPE)

    def test_exact(self):
        assert agree("B.", "b", REALWORLDQA)
        assert agree("two", "2", REALWORLDQA)
        assert not agree("A", "B", REALWORLDQA)

    def test_option(self):
        assert agree("(C)", "The answer is C", MMBENCH)
        assert not agree("A", "B", MMBENCH)
        assert not agree("no idea", "no idea", MMBENCH)  # no letter in either


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------


def test_benchmark_metrics():
    """Each benchmark's lmms-eval metric and the number its tables report (a key of its aggregate())."""
    assert {name: (b.metric, b.headline) for name, b in BENCHMARKS.items()} == {
        "chartqa": ("relaxed", "relaxed_accuracy"), "pope": ("pope", "accuracy"), "infovqa": ("anls", "anls"),
        "realworldqa": ("exact", "exact_match"), "mmbench": ("option", "circular_accuracy"),
        "synth-chartqa": ("relaxed", "relaxed_accuracy"), "synth-pope": ("pope", "accuracy"),
        "strategyqa": ("exact", "exact_match"), "object_counting": ("exact", "exact_match"),
        "date_understanding": ("option", "exact_match"),
        "bbh_sports_understanding": ("exact", "cot_flexible_extract"),
        "bbh_object_counting": ("exact", "cot_flexible_extract"),
        "bbh_date_understanding": ("option", "cot_flexible_extract"), "gsm8k": ("exact", "flexible_extract")}


def test_unknown_agreement_rule():
    with pytest.raises(ValueError, match=r"agree must be one of \('paper', 'strict'\), got 'loose'") as err:
        POPE.matcher("", "loose")
    assert "\n" not in str(err.value)
