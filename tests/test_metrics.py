"""Tests for mai.metrics: lmms-eval-identical scoring, answer extraction, agreement.

Expected values are worked out by hand from lmms-eval's source at 75571cfe (chartqa/utils.py,
api/metrics.py anls, pope/utils.py, realworldqa/utils.py, api/task.py, api/reasoning.py) and, for
RealWorldQA's older scoring, at d0c1eae7 (realworldqa.yaml filters).  The issue's own examples are
in test_lmms_eval_scoring.py.
"""

import pytest

from mai import MaiError
from mai.answers import answers_agree, extract_answer
from mai.metrics import (
    METRICS,
    aggregate,
    anls,
    exact_match,
    levenshtein,
    option_match,
    pope_metrics,
    relaxed_correctness,
    score,
)


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
        assert score("relaxed", "yes \n", ["yes"]) == 1.0
        assert score("relaxed", " 50% ", ["0.5"]) == 1.0
        assert score("relaxed", "1,000", ["1000"]) == 0.0

    def test_plain_trailing_period_scored_as_lmms_eval(self):
        # No output is cleaned: "Yes." != "Yes", as in lmms-eval, with or without a think block.
        assert score("relaxed", "Yes.", ["Yes"]) == 0.0
        assert score("relaxed", "<think>look</think>Yes.", ["Yes"]) == 0.0
        assert score("relaxed", "<think>look</think> Yes\n", ["Yes"]) == 1.0


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
        assert score("anls", " colour\n", ["color"]) == pytest.approx(1 - 1 / 6)
        rows = [
            {"prediction": "Paris", "references": ["paris"]},
            {"prediction": "color", "references": ["colour", "hue"]},
            {"prediction": "nothing", "references": ["abc"]},
        ]
        assert aggregate("anls", rows) == {"anls": pytest.approx((1 + (1 - 1 / 6) + 0) / 3)}


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
        assert score("pope", "Yes, there is a dog.", ["yes"]) == 0.0
        assert score("pope", "  YES \n", ["yes"]) == 1.0
        # Nor is a reasoning output: only its think block goes.
        assert score("pope", "<think>I see a dog</think>Yes, there is a dog.", ["yes"]) == 0.0
        assert score("pope", "<think>I see a dog</think>Yes", ["yes"]) == 1.0

    def test_aggregate(self):
        rows = [
            {"prediction": "Yes", "references": ["yes"]},
            {"prediction": "no", "references": ["yes"]},
            {"prediction": "I looked.</think>\nNo", "references": ["no"]},  # a lone closing tag: the rest
            {"prediction": "yes", "references": "no"},
        ]
        m = aggregate("pope", rows)
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
        assert exact_match("B", "B")
        assert not exact_match("b", "B")  # extract_mcq_answer reads upper-case letters only
        assert exact_match("B.", "B")
        assert exact_match("(B)", "B")
        assert exact_match("B", "b")  # the target's case does not matter
        assert not exact_match("A", "B")

    def test_open_answers(self):
        assert not exact_match("Two", "2")  # no number-word map any more
        assert exact_match("3", "3")
        assert exact_match("3.5", "3.5")  # punctuation is no longer deleted
        assert exact_match("Downhill.", "downhill")  # one trailing "." goes
        assert not exact_match("yes!", "yes")

    def test_choice_text_is_not_mapped(self):
        q = "Which way is the car turning?\nA. Left\nB. Right\nC. Straight\nPlease answer directly."
        assert not exact_match("Right", "B", question=q)
        assert score("exact", "Right", ["B"], question=q) == 0.0

    def test_score(self):
        assert score("exact", " C.\n", ["C"]) == 1.0
        assert score("exact", "The answer is C.", ["C"]) == 1.0


class TestExactMatchD0c1eae7:
    """RealWorldQA as scored before 9ca4445d: the yaml's flexible-extract filters, then exact match."""

    def test_letters_and_punctuation(self):
        old = dict(realworldqa_scoring="d0c1eae7")
        assert exact_match("b", "B", **old)
        assert exact_match("(B)", "B", **old)
        assert not exact_match("I think A", "A", **old)  # "i think a" != "a"

    def test_number_words(self):
        old = dict(realworldqa_scoring="d0c1eae7")
        assert exact_match("Two", "2", **old)
        # The number-word map only applies to the whole response, before punctuation goes.
        assert not exact_match("two.", "2", **old)
        # The filter deletes "[^\w\s]", so "3.5" becomes "35".
        assert not exact_match("3.5", "3.5", **old)
        assert exact_match("yes!", "yes", **old)

    def test_choice_text_mapping_needs_question(self):
        q = "Which way is the car turning?\nA. Left\nB. Right\nC. Straight\nPlease answer directly."
        assert exact_match("Right", "B", question=q, realworldqa_scoring="d0c1eae7")
        assert not exact_match("Right", "B", realworldqa_scoring="d0c1eae7")
        assert score("exact", "Right", ["B"], question=q, realworldqa_scoring="d0c1eae7") == 1.0

    def test_unknown_scoring_is_one_line(self):
        with pytest.raises(MaiError, match="unknown RealWorldQA scoring 'v0'; known: 75571cfe, d0c1eae7"):
            exact_match("A", "A", realworldqa_scoring="v0")
        assert aggregate("exact", [
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
        assert extract_answer(text, "option") == letter

    def test_option_match(self):
        assert option_match("The answer is C", "C")
        assert option_match("C", "C")
        assert not option_match("(a)", "A")  # MMBench static reads upper-case letters only
        assert not option_match("C", "D")
        assert not option_match("no idea", "A")
        assert score("option", "B) a dog", ["B"]) == 1.0
        # Rows without an index are questions of their own.
        assert aggregate("option", [
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
        assert extract_answer("<think>\nlong reasoning\n</think>\n\n42", "relaxed") == "42"

    def test_lone_close_tag_from_thinking_template(self):
        assert extract_answer("reasoning...\n</think>\n\nYes", "pope") == "yes"
        assert extract_answer("a</think>b</think>C", "relaxed") == "C"  # after the last one

    def test_unterminated_think(self):
        assert extract_answer("<think>\nreasoning that got cut", "relaxed") == ""
        assert extract_answer("<think>\nreasoning that got cut", "option") == ""

    def test_answer_cue(self):
        assert extract_answer("<think>x</think>The answer is **12.5%**.", "relaxed") == "12.5%"
        assert extract_answer("The answer is: 5\nBecause the bar is tallest.", "relaxed") == "5"
        assert extract_answer("Answer: 3. Wait, the final answer is 4.", "relaxed") == "4"  # last cue
        assert extract_answer("FINAL ANSWER IS \"Paris\"", "anls") == "Paris"
        assert extract_answer("Answer:\nB", "exact") == "B"

    def test_plain_output_only_stripped(self):
        # No think tag and no cue: what lmms-eval scores, untouched apart from whitespace.
        assert extract_answer("  Yes.  ", "relaxed") == "Yes."
        assert extract_answer("\"Paris\"", "anls") == "\"Paris\""
        assert extract_answer("Yes, there is.", "pope") == "Yes, there is."
        assert extract_answer("1,000", "relaxed") == "1,000"

    def test_pope_mapping_for_reasoning_outputs(self):
        assert extract_answer("</think>No, there is no cat.", "pope") == "no"
        assert extract_answer("<think></think>Not sure", "pope") == "Not sure"  # "Not" is not "no"
        assert extract_answer("<think></think>Yesterday", "pope") == "Yesterday"


# ---------------------------------------------------------------------------
# answers_agree (the cascade's matcher)
# ---------------------------------------------------------------------------


class TestAnswersAgree:
    def test_relaxed(self):
        assert answers_agree("102", "100", "relaxed")
        assert answers_agree("105", "100", "relaxed")
        assert not answers_agree("106", "100", "relaxed")
        assert answers_agree("Yes.", "yes", "relaxed")
        assert answers_agree("50%", "0.5", "relaxed")
        assert not answers_agree("0", "0.0", "relaxed")
        assert answers_agree("<think>hmm</think>The answer is 7", "7", "relaxed")

    def test_empty_never_agrees(self):
        for metric in METRICS:
            assert not answers_agree("", "", metric)
            assert not answers_agree("<think>cut off", "<think>cut off", metric)

    def test_anls(self):
        assert answers_agree("New  York", "new york", "anls")
        assert answers_agree("\"Paris\".", "paris", "anls")
        assert not answers_agree("1995", "1996", "anls", rule="strict")  # ANLS 0.75: agrees only by the paper's rule

    def test_pope(self):
        assert answers_agree("Yes, there is a dog.", "yes", "pope")
        assert answers_agree("No", "</think>no", "pope")
        assert not answers_agree("no", "Yes", "pope")
        assert not answers_agree("maybe", "maybe", "pope")

    def test_exact(self):
        assert answers_agree("B.", "b", "exact")
        assert answers_agree("two", "2", "exact")
        assert not answers_agree("A", "B", "exact")

    def test_option(self):
        assert answers_agree("(C)", "The answer is C", "option")
        assert not answers_agree("A", "B", "option")
        assert not answers_agree("no idea", "no idea", "option")  # no letter in either


# ---------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------


def test_metric_names():
    assert METRICS == ("relaxed", "anls", "pope", "exact", "option")


@pytest.mark.parametrize(
    "call",
    [
        lambda: score("bleu", "a", ["a"]),
        lambda: extract_answer("a", "bleu"),
        lambda: answers_agree("a", "a", "bleu"),
        lambda: aggregate("bleu", []),
    ],
)
def test_unknown_metric(call):
    with pytest.raises(ValueError, match=r"unknown metric 'bleu'; known metrics: relaxed, anls, pope, exact, option") as err:
        call()
    assert "\n" not in str(err.value)
