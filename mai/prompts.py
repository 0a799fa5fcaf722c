"""Prompt modes in the paper's words: Simple (S), Think / reasoning (R), and the second stage.

- simple: the question and the benchmark's lmms-eval post-prompt; the model answers directly.
- think:  the model reasons step by step, then answers: the question, then THINK_INSTRUCTION (think,
          and the final-answer format "The answer is ..."). WITHOUT the benchmark's Simple post-prompt:
          "Answer the question using a single word or phrase." contradicts "think step by step" and
          shortens the reasoning, which moves the R baselines' latency (the denominator of every
          speedup). The R baselines and MAI's Think call use this same prompt. Thinking checkpoints get
          the question alone and their own template opens <think>.
- answer: the second stage of the small model's two-stage answer (Section 5.1): after its reasoning,
          a new user turn asks for the short answer; it continues from the first stage's KV cache.
Reasoning transfer prepends another model's reasoning to the Simple prompt (TRANSFER_TEMPLATE).

Every prompt is a chat conversation rendered by the processor's own chat template, so real
checkpoints see exactly their template, with lmms-eval's system prompt.
"""
from __future__ import annotations

from mai import families
from mai.families.family import SYSTEM_PROMPT as FAMILY_SYSTEM_PROMPT

MODES = ("simple", "think", "answer")

SYSTEM_PROMPT = FAMILY_SYSTEM_PROMPT  # what lmms-eval's Qwen3-VL wrapper sends
THINK_INSTRUCTION = ("\nThink step by step before answering, then finish with "
                     "\"The answer is\" followed by your final answer.")
# The Think prompt's styles (--think-prompt; chosen on a dev split, never on reported questions):
# - instruction: the question, then THINK_INSTRUCTION (the default; what the paper presets send);
# - zeroshot-cot: "Q: {question}\nA: Let's think step by step.", the doc_to_text of lm-evaluation-harness's
#   bbh/cot_zeroshot and gsm8k-cot-zeroshot tasks (Kojima et al. 2022's cue);
# - fewshot-cot: the benchmark's chain-of-thought exemplars (BBH's three, Suzgun et al. 2022), then the
#   question in the same "Q: ... A: Let's think step by step." form, as lm-eval's bbh/cot_fewshot builds it.
THINK_STYLES = ("instruction", "zeroshot-cot", "fewshot-cot")
# The Simple prompt's styles (--simple-prompt; chosen per benchmark on a dev split, never on reported questions):
# - post-prompt: the question, then the benchmark's lmms-eval post-prompt (the default; the paper's setting);
# - format: the question, then the benchmark's explicit answer-format instruction (Benchmark.answer_format),
#   which also forbids an explanation;
# - fewshot-direct: the benchmark's three exemplars answered by their final answer alone, then the question,
#   as lm-evaluation-harness's bbh/fewshot tasks build it ("Q: {input}\nA:", exemplars joined by a blank line;
#   lm_eval/tasks/bbh/fewshot/*.yaml at commit 4e7e0d47f33bc71070c1d38394bafbb52b117163); GSM8K's three are
#   its chain-of-thought exemplars' questions with the final number alone.
SIMPLE_STYLES = ("post-prompt", "format", "fewshot-direct")
COT_CUE = "Let's think step by step."
ANSWER_INSTRUCTION = "Based on your reasoning above, give your final answer to the question."
TRANSFER_TEMPLATE = "Reasoning from another model:\n{context}\n\n{question}"

# Marks where the first stage's own tokens go when the second stage's turn is rendered; never tokenized.
_SENTINEL = "\u2063MAI_STAGE1\u2063"


def think_text(question: str, style: str, exemplars: str | None = None) -> str:
    """The Think prompt's user text in one of THINK_STYLES; fewshot-cot needs the benchmark's exemplars."""
    if style == "instruction":
        return question + THINK_INSTRUCTION
    if style == "zeroshot-cot":
        return f"Q: {question}\nA: {COT_CUE}"
    if style == "fewshot-cot":
        if not exemplars:
            raise ValueError("the fewshot-cot Think prompt needs the benchmark's chain-of-thought exemplars")
        return f"{exemplars.strip()}\n\nQ: {question}\nA: {COT_CUE}"
    raise ValueError(f"unknown Think prompt style '{style}'; choose from: {', '.join(THINK_STYLES)}")


def simple_text(question: str, style: str, post_prompt: str = "", answer_format: str = "",
                exemplars: str | None = None) -> str:
    """The Simple prompt's user text in one of SIMPLE_STYLES; fewshot-direct needs the benchmark's
    direct-answer exemplars (Benchmark.direct_exemplars), format its answer-format instruction."""
    if style == "post-prompt":
        return question + post_prompt
    if style == "format":
        if not answer_format:
            raise ValueError("the format Simple prompt needs the benchmark's answer-format instruction")
        return question + answer_format
    if style == "fewshot-direct":
        if not exemplars:
            raise ValueError("the fewshot-direct Simple prompt needs the benchmark's direct-answer exemplars")
        return f"{exemplars.strip()}\n\nQ: {question}\nA:"
    raise ValueError(f"unknown Simple prompt style '{style}'; choose from: {', '.join(SIMPLE_STYLES)}")


def styled(question: str, bench, think_style: str | None = None,
           simple_style: str | None = None) -> tuple[str | None, str | None]:
    """(Think prompt text, Simple prompt text) of one question in the run's styles, None where a style is the
    default (instruction; post-prompt), which needs nothing per question: what an experiment's examples carry
    (mai.experiment.load_examples) and what a served query sends (mai.serving.system), so the two are one."""
    think = simple = None
    if think_style and think_style != "instruction":
        think = think_text(question, think_style, bench.exemplars() if think_style == "fewshot-cot" else None)
    if simple_style and simple_style != "post-prompt":
        exemplars = bench.direct_exemplars() if simple_style == "fewshot-direct" else None
        simple = simple_text(question, simple_style, bench.post_prompt, bench.answer_format, exemplars)
    return think, simple


def user_text(question: str, mode: str, post_prompt: str = "", context: str | None = None,
              thinking_checkpoint: bool = False, think_prompt: str | None = None,
              simple_prompt: str | None = None) -> str:
    """The text of the user turn for one prompt mode (images are separate content parts). The Think
    prompt leaves out `post_prompt` (see the module doc); the second stage asks for it instead.
    `think_prompt` (a style's text, think_text) replaces the question and instruction of a Think prompt;
    `simple_prompt` (simple_text) replaces question + post_prompt of a Simple prompt, reasoning transfer's too."""
    if mode not in ("simple", "think"):
        raise ValueError(f"unknown prompt mode '{mode}'; choose from: simple, think")
    text = question + post_prompt if mode == "simple" else question
    if mode == "simple" and simple_prompt:
        text = simple_prompt
    if mode == "think" and think_prompt:
        text = think_prompt
    elif mode == "think" and not thinking_checkpoint:
        text += THINK_INSTRUCTION
    if context:
        text = TRANSFER_TEMPLATE.format(context=context.strip(), question=text)
    return text


def conversation(n_images: int, text: str, family: families.Family | None = None,
                 thinking: bool = False) -> list[dict]:
    """System and user turns in the family's message format: typed parts (images, then text, as
    lmms-eval sends them), or one string for templates of text-only models, which cannot take parts.
    A thinking prompt of a family that thinks by its system prompt (InternVL3.5) gets that system turn."""
    family = family or families.default()
    system = family.thinking_system_prompt if thinking and family.thinking_system_prompt else family.system_prompt
    messages = [] if system is None else [_turn("system", system, family)]
    if family.content_parts:
        content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": text}]
        return messages + [{"role": "user", "content": content}]
    return messages + [_turn("user", text, family)]


def _turn(role: str, text: str, family: families.Family) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}] if family.content_parts else text}


def render(processor, n_images: int, text: str, thinking: bool, family: families.Family | None = None) -> str:
    """The prompt string up to the assistant's turn, by the processor's chat template. Qwen3-VL's
    templates take no thinking switch: a Thinking checkpoint's own template opens <think> on every
    generation prompt, an Instruct one's never does. A family with a switch (Qwen3's enable_thinking)
    gets it from `thinking`, as does one that thinks by its system prompt (InternVL3.5)."""
    family = family or families.default()
    return processor.apply_chat_template(conversation(n_images, text, family, thinking), tokenize=False,
                                         add_generation_prompt=True, **family.thinking_kwargs(thinking))


def second_stage_suffix(processor, n_images: int, first_text: str, post_prompt: str,
                        thinking: bool, family: families.Family | None = None) -> str:
    """Text that follows the first stage's generated tokens in the second stage's prompt.

    The first stage's tokens stay as generated (re-tokenizing their text could split differently and
    break the cache), so only what the template puts after them is rendered: the end of the
    assistant turn, the answer request, and the new assistant turn. The answer is asked for without
    thinking (a family's switch off): the reasoning is already there.
    """
    family = family or families.default()
    messages = conversation(n_images, first_text, family) + [
        _turn("assistant", _SENTINEL, family), _turn("user", ANSWER_INSTRUCTION + post_prompt, family)]
    full = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                         **family.thinking_kwargs(False))
    return full.split(_SENTINEL, 1)[1]


def second_stage_suffix_ids(processor, n_images: int, first_text: str, post_prompt: str,
                            thinking: bool, family: families.Family | None = None) -> list[int]:
    """second_stage_suffix as token ids, appended to the first stage's own tokens by every backend and
    by the attention capture alike (no special tokens added: the template's text carries them)."""
    tokenizer = getattr(processor, "tokenizer", processor)
    suffix = second_stage_suffix(processor, n_images, first_text, post_prompt, thinking, family)
    return tokenizer(suffix, add_special_tokens=False).input_ids
