"""Agreement as the paper says ("Exact Matching or ANLS (as per benchmark)"), per benchmark, and the
strict rule kept behind --agree strict; reading an answer off a reasoning."""
import pytest

from mai.answers import default_agreement, question_options
from mai.benchmarks import get_benchmark

RWQA = "Which way is the car turning?\nA. Left\nB. Right\nC. Straight\nPlease answer directly with the letter."
MMB = ("The photo was taken at a farm. A. B. C. are not options here. Which animal is shown? "
       "There are several options:\nA. cat\nB. cow\nC. dog")


def agree(a, b, benchmark, question="", rule="paper", reasoning=False):
    m = get_benchmark(benchmark).matcher(question, rule)
    return m.agree(m.read(a, reasoning), m.read(b))


def test_pope_yes_no():
    assert agree("Yes, there is a dog.", "yes", "pope")
    assert not agree("no", "Yes", "pope") and not agree("maybe", "maybe", "pope")


def test_chartqa_relaxed_both_ways():
    # 100 is within 5% of 105.2 (4.9%), but 105.2 is not within 5% of 100 (5.2%): one-sided relaxed
    # correctness would agree in one direction only; agreement must not depend on which is the reference.
    assert not agree("100", "105.2", "chartqa") and not agree("105.2", "100", "chartqa")
    assert agree("102", "100", "chartqa") and agree("100", "102", "chartqa")
    assert agree("Yes.", "yes", "chartqa") and agree("50%", "0.5", "chartqa")
    # strict: equal numbers (after commas and %) or equal text
    assert not agree("102", "100", "chartqa", rule="strict")
    assert agree("1,000", "1000", "chartqa", rule="strict") and agree("50%", "0.5", "chartqa", rule="strict")


def test_infovqa_anls_at_lmms_eval_threshold():
    assert agree("1995", "1996", "infovqa")  # ANLS 0.75 >= 0.5
    assert agree("New  York", "new york", "infovqa")
    assert not agree("cat", "dog", "infovqa")  # ANLS 0
    assert agree("abcd", "abxy", "infovqa") and not agree("abcd", "axyz", "infovqa")  # 0.5 agrees, 0.25 does not
    assert not agree("1995", "1996", "infovqa", rule="strict")


def test_multiple_choice_by_option():
    assert question_options(RWQA) == {"A": "Left", "B": "Right", "C": "Straight"}
    assert question_options(MMB) == {"A": "cat", "B": "cow", "C": "dog"}  # the hint's "A." is not an option
    assert question_options("How many cars are there?") == {}
    assert question_options("Odd list:\nB. x\nC. y") == {}  # letters must run from A
    # RealWorldQA ("realworldqa") and MMBench ("mmbench"): the option each answer names
    assert agree("Left", "A", "realworldqa", RWQA) and agree("A", "left.", "realworldqa", RWQA)
    assert agree("The car is turning right", "B", "realworldqa", RWQA)
    assert not agree("Left", "B", "realworldqa", RWQA)
    assert agree("cow", "B", "mmbench", MMB) and agree("(B) cow", "The answer is B", "mmbench", MMB)
    assert not agree("cat", "B", "mmbench", MMB)
    assert not agree("a cat or a dog", "A", "mmbench", MMB)  # names two options: none
    # strict: letters as written, text only equal to text
    assert not agree("Left", "A", "realworldqa", RWQA, rule="strict")
    assert not agree("cow", "B", "mmbench", MMB, rule="strict")
    # a free-form RealWorldQA question (no options): normalised text
    assert agree("two", "2", "realworldqa", "How many cars?") and agree("B.", "b", "realworldqa")


@pytest.mark.parametrize("benchmark, question, reasoning, large", [
    ("pope", "Is there a cat?", "Yes, I can see a grey cat on the sofa", "yes"),
    ("mmbench", MMB, "Looking at option B, it is a cow", "B"),
    ("chartqa", "", "The bars are 3, 5 and 4", "5"),
])
def test_a_reasoning_without_an_answer_cue_has_no_answer(benchmark, question, reasoning, large):
    bench = get_benchmark(benchmark)
    assert bench.matcher(question).read(reasoning, reasoning=True) == ""
    assert not agree(reasoning, large, benchmark, question, reasoning=True)
    assert bench.extract(reasoning, reasoning=True) == ""
    # with a cue (or a closed think block) it has one
    assert agree(reasoning + f". The answer is {large}.", large, benchmark, question, reasoning=True)
    assert agree(f"<think>{reasoning}</think>{large}", large, benchmark, question, reasoning=True)
    # cut inside its think block: none
    assert not agree(f"<think>{reasoning} The answer is {large}", large, benchmark, question, reasoning=True)


def test_agreement_on_raw_plain_answers():
    assert agree("<think>hmm</think>The answer is 7", "7", "chartqa")
    assert agree("Left", "A", "realworldqa", question=RWQA)
    assert not agree("", "", "pope")
    with pytest.raises(ValueError, match="agree must be one of"):
        get_benchmark("pope").matcher(rule="loose")


def test_the_stated_default_for_a_task_without_a_rule():
    """Normalised exact match, or ANLS >= 0.5 when the task's metric is ANLS; overridable by name."""
    exact, by_anls = default_agreement("acc"), default_agreement("anls")
    assert exact("").agree(exact("").read("Two."), exact("").read("2"))  # number word, punctuation
    assert not exact("").agree("1995", "1996")
    assert by_anls("").agree("1995", "1996")  # ANLS 0.75
    assert not by_anls("", "strict").agree("1995", "1996")
    assert default_agreement("ANLS_infovqa") is by_anls and default_agreement(None) is exact
    assert default_agreement("acc", override="anls") is by_anls
    assert get_benchmark("infovqa").agreement is by_anls  # InfoVQA's rule is that default
    assert (exact.summary, by_anls.summary) == ("normalised exact match", "ANLS >= 0.5 between the two answers")
    with pytest.raises(ValueError, match="unknown agreement 'fuzzy'; known: exact, anls"):
        default_agreement("acc", override="fuzzy")


def test_a_boxed_answer_after_the_last_cue_is_the_answer():
    from mai.answers import extract_answer

    assert extract_answer(r"Therefore Tony can add \(\boxed{12}\) more pairs.", reasoning=True) == "12"
    assert extract_answer(r"\boxed{\frac{3}{4}}", reasoning=True) == r"\frac{3}{4}"
    assert extract_answer(r"First \boxed{4}. So the answer is 5.", reasoning=True) == "5"  # the cue comes later
    assert extract_answer(r"The answer is 5. Correcting: \boxed{6}", reasoning=True) == "6"
    assert extract_answer("a reasoning that names no answer", reasoning=True) == ""
