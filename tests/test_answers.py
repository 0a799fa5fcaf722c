"""Agreement as the paper says ("Exact Matching or ANLS (as per benchmark)"), per benchmark, and the
strict rule kept behind --agree strict; reading an answer off a reasoning."""
import pytest

from mai.answers import Matcher, answers_agree, extract_answer, question_options

RWQA = "Which way is the car turning?\nA. Left\nB. Right\nC. Straight\nPlease answer directly with the letter."
MMB = ("The photo was taken at a farm. A. B. C. are not options here. Which animal is shown? "
       "There are several options:\nA. cat\nB. cow\nC. dog")


def agree(a, b, metric, question="", rule="paper", reasoning=False):
    m = Matcher(metric, question, rule)
    return m.agree(m.read(a, reasoning), m.read(b))


def test_pope_yes_no():
    assert agree("Yes, there is a dog.", "yes", "pope")
    assert not agree("no", "Yes", "pope") and not agree("maybe", "maybe", "pope")


def test_chartqa_relaxed_both_ways():
    # 100 is within 5% of 105.2 (4.9%), but 105.2 is not within 5% of 100 (5.2%): one-sided relaxed
    # correctness would agree in one direction only; agreement must not depend on which is the reference.
    assert not agree("100", "105.2", "relaxed") and not agree("105.2", "100", "relaxed")
    assert agree("102", "100", "relaxed") and agree("100", "102", "relaxed")
    assert agree("Yes.", "yes", "relaxed") and agree("50%", "0.5", "relaxed")
    # strict: equal numbers (after commas and %) or equal text
    assert not agree("102", "100", "relaxed", rule="strict")
    assert agree("1,000", "1000", "relaxed", rule="strict") and agree("50%", "0.5", "relaxed", rule="strict")


def test_infovqa_anls_at_lmms_eval_threshold():
    assert agree("1995", "1996", "anls")  # ANLS 0.75 >= 0.5
    assert agree("New  York", "new york", "anls")
    assert not agree("cat", "dog", "anls")  # ANLS 0
    assert agree("abcd", "abxy", "anls") and not agree("abcd", "axyz", "anls")  # 0.5 agrees, 0.25 does not
    assert not agree("1995", "1996", "anls", rule="strict")


def test_multiple_choice_by_option():
    assert question_options(RWQA) == {"A": "Left", "B": "Right", "C": "Straight"}
    assert question_options(MMB) == {"A": "cat", "B": "cow", "C": "dog"}  # the hint's "A." is not an option
    assert question_options("How many cars are there?") == {}
    assert question_options("Odd list:\nB. x\nC. y") == {}  # letters must run from A
    # RealWorldQA ("exact") and MMBench ("option"): the option each answer names
    assert agree("Left", "A", "exact", RWQA) and agree("A", "left.", "exact", RWQA)
    assert agree("The car is turning right", "B", "exact", RWQA)
    assert not agree("Left", "B", "exact", RWQA)
    assert agree("cow", "B", "option", MMB) and agree("(B) cow", "The answer is B", "option", MMB)
    assert not agree("cat", "B", "option", MMB)
    assert not agree("a cat or a dog", "A", "option", MMB)  # names two options: none
    # strict: letters as written, text only equal to text
    assert not agree("Left", "A", "exact", RWQA, rule="strict")
    assert not agree("cow", "B", "option", MMB, rule="strict")
    # a free-form RealWorldQA question (no options): normalised text
    assert agree("two", "2", "exact", "How many cars?") and agree("B.", "b", "exact")


@pytest.mark.parametrize("metric, question, reasoning, large", [
    ("pope", "Is there a cat?", "Yes, I can see a grey cat on the sofa", "yes"),
    ("option", MMB, "Looking at option B, it is a cow", "B"),
    ("relaxed", "", "The bars are 3, 5 and 4", "5"),
])
def test_a_reasoning_without_an_answer_cue_has_no_answer(metric, question, reasoning, large):
    assert Matcher(metric, question).read(reasoning, reasoning=True) == ""
    assert not agree(reasoning, large, metric, question, reasoning=True)
    assert extract_answer(reasoning, metric, reasoning=True) == ""
    # with a cue (or a closed think block) it has one
    assert agree(reasoning + f". The answer is {large}.", large, metric, question, reasoning=True)
    assert agree(f"<think>{reasoning}</think>{large}", large, metric, question, reasoning=True)
    # cut inside its think block: none
    assert not agree(f"<think>{reasoning} The answer is {large}", large, metric, question, reasoning=True)


def test_answers_agree_on_raw_plain_answers():
    assert answers_agree("<think>hmm</think>The answer is 7", "7", "relaxed")
    assert answers_agree("Left", "A", "exact", question=RWQA)
    assert not answers_agree("", "", "pope")
    with pytest.raises(ValueError, match="agree must be one of"):
        Matcher("pope", rule="loose")
