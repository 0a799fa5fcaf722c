"""The two lmms-eval models, `mai` (the cascade) and `mai-single` (one model, Simple or Think), as subclasses of
lmms-eval's ``lmms``: what they do, their model args and their run directory are described in
mai.lmms_eval_model, which holds everything that needs no lmms-eval. This module imports lmms-eval at its top:
only lmms-eval imports it, through the entry point's class paths (mai.lmms_eval_model.manifests), so ``import
mai`` and plugin discovery stay free of it.
"""
from __future__ import annotations

import os
import time

import torch
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list
from lmms_eval.api.instance import GenerationResult, TokenCounts
from lmms_eval.api.model import lmms
from tqdm.auto import tqdm

from mai import MaiError
from mai.answers import Matcher
from mai.batch import Query, generate_batch, run_cascade_stage_major
from mai.cascade import Cascade
from mai.cli import check_sparse_layer
from mai.evaluate import trace_output
from mai.generation import Request
from mai.lmms_eval_model import (MAI_ARGS, SINGLE_ARGS, cascade_config, chunks, is_padding, load_generator,
                                 open_store, parse_args)
from mai.lmms_eval_requests import (Agreement, Item, agreement_for, base_row, by_task, check_text_only, item_key,
                                    items_of, returned_text, task_metrics, task_of)


def _error_row(item: Item, system: str, err: BaseException) -> dict:
    row = base_row(item, system, "", "")
    row.pop("score", None)
    row["error"] = f"{type(err).__name__}: {err}".strip()
    return row


class _Base(lmms):
    is_simple = True
    system = ""

    def _processes(self) -> None:
        """This process's rank among the processes lmms-eval runs in, as lmms-eval 0.7.3's own models read
        it (models/simple/qwen3_vl.py: an accelerate Accelerator, its process index and num_processes as
        _rank and _world_size, a GPU each); the evaluator gives each rank every world_size-th document
        (Task.build_all_requests(rank, world_size)) and gathers through self.accelerator. Each rank
        writes its own rows, in <run_name>-rank<I>of<N>; the run name is rank 0's."""
        self.accelerator = Accelerator()
        self._world_size = self.accelerator.num_processes
        self._rank = self.accelerator.process_index
        name = self.args["run_name"] or f"{self.system}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        if self._world_size > 1:
            name = broadcast_object_list([name], from_process=0)[0]  # one name for every rank's rows
            name = f"{name}-rank{self._rank}of{self._world_size}"
            if self.args["device"] in (None, "auto") and torch.cuda.is_available():
                self.args["device"] = f"cuda:{self.accelerator.local_process_index}"
        self.run_name = name

    @property
    def device(self):
        """Where the evaluator puts the tensors it gathers across ranks: the (first) model's device."""
        return self.generators()[0].loaded.device

    def loglikelihood(self, requests):
        raise MaiError(f"{self.system} generates answers; tasks of output_type loglikelihood are not supported")

    def generate_until_multi_round(self, requests):
        raise MaiError(f"{self.system} answers single-turn tasks; multi-round generation is not supported")

    def _open(self, items: list[Item]) -> None:
        agreement = {t: self.agreement(items[ix[0]]).describe for t, ix in by_task(items).items()}
        self.store = open_store(self.args, self.run_name, self.system,
                                dict(self.run_config(), tasks=sorted(agreement), agreement=agreement))
        self.store.write_json("models.json", self.models)

    def _run(self, requests, answer_chunk) -> list:
        """Every request, task by task, `batch_size` at a time: answer_chunk(items) -> [(raw, row, counts)];
        rows are written as each chunk completes; a chunk that raises is rerun one request at a time
        and a request that still fails becomes an error row and an empty answer. A request whose row
        the run directory already holds (a resumed run) is answered from it, not again; lmms-eval's
        padding copies get an empty answer and no row."""
        out: list = [GenerationResult(text="", token_counts=TokenCounts())] * len(requests)
        asked = [i for i, r in enumerate(requests) if not is_padding(r)]
        items = items_of([requests[i] for i in asked], self.task_dict, self.args["simple_tokens"])
        check_text_only(items, self.generators())
        if self.store is None:
            self._open(items)
        rows = {row["key"]: row for row in self.store.rows()}
        todo = []
        for i, item in zip(asked, items):
            row = rows.get(item_key(item, self.system))
            if row is None:
                todo.append((i, item))
            else:
                out[i] = GenerationResult(text=row["returned"], token_counts=TokenCounts(**row.get("token_counts", {})))
        by_index = dict(todo)
        groups = [c for ix in by_task([item for _, item in todo]).values()
                  for c in chunks([todo[k][0] for k in ix], self.args["batch_size"])]
        for chunk in tqdm(groups, desc=self.system, unit="batch", disable=self.rank != 0):
            for i, (returned, row, counts) in self._answer_chunk(chunk, by_index, answer_chunk):
                row["token_counts"] = counts.to_dict()  # what lmms-eval got, for a resumed run
                self.store.append(row)
                out[i] = GenerationResult(text=returned, token_counts=counts)
        return out

    def _answer_chunk(self, chunk: list[int], items: dict, answer_chunk) -> list:
        try:
            return list(zip(chunk, answer_chunk([items[i] for i in chunk])))
        except Exception:  # find the request that fails, keep the others
            done = []
            for i in chunk:
                try:
                    done.append((i, answer_chunk([items[i]])[0]))
                except Exception as err:
                    done.append((i, ("", _error_row(items[i], self.system, err), TokenCounts())))
            return done

    def agreement(self, item: Item) -> Agreement:
        raise NotImplementedError

    def generators(self) -> list:
        raise NotImplementedError


class MAI(_Base):
    """The MAI cascade (mai.cascade) as an lmms-eval simple model; see the module doc."""

    system = "mai"

    def __init__(self, **kwargs):
        super().__init__()
        self.args = parse_args("mai", kwargs, MAI_ARGS)
        self.config = cascade_config(self.args)
        agreement_for(None, [], self.args["agree"])  # a wrong agree stops before any model loads
        self._processes()
        self.small = load_generator(self.args["small"], self.args)
        self.large = load_generator(self.args["large"], self.args)
        check_sparse_layer(self.config, self.small.loaded)
        self.cascade = Cascade(self.small, self.large, self.config, self.small.loaded.label,
                               self.large.loaded.label)
        self.models = {g.loaded.label: g.loaded.describe() for g in (self.small, self.large)}
        self.store = None

    def run_config(self) -> dict:
        return dict(cascade=self.config.to_dict())

    def generators(self) -> list:
        return [self.small, self.large]

    def agreement(self, item: Item) -> Agreement:
        return agreement_for(item.benchmark, task_metrics(task_of(item.doc_to_visual)), self.args["agree"])

    def generate_until(self, requests) -> list:
        return self._run(requests, self._answer)

    def _answer(self, items: list[Item]) -> list:
        agreement = self.agreement(items[0])  # a chunk holds one task
        # question + post_prompt is the context: the Simple prompt as lmms-eval built it
        queries = [Query(it.question, it.images(), agreement.matcher, it.post_prompt, it.max_new_tokens)
                   for it in items]
        out = []
        for item, trace in zip(items, run_cascade_stage_major(self.cascade, queries)):
            returned = returned_text(trace.prediction, item.until)
            row = base_row(item, self.system, trace.prediction, returned)
            row.update({k: v for k, v in trace_output(trace).items() if k != "text"}, agree_rule=agreement.describe)
            totals = trace.totals()
            think = [c for c in trace.calls if c.mode == "think"]
            counts = TokenCounts(input_tokens=totals["small_input_tokens"] + totals["large_input_tokens"],
                                 output_tokens=totals["small_output_tokens"] + totals["large_output_tokens"],
                                 reasoning_tokens=think[0].result["output_tokens"] if think else None)
            out.append((returned, row, counts))
        return out

class MAISingle(_Base):
    """One model with the Simple or Think prompt (Table 7's S and R rows) as an lmms-eval simple model."""

    system = "mai-single"

    def __init__(self, **kwargs):
        super().__init__()
        self.args = parse_args("mai-single", kwargs, SINGLE_ARGS)
        if self.args["mode"] not in ("simple", "think"):
            raise MaiError(f"mode must be simple or think, got {self.args['mode']!r}")
        self._processes()
        self.generator = load_generator(self.args["model"], self.args)
        self.models = {self.generator.loaded.label: self.generator.loaded.describe()}
        self.store = None

    def run_config(self) -> dict:
        return dict(mode=self.args["mode"])

    def generators(self) -> list:
        return [self.generator]

    def agreement(self, item: Item) -> Agreement:
        return Agreement(Matcher, "none (one model)")

    def generate_until(self, requests) -> list:
        return self._run(requests, self._answer)

    def _answer(self, items: list[Item]) -> list:
        mode = self.args["mode"]
        requests = [Request(question=it.question, images=it.images(), mode=mode, post_prompt=it.post_prompt,
                            max_new_tokens=it.max_new_tokens if mode == "simple" else int(self.args["think_tokens"]))
                    for it in items]
        out = []
        for item, result in zip(items, generate_batch(self.generator, requests)):
            returned = returned_text(result.text, item.until)
            row = base_row(item, self.system, result.text, returned)
            summary = result.summary()
            summary.pop("text")
            row.update(summary, model=self.generator.loaded.label, mode=mode)
            counts = TokenCounts(input_tokens=result.input_tokens, output_tokens=result.output_tokens,
                                 reasoning_tokens=result.output_tokens if mode == "think" else None)
            out.append((returned, row, counts))
        return out
