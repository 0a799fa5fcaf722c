"""The served system, chosen at start-up: MAI or one of Table 10's baselines, answering one question.

Each system runs exactly as experiments/10_mai.py runs it for one example (mai.evaluate's systems): MAI is
mai.cascade.Cascade.answer with the benchmark's agreement rule and post-prompt and the Simple cap
min(benchmark's max_new_tokens, --simple-tokens); a baseline is one model with the Simple or the Think
prompt; Full RT is the small model's reasoning handed whole to the large model's Simple prompt. A request's
max_tokens may lower the cap of the call whose text is returned (the Simple answers of both models for MAI,
whose verification compares them; the Think call of a reasoning baseline).

Every system returns a mai.cascade.Trace, so the response's route, usage and trace have one shape: a
baseline's route is its system name.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time

import torch
from transformers import DynamicCache, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

from mai import prompts
from mai.cascade import Call, Cascade, Trace
from mai.generation import HFGenerator, Request
from mai.serving.budget import check_prompt
from mai.serving.query import current

SYSTEMS = ("mai", "large-S", "large-R", "small-S", "small-R", "full-RT")
BASELINES = {"large-S": ("large", "simple"), "large-R": ("large", "think"),
             "small-S": ("small", "simple"), "small-R": ("small", "think")}


class _Cancelled(StoppingCriteria):
    """After each decoded token: a yield point of the served query (Query.pause: another active query may take
    its turn), then the decode ends at this token once the query is cancelled."""

    def __init__(self, query):
        self.query = query

    def __call__(self, input_ids, scores, **kwargs):
        if self.query.turns is not None and not self.query.cancelled.is_set():
            self.query.turns.pause(self.query.ticket)
        return torch.full((input_ids.shape[0],), self.query.cancelled.is_set(), dtype=torch.bool,
                          device=input_ids.device)


def layers(model) -> list[torch.nn.Module]:
    """Every repeated block of a transformers model: the language model's decoder layers and the vision
    encoder's blocks (the entries of each ModuleList named layers or blocks)."""
    return [module for name, parent in model.named_modules() if isinstance(parent, torch.nn.ModuleList)
            and name.rsplit(".", 1)[-1] in ("layers", "blocks") for module in parent]


@contextlib.contextmanager
def stops_between_layers(model, query=None):
    """While a generate runs: before each layer's forward, stop if the query was cancelled (Aborted). A long
    prefill is one forward pass that no per-token check reaches; this cuts it at every layer, so a cancelled
    query holds the worker for at most one layer's forward (a vision block's over the image's patches, a
    decoder layer's over the prompt), whatever the prompt's length. The query checked is the one whose thread
    runs the forward (current()): other active queries, paused in their own generate, have hooks on the same
    layers (mai.serving.turns)."""
    def check(module, args):
        (current() or query).check()

    handles = [layer.register_forward_pre_hook(check) for layer in layers(model)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# Prompt tokens per prefill forward pass of a served query's long text prompt: vLLM 0.30.0's default
# max_num_batched_tokens for its OpenAI server on hardware other than large GPUs (engine/arg_utils.py).
PREFILL_CHUNK = 2048


class StoppableGenerator(HFGenerator):
    """The transformers backend that stops when the running query is cancelled: between two layers of any
    forward pass and, in decoding, at the next token (its Result is then thrown away: Checked raises Aborted
    right after). A text prompt longer than `prefill_chunk` tokens (--prefill-chunk) is prefilled in chunks of
    that many, so that one layer's forward costs one chunk's attention over the prompt so far, not the whole
    prompt's (quadratic in its length); 0 prefills in one pass. Outside a served query it is HFGenerator,
    unchunked."""

    def __init__(self, loaded, seed: int = 0, prefill_chunk: int = PREFILL_CHUNK):
        super().__init__(loaded, seed)
        self.prefill_chunk = prefill_chunk

    def _prefill_and_decode(self, inputs: dict, kwargs: dict, config, clock, capture):
        query = current()
        if not capture or query is None:
            return super()._prefill_and_decode(inputs, kwargs, config, clock, capture)
        with query.holding():  # the capture swaps the model's attention function for every caller
            return super()._prefill_and_decode(inputs, kwargs, config, clock, capture)

    def _decode(self, inputs: dict, kwargs: dict, config, clock):
        query = current()
        if query is None:
            return super()._decode(inputs, kwargs, config, clock)
        with stops_between_layers(self.loaded.model, query):
            if not kwargs:  # a first stage (a second one continues its first stage's cache)
                kwargs = self._prefill_in_chunks(inputs, query)
            return self.loaded.model.generate(**inputs, **kwargs, generation_config=config,
                                              logits_processor=LogitsProcessorList([clock]),
                                              stopping_criteria=StoppingCriteriaList([_Cancelled(query)]))

    def _prefill_in_chunks(self, inputs: dict, query=None) -> dict:
        """generate's keyword arguments after a chunked prefill of all but the prompt's last token ({} for a
        prompt of one chunk, or with images: their positions are computed over the whole prompt at once).
        generate then continues from the cache as a second stage does (mai.kv_reuse), positions counted from
        the cache's length (as mai.transfer's capture forward)."""
        lm, ids, chunk = self.loaded, inputs["input_ids"], self.prefill_chunk
        n = ids.shape[1]
        if not chunk or n <= chunk or any(key in inputs for key in lm.family.vision_inputs):
            return {}
        cache = DynamicCache(config=lm.model.config)
        for start in range(0, n - 1, chunk):
            end = min(start + chunk, n - 1)
            per_token = {key: inputs[key][:, start:end] for key in lm.family.token_inputs if key in inputs}
            lm.model(input_ids=ids[:, start:end], cache=cache, use_cache=True, logits_to_keep=1, **per_token)
            if query is not None:
                query.pause()  # a yield point between chunks (mai.serving.turns)
        return {"cache": cache}


class Checked:
    """A generator whose every generate() first checks the running query (mai.serving.query), and checks
    again after, so a stage cut short by cancellation never reaches the cascade's decisions. With its model's
    context, a transfer prompt (one that carries another model's reasoning, known only now) is counted before
    it runs and refused when it cannot fit (mai.serving.budget.ContextExceeded)."""

    def __init__(self, generator, role: str = "", model: str = "", context: int | None = None):
        self.generator, self.role, self.model, self.context = generator, role, model, context

    def __getattr__(self, name):  # loaded, label, attention_over_reasoning...: the wrapped generator's
        return getattr(self.generator, name)

    def generate(self, request: Request):
        query = current()
        if query is not None:
            query.check()
        if request.context is not None and self.context is not None:
            check_prompt(self.generator, request, f"{self.role} transfer", self.role, self.model, self.context)
        result = self.generator.generate(request)
        if query is not None:
            query.check()
        return result


@dataclasses.dataclass
class ServedSystem:
    """One system over the small and the large generator; answer() is called by one worker thread per query."""
    name: str  # one of SYSTEMS
    small: object
    large: object
    cascade: Cascade  # holds the config, the models' labels and (for MAI) runs the query
    bench: object  # mai.data.Benchmark: post-prompt, agreement rule, Simple cap
    simple_tokens: int | None  # --simple-tokens (None: the benchmark's own max_new_tokens)
    think_prompt: str = "instruction"  # --think-prompt's style (mai.prompts.THINK_STYLES)
    simple_prompt: str = "post-prompt"  # this benchmark's --simple-prompt style (mai.prompts.SIMPLE_STYLES)

    def __post_init__(self):
        if self.name not in SYSTEMS:
            raise ValueError(f"system must be one of {SYSTEMS}, got {self.name!r}")

    def models(self) -> dict:
        return dict(small=self.cascade.names["small"], large=self.cascade.names["large"])

    @property
    def think_tokens(self) -> int:
        return self.cascade.config.think_tokens

    def simple_cap(self, max_tokens: int | None = None) -> int:
        cap = min(self.bench.max_new_tokens, self.simple_tokens or self.bench.max_new_tokens)
        return min(cap, max_tokens) if max_tokens else cap

    def answer_cap(self, max_tokens: int | None = None) -> int:
        """The new-token limit of the call whose text is returned."""
        if BASELINES.get(self.name, (None, None))[1] == "think":
            return min(self.think_tokens, max_tokens) if max_tokens else self.think_tokens
        return self.simple_cap(max_tokens)

    def ask(self, question: str, images: list) -> dict:
        """The fields every call for this question shares: its prompts in the served styles, as an experiment's
        examples carry them for the same preset (mai.prompts.styled)."""
        think, simple = prompts.styled(question, self.bench, self.think_prompt, self.simple_prompt)
        return dict(question=question, images=images, post_prompt=self.bench.post_prompt, think_prompt=think,
                    simple_prompt=simple)

    def answer(self, question: str, images: list, max_tokens: int | None = None) -> Trace:
        b = self.bench
        ask = self.ask(question, images)
        if self.name == "mai":
            return self.cascade.answer(question, images, b.agreement, b.post_prompt, self.simple_cap(max_tokens),
                                       think_prompt=ask["think_prompt"], simple_prompt=ask["simple_prompt"])
        t0 = time.perf_counter()
        names = self.cascade.names
        if self.name == "full-RT":  # mai.evaluate.transfer_system
            thought = self.small.generate(Request(**ask, mode="think", max_new_tokens=self.think_tokens))
            final = self.large.generate(Request(**ask, mode="simple", max_new_tokens=self.simple_cap(max_tokens),
                                                context=thought.text))
            calls = [Call("small", names["small"], "think", thought.summary()),
                     Call("large", names["large"], "transfer", final.summary())]
            trace = Trace("transfer", final.text, b.extract(final.text), calls, time.perf_counter() - t0)
            trace.reasoning_tokens = thought.content_tokens
            return trace
        role, mode = self.baseline  # mai.evaluate.model_system
        gen = self.small if role == "small" else self.large
        result = gen.generate(Request(**ask, mode=mode, max_new_tokens=self.answer_cap(max_tokens)))
        calls = [Call(role, names[role], mode, result.summary())]
        return Trace(self.name, result.text, b.extract(result.text), calls, time.perf_counter() - t0)

    @property
    def baseline(self) -> tuple[str, str]:
        """A single-model baseline's (role, prompt mode), e.g. large-R's ("large", "think")."""
        return BASELINES[self.name]

    def finish_reason(self, trace: Trace, max_tokens: int | None = None) -> str:
        """'length' when the returned call used its whole token limit, else 'stop'."""
        call = returned_call(trace)
        return "length" if call.result["output_tokens"] >= self.answer_cap(max_tokens) else "stop"


def returned_call(trace: Trace) -> Call:
    """The call whose text the trace returns: MAI's large Simple answer on the simple and reasoning routes,
    the transfer call on the transfer route, a baseline's only call."""
    if trace.route in ("simple", "reasoning"):
        return next(c for c in trace.calls if c.role == "large")
    return trace.calls[-1]
