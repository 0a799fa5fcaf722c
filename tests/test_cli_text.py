"""`python -m mai answer` on text-only questions (issue 23): no --image runs the cascade with no image, on a
text-only pair and on a vision-language pair, and its trace equals the same question asked of mai.cascade
directly; an --image given to a text-only model is refused in one line, before any weights load. Tiny
random-weight models on the CPU: the answers mean nothing, the equalities are what is tested."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mai import MaiError, checkpoints, experiment, families
from mai.__main__ import answer
from mai.benchmarks import get_benchmark
from mai.cascade import ROUTES, Cascade, CascadeConfig
from mai.generation import HFGenerator
from mai.models import load_model

REPO = Path(__file__).resolve().parent.parent
QUESTION = "Is a tomato a fruit?"
FAST = ["--think-tokens", "8", "--simple-tokens", "4", "--answer-tokens", "4", "--device", "cpu", "--dtype", "float32"]


def direct_trace(small: str, large: str, question: str, benchmark: str = "chartqa") -> dict:
    """The same question through mai.cascade itself, with the flags FAST gives the CLI."""
    bench = get_benchmark(benchmark)
    gens = [HFGenerator(load_model(spec, device="cpu", dtype="float32"), 0) for spec in (small, large)]
    cascade = Cascade(*gens, CascadeConfig(think_tokens=8, answer_tokens=4), small, large)
    return cascade.answer(question, [], bench.agreement, bench.post_prompt, 4).to_dict()


def calls(trace: dict) -> list:
    return [(c["model"], c["mode"], c["result"]["text"], c["result"]["input_tokens"], c["result"]["output_tokens"])
            for c in trace["calls"]]


@pytest.mark.parametrize("pair", [("tiny-qwen3", "tiny-smollm2"), ("tiny-small", "tiny-large")],
                         ids=["text-only pair", "vision-language pair"])
def test_a_question_without_image_runs_the_cascade_as_mai_cascade_does(pair, capsys):
    small, large = pair
    answer(["--small", small, "--large", large, "--question", QUESTION, "--json", *FAST])
    trace = json.loads(capsys.readouterr().out)
    assert trace["route"] in ROUTES
    assert [c["model"] for c in trace["calls"][:2]] == [small, large]  # mutual verification first
    assert all(c["result"]["times"]["vision"] == 0 for c in trace["calls"])  # no image was encoded
    direct = direct_trace(small, large, QUESTION)
    assert (trace["route"], trace["answer"], calls(trace)) == (direct["route"], direct["answer"], calls(direct))


def test_the_cpu_text_preset_prints_route_and_trace(capsys):
    answer(["--preset", "cpu-text", "--question", QUESTION, *FAST])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("(random weights: tiny-qwen3, tiny-smollm2;")
    assert out[1] == "question: text only"
    route = out[3].removeprefix("route:").strip()
    assert route in ROUTES
    modes = [line.split()[1] for line in out[5:-1] if line.startswith(("tiny-qwen3 ", "tiny-smollm2 "))]
    assert modes[:2] == ["simple", "simple"]
    assert modes[2:] == {"simple": [], "reasoning": ["think", "answer"],
                         "transfer": ["think", "answer", "transfer"]}[route]
    assert out[-1].startswith("total: ")


def test_an_image_for_a_text_only_model_is_one_line_before_loading():
    """Refused, not dropped: the text-only model would answer as if it had seen the image."""
    proc = subprocess.run([sys.executable, "-m", "mai", "answer", "--preset", "cpu-text", "--image", "no-such.png",
                           "--question", QUESTION], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: --image given, but the small model tiny-qwen3 is text-only (qwen3) and cannot see images; ask "
        "without --image, or choose a vision-language pair"]  # before the image is even read


def test_a_text_only_checkpoint_directory_is_refused_an_image_before_its_weights_load(tmp_path, monkeypatch,
                                                                                        chart_image):
    checkpoint = tmp_path / "my-text-model"
    checkpoints.write(families.by_architecture("tiny-smollm2"), "tiny-smollm2", checkpoint, weights=False)
    chart_image.save(tmp_path / "chart.png")
    monkeypatch.setattr(experiment, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(MaiError, match=f"the large model {checkpoint} is text-only \\(llama\\)"):
        answer(["--preset", "cpu", "--large", str(checkpoint), "--image", str(tmp_path / "chart.png"),
                "--question", QUESTION])


def test_mistakes_are_one_line():
    for argv, line in ((["--preset", "cpu-text", "--question", "  "], "error: --question is empty"),
                       (["--preset", "cpu-text", "--question", "q", "--bogus"],
                        "error: unrecognized arguments: --bogus (see --help)")):
        proc = subprocess.run([sys.executable, "-m", "mai", "answer", *argv], capture_output=True, text=True,
                              cwd=REPO, timeout=120)
        assert (proc.returncode, proc.stderr.splitlines()) == (2, [line])
