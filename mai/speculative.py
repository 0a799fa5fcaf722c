"""Token-level speculative decoding, the baseline of the paper's Table 12: transformers' assisted generation
(`generate(..., assistant_model=draft)`) with a small draft model proposing tokens that the target verifies.

Greedy assisted generation returns the target's own greedy tokens; what changes is the cost. Each
verification step is one target forward over the draft's proposal: the draft's tokens are accepted up to
the first one that differs from the target's choice, and the target's token after them comes free.

Counting. Per verification step we record the draft tokens proposed and the leading ones accepted (equal
to the tokens the target kept at the same positions). acceptance = accepted / proposed over a request;
rejection = 1 - acceptance. The count wraps the candidate generator of that one call (its get_candidates
and update_candidate_strategy); the library's own `num_matches` is kept too. The two differ only when
an accepted draft ends with eos: the library then counts one fewer match.

The draft's image. In transformers 5.24 the target's generate encodes the image once, before its prefill,
and hands the draft the target's image features; these are dropped outside a prefill, and the draft's
prefill is never marked as one (`is_first_iteration=False`). So the draft never runs its vision tower and
drafts from the image placeholder tokens alone (the output is still exact: the target verifies every
token). The target's features could not serve the draft anyway when their widths differ (8B 4096, 2B
2048). `draft_sees_image=True` (the default) gives the draft's first forward the image itself, for its
own vision tower; False runs the library as it is. `stats["draft_vision_calls"]` records which happened.

Stage times keep HFGenerator's keys. The draft's prefill and first proposal run before the target's first
forward, so they fall in "prefill"; `stats["draft_seconds"]` is the total time spent drafting.
"""
from __future__ import annotations

import contextlib
import time

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

from mai import MaiError
from mai.generation import HFGenerator, Request, Result
from mai.models import LoadedModel
from mai.stage_timing import sync


class DraftCounter:
    """Draft tokens proposed and accepted per verification step of one assisted generate call."""

    def __init__(self, device: torch.device):
        self.device = device
        self.proposed: list[int] = []
        self.accepted: list[int] = []
        self.library_matches: list[int] = []  # the num_matches transformers reports
        self.seconds = 0.0
        self.drafting = False  # True while the draft generates: the target's clock must not tick then
        self.settings: dict = {}
        self._offered: list[int] = []
        self._start = 0

    def attach(self, generator) -> None:
        """Wrap this call's candidate generator (instance attributes: nothing global changes)."""
        self.settings = dict(candidate_generator=type(generator).__name__,
                             num_assistant_tokens=getattr(generator, "num_assistant_tokens", None),
                             assistant_confidence_threshold=getattr(generator, "assistant_confidence_threshold",
                                                                    None))
        config = getattr(generator, "assistant_generation_config", None)
        if config is not None:
            self.settings["num_assistant_tokens_schedule"] = config.num_assistant_tokens_schedule
        get_candidates, update = generator.get_candidates, generator.update_candidate_strategy

        def counted_get_candidates(input_ids, **kw):
            sync(self.device)
            t0, self.drafting = time.perf_counter(), True
            try:
                candidates, logits = get_candidates(input_ids, **kw)
            finally:
                self.drafting = False
                sync(self.device)
                self.seconds += time.perf_counter() - t0
            self._start = input_ids.shape[1]
            self._offered = candidates[0, self._start:].tolist()  # [k] the draft's proposal
            return candidates, logits

        def counted_update(input_ids, scores, num_matches):
            kept = input_ids[0, self._start:].tolist()  # accepted drafts + the target's own token
            n = 0
            while n < min(len(self._offered), len(kept)) and self._offered[n] == kept[n]:
                n += 1
            self.proposed.append(len(self._offered))
            self.accepted.append(n)
            self.library_matches.append(int(num_matches))
            return update(input_ids, scores, num_matches)

        generator.get_candidates = counted_get_candidates
        generator.update_candidate_strategy = counted_update

    def stats(self, **extra) -> dict:
        proposed, accepted, steps = sum(self.proposed), sum(self.accepted), len(self.proposed)
        rate = accepted / proposed if proposed else None
        return dict(draft_proposed=proposed, draft_accepted=accepted, verify_steps=steps,
                    acceptance_rate=rate, rejection_rate=None if rate is None else 1.0 - rate,
                    proposed_per_step=proposed / steps if steps else None,
                    accepted_per_step=accepted / steps if steps else None,
                    draft_seconds=round(self.seconds, 6), step_proposed=self.proposed,
                    step_accepted=self.accepted, library_matches=sum(self.library_matches),
                    **self.settings, **extra)


class _TargetClock(LogitsProcessor):
    """HFGenerator's prefill clock, deaf to the draft (the draft's generate runs the same processors)."""

    def __init__(self, clock, counter: DraftCounter):
        self.clock, self.counter = clock, counter

    def __call__(self, input_ids, scores):
        return scores if self.counter.drafting else self.clock(input_ids, scores)


@contextlib.contextmanager
def _instance_override(obj, name: str, value):
    """Shadow obj.name for the duration of a call; the class attribute is untouched."""
    had, old = name in vars(obj), vars(obj).get(name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, name, old)
        else:
            delattr(obj, name)


def _prefill_with_image(model, vision_inputs: dict):
    """The draft's prepare_inputs_for_generation, handing its first forward (empty cache) the image itself:
    its own pixel_values and image_grid_thw, for its own vision tower, instead of the target's features."""
    prepare = model.prepare_inputs_for_generation

    # The name `kwargs` matters: generate validates model kwargs against this signature.
    def wrapped(input_ids, *args, cache=None, is_first_iteration=False, **kwargs):
        model_inputs = prepare(input_ids, *args, cache=cache, is_first_iteration=is_first_iteration, **kwargs)
        if cache is None or cache.get_seq_length() == 0:
            model_inputs.pop("mm_encoder_outputs", None)
            model_inputs.update(vision_inputs)
        return model_inputs

    return wrapped


class SpeculativeGenerator(HFGenerator):
    """HFGenerator for the target, decoding with the draft's proposals; Result.stats holds the acceptance."""

    def __init__(self, target: LoadedModel, draft: LoadedModel, seed: int = 0,
                 num_assistant_tokens: int | None = None, draft_sees_image: bool = True):
        super().__init__(target, seed)
        t_vocab = target.model.config.get_text_config().vocab_size
        d_vocab = draft.model.config.get_text_config().vocab_size
        if t_vocab != d_vocab or target.tokenizer.get_vocab() != draft.tokenizer.get_vocab():
            # Token-level drafting proposes token ids: both models must read them as the same text.
            raise MaiError(f"speculative decoding needs a draft and a target with one tokenizer: "
                           f"{draft.label} ({draft.family.name}) and {target.label} ({target.family.name}) differ")
        self.draft, self.num_assistant_tokens, self.draft_sees_image = draft, num_assistant_tokens, draft_sees_image
        self._stats: dict | None = None

    def generate(self, request: Request) -> Result:
        if request.mode == "answer" or request.reuse is not None or request.keep_cache:
            raise ValueError("speculative decoding starts from a fresh prompt (no reused or kept cache)")
        self._stats = None
        result = super().generate(request)
        result.stats = self._stats
        return result

    def _decode(self, inputs: dict, kwargs: dict, config: GenerationConfig, clock: LogitsProcessor):
        target, draft = self.loaded.model, self.draft.model
        counter = DraftCounter(self.loaded.device)
        make_candidates = target._get_candidate_generator

        def counted_candidates(*args, **kw):
            generator = make_candidates(*args, **kw)
            counter.attach(generator)
            return generator

        vision_calls = [0]
        tower = self.draft.family.tower(draft)
        hook = None if tower is None else tower.register_forward_hook(
            lambda *_: vision_calls.__setitem__(0, vision_calls[0] + 1))
        old_n = draft.generation_config.num_assistant_tokens
        try:
            with contextlib.ExitStack() as stack:
                stack.enter_context(_instance_override(target, "_get_candidate_generator", counted_candidates))
                vision_inputs = {k: inputs[k] for k in self.draft.family.vision_inputs if k in inputs}
                if self.draft_sees_image and vision_inputs:
                    stack.enter_context(_instance_override(draft, "prepare_inputs_for_generation",
                                                           _prefill_with_image(draft, vision_inputs)))
                if self.num_assistant_tokens is not None:
                    draft.generation_config.num_assistant_tokens = self.num_assistant_tokens
                out = target.generate(**inputs, **kwargs, generation_config=config, assistant_model=draft,
                                      logits_processor=LogitsProcessorList([_TargetClock(clock, counter)]))
        finally:
            draft.generation_config.num_assistant_tokens = old_n
            if hook is not None:
                hook.remove()
        # None: a text-only request had no image for the draft to see or miss.
        self._stats = counter.stats(draft=self.draft.label,
                                    draft_sees_image=self.draft_sees_image if vision_inputs else None,
                                    draft_vision_calls=vision_calls[0])
        return out
