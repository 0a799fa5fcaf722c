"""The transformers backend of the generation interface (mai.request): Request -> Result.

A generate call reads as its verbs: encode the prompt (or, for a second stage, continue from the first
stage's cache: mai.kv_reuse), prefill and decode in one transformers generate call under a stage timer
(mai.stage_timing), then the Result, with the cache kept for a second stage when asked.

Decoding is greedy (the paper's and lmms-eval's setting); `seed` only matters for sampling backends.

Batches (`HFGenerator.generate_batch`, used by the stage-major cascade in mai.batch): requests are
left-padded into one generate call per (min, max new tokens) group. A request's stage times are then
the batch's stage times divided evenly among its requests (amortised cost, not a latency), and its
Result says `batch_size`. Greedy rows are independent (padding is masked and M-RoPE positions follow
the attention mask), so a batched answer is the batch-1 answer up to floating-point differences between
batched and unbatched kernels; on the tiny fp32 models they are identical token for token
(tests/test_batch.py). Second stages (mode "answer") continue each request's own KV cache one at a
time, exactly as `generate` does; such a Result says `batch_size` 1 and why, in `fallback`.

Attention for sparse transfer (Request.capture): the prefill of the call records the last query row at
the asked layers (mai.attention.capture_attention, prefill_only), so a second stage's prefill of its
suffix on the first stage's cache yields the row over every key, image and reasoning included, without
a second vision pass or a re-prefill (mai.transfer).
"""
from __future__ import annotations

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

from mai import compiled_decode, kv_reuse, prompts
from mai import images as images_mod
from mai.attention import capture_attention
from mai.models import LoadedModel
from mai.request import STAGES, Request, Result, utc_now  # noqa: F401  (the interface, imported from here by callers)
from mai.stage_timing import StageTimer


class HFGenerator:
    """The transformers backend: generate(Request) and generate_batch(requests), each a list of verbs."""

    def __init__(self, loaded: LoadedModel, seed: int = 0, max_batch: int | None = None, decode: str = "eager"):
        if decode not in compiled_decode.DECODES:
            raise ValueError(f"decode must be one of {compiled_decode.DECODES}, got {decode!r}")
        self.loaded, self.seed = loaded, seed
        self.max_batch = max_batch  # generate_batch: most requests per generate call (None: no limit)
        self.decode = decode  # "compiled": first stages decode on a static cache with a compiled forward
        self._compilable = False  # inside generate(), for a call the compiled decode may take (see _decode)
        self._static = compiled_decode.static_caches(loaded.model) if decode == "compiled" else None

    @torch.inference_mode()
    def generate(self, request: Request) -> Result:
        torch.manual_seed(self.seed)
        started = utc_now()
        timer = StageTimer(self.loaded.device)
        inputs, first_text, cached = self._inputs(request)
        inputs = self._to_device(inputs)
        timer.encoded()
        config = self._config(request)
        kwargs = self._continue_from_cache(request)
        # A captured call's hooks stay on every forward of the call, which a compiled forward would not run.
        self._compilable = not request.capture
        try:
            with timer.generating(self.loaded.family.tower(self.loaded.model)):
                out, attention = self._prefill_and_decode(inputs, kwargs, config, timer.prefill_clock,
                                                          request.capture)
        finally:
            self._compilable = False
        n_in = inputs["input_ids"].shape[1]
        new = out.sequences[0, n_in:]
        stopped = bool(new.numel()) and int(new[-1]) in (config.eos_token_id or [])
        result = Result(text=self.loaded.tokenizer.decode(new, skip_special_tokens=True), input_tokens=n_in,
                        output_tokens=int(new.numel()), times=timer.times(), cached_tokens=cached, stopped=stopped,
                        first_text=first_text, images=len(request.images), attention=attention,
                        output_ids=new.tolist(), started=started, ended=utc_now())
        if request.keep_cache:
            kv_reuse.keep(result, self.loaded, out, inputs)
        return result

    def generate_batch(self, requests: list[Request]) -> list[Result]:
        """Every request's Result, in order, first stages batched (see the module doc).

        Requests are grouped by (min_new_tokens, max_new_tokens) and cut into chunks of max_batch; each
        chunk is one left-padded generate call. Second stages (mode "answer") and generators whose
        decoding differs from plain generate (speculative decoding needs batch 1) run one at a time."""
        results: list[Result | None] = [None] * len(requests)
        groups: dict[tuple[int, int], list[int]] = {}
        for i, request in enumerate(requests):
            reason = self._why_alone(request)
            if reason:
                results[i] = self.generate(request)
                results[i].batch_size, results[i].fallback = 1, reason
            else:
                groups.setdefault((request.min_new_tokens, request.max_new_tokens), []).append(i)
        size = self.max_batch or len(requests) or 1
        for indices in groups.values():
            for start in range(0, len(indices), size):
                chunk = indices[start:start + size]
                for i, result in zip(chunk, self._generate_chunk([requests[i] for i in chunk])):
                    results[i] = result
        return results

    def encode(self, request: Request) -> dict:
        """The model inputs generate would prefill for a first-stage request at batch size 1 (the rendered
        template, the family's encoding, on the model's device)."""
        return self._to_device(self._inputs(request)[0])

    def reasoning_ids(self, first: Result) -> torch.Tensor:
        """The first stage's generated tokens without a closing eos: [n]."""
        return kv_reuse.reasoning_ids(first, self.loaded.eos_token_ids)

    # -- encode ----------------------------------------------------------------------------------------

    def _inputs(self, request: Request) -> tuple[dict, str, int]:
        """Processor inputs for the request, its user text, and the count of reused (cached) tokens."""
        if request.mode == "answer":
            return kv_reuse.second_stage_inputs(self.loaded, request)
        lm = self.loaded
        prompt, text = self._prompt(request)
        # lmms-eval's image sizes (mai.images), resized by us so that every backend sees these pixels.
        images = images_mod.prepare(request.images, lm.processor, lm.family)
        return dict(lm.family.encode(lm.processor, [prompt], images)), text, 0

    def _prompt(self, request: Request) -> tuple[str, str]:
        """A first-stage request's rendered prompt and its user text."""
        lm = self.loaded
        text = prompts.user_text(request.question, request.mode, request.post_prompt, request.context,
                                 lm.thinking, request.think_prompt, request.simple_prompt)
        return prompts.render(lm.processor, len(request.images), text,
                              thinking=lm.thinking and request.mode == "think", family=lm.family), text

    def _to_device(self, inputs: dict) -> dict:
        lm = self.loaded
        inputs = {k: (v.to(lm.device) if torch.is_tensor(v) else v) for k, v in inputs.items()}
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(lm.dtype)
        return inputs

    def _config(self, request: Request) -> GenerationConfig:
        """Greedy decoding. A forced output length (min = max new tokens, as profiling asks) stops on
        length alone instead of masking the stop tokens: transformers' min-length processor rebuilds a
        vocabulary-wide mask at every step, which costs a tiny model ~2 ms a token and would be timed as
        decode."""
        lm = self.loaded
        forced = request.min_new_tokens >= request.max_new_tokens
        return GenerationConfig(max_new_tokens=request.max_new_tokens,
                                min_new_tokens=0 if forced else request.min_new_tokens, do_sample=False,
                                eos_token_id=[] if forced else lm.eos_token_ids,
                                pad_token_id=lm.tokenizer.pad_token_id or lm.eos_token_ids[0],
                                return_dict_in_generate=True, use_cache=True)

    # -- continue from the cache, prefill, decode ------------------------------------------------------

    def _continue_from_cache(self, request: Request) -> dict:
        """generate's keyword arguments that continue a second stage on its first stage's cache."""
        if request.mode != "answer":
            return {}
        kv_reuse.restore_position_state(self.loaded, request.reuse)
        return {"cache": request.reuse.cache}

    def _prefill_and_decode(self, inputs: dict, kwargs: dict, config: GenerationConfig, clock: LogitsProcessor,
                            capture: tuple[int, ...]):
        """The generate output, and the prefill's last-row attention at the `capture` layers (None without).
        The capture's extra work (one float32 row per asked layer) is part of the prefill it rides on; the
        decode steps compute nothing extra."""
        if not capture:
            return self._decode(inputs, kwargs, config, clock), None
        # The capture's hooks stay on every forward of the call, so a captured call decodes eagerly.
        with capture_attention(self.loaded.model, capture, prefill_only=True) as cap:
            out = self._decode(inputs, kwargs, config, clock)
        return out, {layer: row.float().cpu() for layer, row in cap.rows.items()}

    def _decode(self, inputs: dict, kwargs: dict, config: GenerationConfig, clock: LogitsProcessor):
        """The generate call itself; a subclass changes how tokens are decoded (mai.speculative).

        With decode "compiled", a first stage of generate() (batch 1; not a second stage, which continues its
        first stage's cache, nor a captured call) decodes over a static cache with the compiled forward
        (mai.compiled_decode, which says why batches stay eager), if its cache fits compiled_decode.MAX_LENGTH;
        a longer call decodes eagerly. generate_batch's calls, a chunk of one
        included, stay eager: a stage-major run computes what it computed before the compiled decode existed,
        and its two lanes hold no compiled graphs (each holds its own copy of the weights)."""
        generate = self.loaded.model.generate
        batch, width = inputs["input_ids"].shape
        tokens = width + config.max_new_tokens  # the positions the call's cache holds
        if self.decode == "compiled" and self._compilable and not kwargs and compiled_decode.fits(tokens):
            with compiled_decode.compiling():
                return generate(**inputs, **self._static.generate_kwargs(batch, tokens),
                                generation_config=config, logits_processor=LogitsProcessorList([clock]))
        return generate(**inputs, **kwargs, generation_config=config, logits_processor=LogitsProcessorList([clock]))

    # -- batches ---------------------------------------------------------------------------------------

    def _why_alone(self, request: Request) -> str | None:
        """Why generate_batch runs this request by itself (Result.fallback), or None to batch it."""
        if request.mode == "answer":
            return "second stage continues its own cache"
        if type(self)._decode is not HFGenerator._decode:
            return "decoding needs batch size 1"
        # A kept first stage needs its own images' pixels back: split per row for grids of patches only.
        if request.keep_cache and request.images and "image_grid_thw" not in self.loaded.family.vision_inputs:
            return "this family's image inputs are not split per request"
        return None

    @torch.inference_mode()
    def _generate_chunk(self, requests: list[Request]) -> list[Result]:
        """One left-padded generate call over first-stage requests with the same length limits."""
        lm = self.loaded
        torch.manual_seed(self.seed)
        started = utc_now()
        timer = StageTimer(lm.device)
        rendered = [self._prompt(r) for r in requests]
        inputs = self._to_device(self._encode_batch([prompt for prompt, _ in rendered], requests))
        timer.encoded()
        config = self._config(requests[0])
        with timer.generating(lm.family.tower(lm.model)):
            out = self._decode(inputs, {}, config, timer.prefill_clock)
        width, times = inputs["input_ids"].shape[1], timer.times(len(requests))
        pads = (inputs["attention_mask"] == 0).sum(1).tolist()  # left padding of each row
        image_rows = kv_reuse.image_rows([len(r.images) for r in requests])
        results, ended = [], utc_now()
        for i, (request, (_, text)) in enumerate(zip(requests, rendered)):
            result = _row_result(lm, request, out.sequences[i, width:], width - pads[i], config, times, text)
            result.batch_size, result.started, result.ended = len(requests), started, ended
            if request.keep_cache:
                kv_reuse.keep_row(result, lm, out, inputs, i, pads[i], width + result.output_tokens, image_rows[i])
            results.append(result)
        return results

    def _encode_batch(self, rendered: list[str], requests: list[Request]) -> dict:
        """The processor's inputs for rendered prompts, left-padded (generate appends on the right)."""
        lm = self.loaded
        images = images_mod.prepare([image for r in requests for image in r.images], lm.processor, lm.family)
        side, lm.tokenizer.padding_side = lm.tokenizer.padding_side, "left"
        try:
            return dict(lm.family.encode(lm.processor, rendered, images, padding=True))
        finally:
            lm.tokenizer.padding_side = side


def _row_result(lm: LoadedModel, request: Request, new: torch.Tensor, n_in: int, config: GenerationConfig,
                times: dict, first_text: str) -> Result:
    """The Result of one row of a batched generate from its generated tokens `new`: those up to its first
    stop token (what follows is padding)."""
    # The stop tokens this call used: none when the output length was forced.
    eos = torch.tensor(list(config.eos_token_id or []), dtype=torch.long, device=new.device)
    ended = torch.isin(new, eos).nonzero()
    n_out = int(ended[0]) + 1 if len(ended) else int(new.numel())
    return Result(text=lm.tokenizer.decode(new[:n_out], skip_special_tokens=True), input_tokens=n_in,
                  output_tokens=n_out, times=dict(times), stopped=bool(len(ended)), first_text=first_text,
                  images=len(request.images), output_ids=new[:n_out].tolist())
