"""What a request will cost, checked before it is queued: every stage the served system may run, its prompt's
tokens plus the new tokens it may generate, against the context of the model that runs it.

A stage's prompt is counted as its backend builds it: the chat template rendered by the model's own processor
(mai.prompts), then tokenized, an image counted as the tokens the processor expands it into (mai.images'
sizing, then Family.encode, as mai.generation and mai.vllm_backend encode it). The stages of MAI (mai.cascade):

    small Simple, large Simple      the Simple prompt + the Simple cap (a request's max_tokens may lower it)
    small Think                     the Think prompt + the reasoning budget (--think-tokens)
    small answer                    (--verify answer) the Think prompt + its reasoning + the answer request's
                                    turn + --answer-tokens (with --verify reasoning and sparse transfer, the
                                    same tokens once more for the attention that ranks the reasoning)
    large transfer                  the Simple prompt carrying the small model's reasoning (counted as
                                    --think-tokens tokens) + the Simple cap

A baseline runs one of these (its model, its prompt); Full RT runs small Think and large transfer. The reasoning
is not known before it is written, so the transfer stage is counted with its budget; check_prompt checks the
real transfer prompt again just before it runs (mai.serving.system.Checked) (a reasoning that a second tokenizer reads as more tokens).

Refusals are worded as vLLM 0.30.0's server words them (vllm/renderers/params.py, _token_len_check: "This
model's maximum context length is ... for a total of ... tokens.", "at least" when the count is a lower bound)
and say which stage cannot fit.

A very long question is refused without tokenizing it: a tokenizer whose pre-tokenizer splits text at
whitespace (every byte-level BPE served here: Qwen's, SmolLM2's) makes at least one token of every
whitespace-separated word, so the word count is a lower bound of the prompt's tokens (str.split over 300,000
words: ~20 ms, against ~1 s for the tokenizer). Whether a tokenizer splits so is probed once (splits_words).
"""
from __future__ import annotations

import dataclasses
import functools

from mai import MaiError, prompts
from mai import images as images_mod
from mai.request import Request
from mai.serving.api import ApiError


def context_message(context: int, prompt: int, new: int, at_least: bool = False) -> str:
    """vLLM 0.30.0's refusal of a prompt that does not fit (vllm/renderers/params.py, _token_len_check)."""
    qualifier = "at least " if at_least else ""
    return (f"This model's maximum context length is {context} tokens. However, you requested {new} output "
            f"tokens and your prompt contains {qualifier}{prompt} input tokens, for a total of "
            f"{qualifier}{prompt + new} tokens. Please reduce the length of the input prompt or the number of "
            f"requested output tokens.")


class ContextExceeded(MaiError):
    """A stage's prompt plus its new tokens exceed its model's context (the handler answers 400)."""

    def __init__(self, stage: "Stage", at_least: bool = False):
        self.stage, self.at_least = stage, at_least
        super().__init__(f"stage '{stage.name}' ({stage.role} model {stage.model}) cannot fit: "
                         + context_message(stage.context, stage.prompt_tokens, stage.new_tokens, at_least))

    def api_error(self) -> ApiError:
        return ApiError(400, str(self), "context_length_exceeded", param="messages")


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str  # "small Simple", "large transfer", ...
    role: str  # small | large
    model: str  # the model's label
    prompt_tokens: int
    new_tokens: int  # the most it may generate
    context: int  # its model's context (--max-model-len or the checkpoint's)

    @property
    def fits(self) -> bool:
        return self.prompt_tokens + self.new_tokens <= self.context


@dataclasses.dataclass
class Prompting:
    """What renders and counts one model's prompts: its processor, family and thinking flag."""
    processor: object
    family: object
    thinking: bool

    @classmethod
    def of(cls, generator) -> "Prompting":
        # vLLM's generators hold them (mai.serving.vllm_engine); transformers' keep them on the loaded model.
        # (Never generator.loaded on vLLM: that property loads a transformers copy of the model.)
        source = generator if hasattr(generator, "processor") else generator.loaded
        return cls(source.processor, source.family, bool(source.thinking))

    @property
    def tokenizer(self):
        return getattr(self.processor, "tokenizer", self.processor)

    def text_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def prompt_text(self, request: Request) -> tuple[str, str]:
        """(the rendered first-stage prompt, its user text), as HFGenerator._prompt and build_prompt render it."""
        text = prompts.user_text(request.question, request.mode, request.post_prompt, request.context,
                                 self.thinking, request.think_prompt, request.simple_prompt)
        return prompts.render(self.processor, len(request.images), text,
                              thinking=self.thinking and request.mode == "think", family=self.family), text

    def image_tokens(self, request: Request) -> int:
        """Tokens the request's images add to its prompt beyond their placeholders in the rendered text."""
        if not request.images:
            return 0
        prompt, _ = self.prompt_text(request)
        images = images_mod.prepare(request.images, self.processor, self.family)
        encoded = self.family.encode(self.processor, [prompt], images)
        return int(encoded["input_ids"].shape[1]) - self.text_tokens(prompt)

    def second_stage_suffix(self, request: Request) -> int:
        """Tokens of the answer request's turn that a second stage appends after the reasoning."""
        _, first_text = self.prompt_text(dataclasses.replace(request, mode="think"))
        return len(prompts.second_stage_suffix_ids(self.processor, len(request.images), first_text,
                                                   request.post_prompt, self.thinking, self.family))

    @property
    def splits_words(self) -> bool:
        return splits_words(self.tokenizer)


@functools.lru_cache(maxsize=16)
def splits_words(tokenizer) -> bool:
    """Whether every whitespace-separated word becomes at least one token (see the module doc): the fast
    tokenizer's pre-tokenizer cuts a probe of words, punctuation, digits and scripts at each whitespace."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    pre = getattr(backend, "pre_tokenizer", None)
    if pre is None:
        return False
    probe = "a bb, c.d 12 345\tx\ny  z \u00e9 \u00fc \u65e5\u672c \u8a9e !? (q) don't"
    # Each word must begin a piece, or the piece of the whitespace just before it (GPT-style " word").
    starts, at = {start for _, (start, _) in pre.pre_tokenize_str(probe)}, 0
    for word in probe.split():
        at = probe.index(word, at)
        if not {at, at - 1} & starts:
            return False
        at += len(word)
    return True


class Budget:
    """Every stage of one served system, priced for one request (see the module doc)."""

    def __init__(self, system):
        self.system = system
        # Each model's context, as its generator (mai.serving.system.Checked) holds it; None: not checked.
        self.contexts = {role: getattr(system, role).context for role in ("small", "large")}
        self.prompting = {"small": Prompting.of(system.small), "large": Prompting.of(system.large)}

    def plan(self, max_tokens: int | None = None) -> list[tuple[str, str, str, int]]:
        """(stage name, role, prompt mode, new tokens) for each stage the system may run."""
        s, cfg = self.system, self.system.cascade.config
        simple, think = s.simple_cap(max_tokens), s.think_tokens
        if s.name == "mai":
            plan = [("small Simple", "small", "simple", simple), ("large Simple", "large", "simple", simple),
                    ("small Think", "small", "think", think)]
            if cfg.verify == "answer":
                plan.append(("small answer", "small", "answer", cfg.answer_tokens))
            elif cfg.transfer == "sparse":  # one forward over the same tokens ranks the reasoning (mai.transfer)
                plan.append(("small attention", "small", "answer", 0))
            return plan + [("large transfer", "large", "transfer", simple)]
        if s.name == "full-RT":
            return [("small Think", "small", "think", think), ("large transfer", "large", "transfer", simple)]
        role, mode = s.baseline
        return [(f"{role} {mode.capitalize()}", role, mode, s.answer_cap(max_tokens))]

    def quick_check(self, question: str, max_tokens: int | None = None) -> None:
        """The word-count lower bound (module doc), before any tokenizing: raises ContextExceeded."""
        words = len(question.split())  # off the event loop too: 300,000 words take ~20 ms
        for name, role, mode, new in self.plan(max_tokens):
            if self.contexts[role] is None or not self.prompting[role].splits_words:
                continue
            stage = Stage(name, role, self.system.cascade.names[role], words, new, self.contexts[role])
            if not stage.fits:
                raise ContextExceeded(stage, at_least=True)

    def stages(self, question: str, images: list, max_tokens: int | None = None) -> list[Stage]:
        """Every stage, its prompt counted exactly (the transfer's reasoning as its budget)."""
        think = self.system.think_tokens
        ask = Request(**self.system.ask(question, images))
        out, image_tokens = [], {}
        for name, role, mode, new in self.plan(max_tokens):
            if self.contexts[role] is None:
                continue
            p = self.prompting[role]
            if role not in image_tokens:
                image_tokens[role] = p.image_tokens(dataclasses.replace(ask, mode="simple"))
            if mode == "transfer":
                # The reasoning's own tokens stand in for a one-token placeholder: the budget, whole.
                request = dataclasses.replace(ask, mode="simple", context="x")
                n = p.text_tokens(p.prompt_text(request)[0]) - 1 + think
            elif mode == "answer":
                request = dataclasses.replace(ask, mode="think")
                n = p.text_tokens(p.prompt_text(request)[0]) + think + p.second_stage_suffix(request)
            else:
                n = p.text_tokens(p.prompt_text(dataclasses.replace(ask, mode=mode))[0])
            out.append(Stage(name, role, self.system.cascade.names[role], n + image_tokens[role], new,
                             self.contexts[role]))
        return out

    def check(self, question: str, images: list, max_tokens: int | None = None) -> list[Stage]:
        """The stages, or ContextExceeded naming the first that cannot fit."""
        self.quick_check(question, max_tokens)
        stages = self.stages(question, images, max_tokens)
        for stage in stages:
            if not stage.fits:
                raise ContextExceeded(stage)
        return stages


def check_prompt(generator, request: Request, name: str, role: str, model: str, context: int) -> None:
    """One first-stage request against its model's context, just before it runs (Checked, for a transfer
    prompt whose reasoning is known only now): raises ContextExceeded."""
    p = Prompting.of(generator)
    n = p.text_tokens(p.prompt_text(request)[0]) + p.image_tokens(dataclasses.replace(request, context=None))
    stage = Stage(name, role, model, n, request.max_new_tokens, context)
    if not stage.fits:
        raise ContextExceeded(stage)
