"""The Simple prompt's styles (--simple-prompt; mai.prompts.SIMPLE_STYLES): the text each builds, the exemplars
fewshot-direct sends against lm-evaluation-harness's bbh/fewshot tasks, the flag's checks, and the style reaching
every Simple call of a run (the rows carry it, and reasoning transfer's prompt uses it)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mai import MaiError, cli, prompts
from mai.benchmarks import get_benchmark

REPO = Path(__file__).resolve().parent.parent

# lm_eval/tasks/bbh/fewshot/{sports_understanding,object_counting,date_understanding}.yaml at commit
# 4e7e0d47f33bc71070c1d38394bafbb52b117163 (mai.benchmarks._bbh.LM_EVAL_COMMIT): each task's description and the
# targets of its three fewshot_config samples, read off the files.
LM_EVAL_FEWSHOT = {
    "bbh_sports_understanding": ("Determine whether an artificially constructed sentence relating to sports is "
                                 "plausible or not.", ["yes", "no", "yes"]),
    "bbh_object_counting": ("Questions that involve enumerating objects and asking the model to count them.",
                            ["6", "11", "8"]),
    "bbh_date_understanding": ("Infer the date from context.", ["(D)", "(B)", "(B)"]),
    # GSM8K has no bbh/fewshot task: its chain-of-thought exemplars' final numbers (Wei et al. 2022).
    "gsm8k": (None, ["6", "5", "39"]),
}


@pytest.mark.parametrize("name", sorted(LM_EVAL_FEWSHOT))
def test_direct_exemplars_are_lm_eval_fewshot(name):
    description, targets = LM_EVAL_FEWSHOT[name]
    bench = get_benchmark(name)
    blocks = bench.direct_exemplars().split("\n\n")
    if description:
        assert blocks.pop(0) == description
    assert [b.rsplit("\nA: ", 1)[1] for b in blocks] == targets
    cot_questions = [b.split("\nA:")[0] for b in bench.exemplars().split("\n\n") if b.startswith("Q:")]
    assert [b.rsplit("\nA: ", 1)[0] for b in blocks] == cot_questions  # the questions verbatim, options included


def test_simple_text_styles():
    bench = get_benchmark("gsm8k")
    q = "What is 2 + 3?"
    assert prompts.simple_text(q, "post-prompt", bench.post_prompt) == q + bench.post_prompt
    assert prompts.simple_text(q, "format", bench.post_prompt, bench.answer_format) == q + bench.answer_format
    few = prompts.simple_text(q, "fewshot-direct", exemplars=bench.direct_exemplars())
    assert few.startswith("Q: There are 15 trees") and few.endswith(f"\n\nQ: {q}\nA:")
    with pytest.raises(ValueError, match="exemplars"):
        prompts.simple_text(q, "fewshot-direct")
    with pytest.raises(ValueError, match="unknown Simple prompt style"):
        prompts.simple_text(q, "chatty")


def test_user_text_uses_the_simple_prompt_in_simple_and_transfer_only():
    own = "Q: What is 2 + 3?\nA:"
    assert prompts.user_text("What is 2 + 3?", "simple", "\nNumber.", simple_prompt=own) == own
    transfer = prompts.user_text("What is 2 + 3?", "simple", "\nNumber.", context="2 + 3 = 5.", simple_prompt=own)
    assert transfer == prompts.TRANSFER_TEMPLATE.format(context="2 + 3 = 5.", question=own)
    think = prompts.user_text("What is 2 + 3?", "think", "\nNumber.", simple_prompt=own)
    assert own not in think and think.startswith("What is 2 + 3?")


def test_simple_prompt_flag_per_benchmark():
    names = ["gsm8k", "bbh_sports_understanding"]
    assert cli.simple_prompt_styles(None, names) == dict.fromkeys(names, "post-prompt")
    assert cli.simple_prompt_styles("format", names) == dict.fromkeys(names, "format")
    assert cli.simple_prompt_styles("gsm8k=fewshot-direct", names) == {"gsm8k": "fewshot-direct",
                                                                       "bbh_sports_understanding": "post-prompt"}
    assert cli.simple_prompt_styles("pope=format", names)["gsm8k"] == "post-prompt"  # a benchmark the run leaves out
    with pytest.raises(MaiError, match="which is no benchmark"):
        cli.simple_prompt_styles("gsm9k=format", names)


def _run07(args, tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, str(REPO / "experiments" / "07_prompt_modes.py"), *args, "--out",
                           str(tmp_path / "runs"), "--report-dir", str(tmp_path), "--wandb", "disabled"],
                          capture_output=True, text=True, env=env, timeout=600)


def test_simple_prompt_flag_errors(tmp_path):
    out = _run07(["--preset", "cpu", "--simple-prompt", "chatty", "--limit", "1"], tmp_path)
    assert out.returncode == 2 and "unknown Simple prompt style 'chatty'" in out.stderr
    out = _run07(["--preset", "cpu", "--simple-prompt", "fewshot-direct", "--limit", "1"], tmp_path)
    assert out.returncode == 2 and "ships no few-shot exemplars" in out.stderr.splitlines()[-1]


def test_rows_carry_the_simple_prompt_and_send_it(tmp_path):
    """Table 7's Simple rows on a dev split with tiny random weights: fewshot-direct's prompts are longer by the
    exemplars, and each row says which style produced it."""
    common = ["--preset", "cpu", "--models", "tiny-qwen2", "--benchmarks", "gsm8k", "--split", "dev", "--limit", "2",
              "--modes", "simple", "--simple-tokens", "4", "--dtype", "fp32"]
    tokens = {}
    for style in ("post-prompt", "fewshot-direct"):
        out = _run07(common + ["--simple-prompt", style, "--run-name", style], tmp_path)
        assert out.returncode == 0, out.stderr[-2000:]
        rows = [json.loads(line) for line in (tmp_path / "runs" / "07_prompt_modes" / style / "results.jsonl").open()]
        assert len(rows) == 2
        assert [r["meta"].get("simple_prompt", "post-prompt") for r in rows] == [style] * 2
        tokens[style] = [r["input_tokens"] for r in rows]
    exemplar_tokens = len(get_benchmark("gsm8k").direct_exemplars()) // 8  # well below its real token count
    assert all(f > p + exemplar_tokens for f, p in zip(tokens["fewshot-direct"], tokens["post-prompt"]))
