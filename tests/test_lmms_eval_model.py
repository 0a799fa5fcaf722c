"""The lmms-eval plugin's own logic (mai.lmms_eval_model), without lmms-eval: prompt split, agreement rule,
the text handed back, model args. The runs through lmms-eval are in test_lmms_eval_plugin.py."""
import pytest

from mai import MaiError, lmms_eval_model as plugin
from mai.data import BENCHMARKS


def test_importing_mai_needs_no_lmms_eval():
    import subprocess
    import sys

    code = ("import sys, mai.lmms_eval_model as m; m.split_context('q', ''); "
            "assert not any(k.startswith('lmms_eval') for k in sys.modules), 'lmms_eval imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("bench", ["chartqa", "pope", "infovqa", "realworldqa", "mmbench"])
def test_split_context_gives_our_question_and_post_prompt(bench):
    """A context built as lmms-eval's doc_to_text builds it splits into what mai.data holds (question,
    post_prompt), whose sum is the context: the Simple prompt stays lmms-eval's own."""
    post = BENCHMARKS[bench].post_prompt
    yaml_post = post[1:] if bench == "mmbench" else post  # mmbench_doc_to_text adds "\n" + its yaml post_prompt
    question = "Which bar is tallest?\nA. Left\nB. Right" if bench in ("mmbench", "realworldqa") else "How many? "
    context = question + ("\n" + yaml_post if bench == "mmbench" else yaml_post)
    assert plugin.split_context(context, yaml_post) == (question, post)


def test_split_context_keeps_a_context_without_the_post_prompt():
    assert plugin.split_context("What is shown?", "\nAnswer briefly.") == ("What is shown?", "")
    assert plugin.split_context("What is shown?", "") == ("What is shown?", "")


def test_agreement_for_our_tasks_and_the_stated_default():
    ours = plugin.agreement_for("infovqa", ["anls"], "paper")
    assert (ours.metric, ours.with_question, ours.rule) == ("anls", True, "paper")
    default = plugin.agreement_for(None, ["exact_match"], "paper")
    assert (default.metric, default.with_question, default.describe) == ("exact", False,
                                                                          "default: normalised exact match")
    anls = plugin.agreement_for(None, ["ANLS"], "strict")
    assert (anls.metric, anls.rule, anls.describe) == ("anls", "strict", "default: ANLS >= 0.5")
    forced = plugin.agreement_for("pope", ["pope_accuracy"], "relaxed")
    assert forced.metric == "relaxed" and "agree=relaxed" in forced.describe
    with pytest.raises(MaiError, match="agree must be one of"):
        plugin.agreement_for(None, [], "fuzzy")


def test_the_default_rule_ignores_options_where_realworldqa_reads_them():
    question = "Which side?\nA. Left\nB. Right"
    default = plugin.agreement_for(None, ["exact_match"], "paper").matcher(question)
    ours = plugin.agreement_for("realworldqa", ["exact_match"], "paper").matcher(question)
    assert ours.agree(ours.read("Left"), ours.read("A"))  # by option
    assert not default.agree(default.read("Left"), default.read("A"))  # normalised text only
    assert default.agree(default.read("The  LEFT."), default.read("the left"))
    anls = plugin.agreement_for(None, ["anls"], "paper").matcher("")
    assert anls.agree(anls.read("panel 12"), anls.read("panel 13")) and not anls.agree("cat", "dog")


@pytest.mark.parametrize("raw, until, returned", [
    ("<think>no</think>yes", [], "yes"),  # the case: the CLI scores "yes"
    ("I reasoned.</think> 7 ", [], "7"),
    ("<think>unclosed 5", [], "<think>unclosed 5"),
    ("B\n\nASSISTANT: C", ["ASSISTANT:"], "B"),  # mmbench's until
    ("yes\n\nno", ["\n\n"], "yes\n\nno"),  # the default "\n\n" is dropped, as the Qwen3-VL wrapper does
])
def test_returned_text(raw, until, returned):
    assert plugin.returned_text(raw, until) == returned


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
    assert (config.sparse.layer, config.agree) == (2, "paper")  # a metric name is applied per task
