"""The lmms-eval plugin's own logic (mai.lmms_eval_model, mai.lmms_eval_requests), without lmms-eval: prompt
split, agreement rule, the text handed back, model args. The runs through lmms-eval are in test_lmms_eval_plugin.py."""
import pytest

from mai import MaiError, lmms_eval_model as plugin, lmms_eval_requests as requests
from mai.answers import AnlsMatcher, Matcher
from mai.benchmarks import BENCHMARKS


def test_importing_mai_needs_no_lmms_eval():
    import subprocess
    import sys

    code = ("import sys, mai.lmms_eval_model, mai.lmms_eval_requests as m; m.split_context('q', ''); "
            "assert not any(k.startswith('lmms_eval') for k in sys.modules), 'lmms_eval imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("bench", ["chartqa", "pope", "infovqa", "realworldqa", "mmbench"])
def test_split_context_gives_our_question_and_post_prompt(bench):
    """A context built as lmms-eval's doc_to_text builds it splits into what our benchmark holds (question,
    post_prompt), whose sum is the context: the Simple prompt stays lmms-eval's own."""
    post = BENCHMARKS[bench].post_prompt
    yaml_post = post[1:] if bench == "mmbench" else post  # mmbench_doc_to_text adds "\n" + its yaml post_prompt
    question = "Which bar is tallest?\nA. Left\nB. Right" if bench in ("mmbench", "realworldqa") else "How many? "
    context = question + ("\n" + yaml_post if bench == "mmbench" else yaml_post)
    assert requests.split_context(context, yaml_post) == (question, post)


def test_split_context_keeps_a_context_without_the_post_prompt():
    assert requests.split_context("What is shown?", "\nAnswer briefly.") == ("What is shown?", "")
    assert requests.split_context("What is shown?", "") == ("What is shown?", "")


def test_agreement_for_our_tasks_and_the_stated_default():
    ours = requests.agreement_for("infovqa", ["anls"], "paper")
    assert (ours.matcher, ours.describe) == (BENCHMARKS["infovqa"].agreement,
                                             "infovqa (paper): ANLS >= 0.5 between the two answers")
    default = requests.agreement_for(None, ["exact_match"], "paper")
    assert (default.matcher, default.describe) == (Matcher, "default: normalised exact match")
    anls = requests.agreement_for(None, ["exact_match", "ANLS"], "strict")  # any ANLS metric of the task
    assert (anls.matcher, anls.describe) == (AnlsMatcher, "default: ANLS >= 0.5 between the two answers")
    forced = requests.agreement_for("pope", ["pope_accuracy"], "chartqa")
    assert forced.matcher is BENCHMARKS["chartqa"].agreement and "agree=chartqa" in forced.describe
    exact = requests.agreement_for("infovqa", ["anls"], "exact")  # the default overridden, on our tasks too
    assert (exact.matcher, exact.describe) == (Matcher, "normalised exact match for every task (model_args agree=exact)")
    with pytest.raises(MaiError, match="agree must be one of paper, strict, exact, anls, chartqa"):
        requests.agreement_for(None, [], "fuzzy")


def test_the_default_rule_ignores_options_where_realworldqa_reads_them():
    question = "Which side?\nA. Left\nB. Right"
    default = requests.agreement_for(None, ["exact_match"], "paper").matcher(question)
    ours = requests.agreement_for("realworldqa", ["exact_match"], "paper").matcher(question)
    assert ours.agree(ours.read("Left"), ours.read("A"))  # by option
    assert not default.agree(default.read("Left"), default.read("A"))  # normalised text only
    assert default.agree(default.read("The  LEFT."), default.read("the left"))
    anls = requests.agreement_for(None, ["anls"], "paper").matcher("")
    assert anls.agree(anls.read("panel 12"), anls.read("panel 13")) and not anls.agree("cat", "dog")
    strict = requests.agreement_for(None, ["anls"], "strict").matcher("", "strict")  # as Cascade.matcher builds it
    assert not strict.agree(strict.read("panel 12"), strict.read("panel 13"))


@pytest.mark.parametrize("raw, until, returned", [
    ("<think>no</think>yes", [], "yes"),  # the case: the CLI scores "yes"
    ("I reasoned.</think> 7 ", [], "7"),
    ("<think>unclosed 5", [], "<think>unclosed 5"),
    ("B\n\nASSISTANT: C", ["ASSISTANT:"], "B"),  # mmbench's until
    ("yes\n\nno", ["\n\n"], "yes\n\nno"),  # the default "\n\n" is dropped, as the Qwen3-VL wrapper does
])
def test_returned_text(raw, until, returned):
    assert requests.returned_text(raw, until) == returned


def test_model_args_are_checked_before_any_model_loads():
    with pytest.raises(MaiError, match="unknown model_args for mai: smal; known: small"):
        plugin.parse_args("mai", {"smal": "tiny-small"}, plugin.MAI_ARGS)
    args = plugin.parse_args("mai", {"transfer": "sparse", "batch_size": None}, plugin.MAI_ARGS)
    assert args["batch_size"] == 1
    with pytest.raises(MaiError, match="transfer=sparse needs sparse_layer"):
        plugin.cascade_config(args)
    with pytest.raises(MaiError, match=r"delta must lie in \(0, 1\]"):
        plugin.cascade_config({**args, "sparse_layer": 1, "delta": 1.5})
    with pytest.raises(MaiError, match="verify must be answer or reasoning"):
        plugin.cascade_config({**args, "verify": "both"})
    config = plugin.cascade_config({**args, "sparse_layer": 2, "agree": "anls"})
    assert (config.sparse.layer, config.agree) == (2, "paper")  # one rule for every task is applied per task


def test_our_score_reads_an_lmms_eval_doc_as_our_loader_reads_a_hub_row():
    """MMBench's meta (its index for CircularEval, the options its static scorer matches) comes from the doc
    through the benchmark's own loader; a doc lacking a column of the hub schema gets no score of ours."""
    doc = {"index": 1_000_003, "question": "Which animal?", "hint": "nan", "answer": "B", "A": "cat", "B": "dog",
           "C": None, "D": "nan", "image": None, "category": "animals"}
    score, references, meta = requests.our_score("mmbench", "a dog", doc, 7, "B")
    assert (score, references) == (1.0, ["B"])  # the option text "dog" names B
    assert (meta["index"], meta["choices"]) == (1_000_003, {"A": "cat", "B": "dog", "D": "nan"})
    assert requests.our_score("mmbench", "a cat", doc, 7, "B")[0] == 0.0
    assert requests.our_score("chartqa", "5", {"question": "q", "answer": "5"}, 0, "5") is None  # no image, type
