"""How long the paper preset takes on one GPU, before anything runs: the latency model (analysis.latency_model)
with each model's costs at its physical floor, since no GPU profile of the paper's models exists yet.

A model's floor on a GPU of known peak memory bandwidth B and peak bf16 rate F (datasheets, below):

    a forward pass reads every weight once:       at least weight bytes / B        (prefill_base, decode per token)
    a prefill of p tokens does 2 x parameters x p FLOPs: at least 2 N p / F        (prefill_per_token)

Real runs are slower (kernels below peak, the vision encoder, Python between calls), so every time printed is a
lower bound; `experiments/03_stage_profiling.py` on the GPU, then `python -m analysis.latency_model --profile`,
gives the measured costs. `python -m analysis.gpu_estimate` prints the 09 estimate at the paper preset's sizes.
"""
from __future__ import annotations

import argparse
import dataclasses

from analysis.latency_model import Cost
from analysis.table03 import MEMORY_BANDWIDTH
from mai.downloads import HUB_DATASETS, HUB_MODELS

GPU = "H100"
# Peak dense bf16 tensor-core rate, FLOP/s (NVIDIA H100 SXM datasheet: 989 TFLOPS; H200 SXM: the same chip).
PEAK_BF16_FLOPS = {"H100": 989e12, "H200": 989e12}
# A POPE question: a 640x480 COCO image is 300 image tokens under the simple image policy (32 pixels a token
# side: patch 16, merge 2), plus the question, post-prompt and chat template.
POPE_PROMPT_TOKENS = 360
ANSWER_TOKENS = 2  # "Yes" / "No" and the end token
# Appendix B.7: about 20% of the reasoning's tokens hold delta = 80% of the attention (the sparse transfer's size).
KEPT_SHARE = 0.2


def floor_cost(parameters: int, gpu: str = GPU) -> Cost:
    """A model's call costs at the GPU's physical floor (no preprocessing or vision time counted)."""
    read = 2.0 * parameters / MEMORY_BANDWIDTH[gpu]  # bf16 weight bytes / bandwidth
    return Cost(preprocess=0.0, vision=0.0, prefill_base=read, prefill_per_token=2.0 * parameters / PEAK_BF16_FLOPS[gpu],
                decode_base=0.0, decode_per_token=read)


@dataclasses.dataclass
class Estimate:
    seconds: float
    questions: int
    calls: int
    memory_gb: float  # weights of both models + the KV cache of one query

    def lines(self, what: str, gpu: str = GPU) -> list[str]:
        hours = self.seconds / 3600
        return [f"On one {gpu}, by the latency model at the physical floor (analysis/gpu_estimate.py): at least "
                f"{hours:.1f} h for {what} ({self.questions:,} questions, {self.calls} model calls each; real runs "
                "are slower: profile with experiments/03_stage_profiling.py to predict them).",
                f"GPU memory: about {self.memory_gb:.0f} GB (both models' bf16 weights and one query's KV cache)."]


def kv_bytes_per_token(shape: str) -> float:
    from mai.models import architecture_config

    text = architecture_config(shape).get_text_config()
    return 2 * text.num_hidden_layers * text.num_key_value_heads * text.head_dim * 2  # K and V, bf16


def layers_of(shape: str) -> int:
    from mai.models import architecture_config

    return architecture_config(shape).get_text_config().num_hidden_layers


def layer_ablation(small: str, large: str, questions: int, think_tokens: int, layers: int, gpu: str = GPU) -> Estimate:
    """experiments/09_layer_ablation.py on POPE: per question the small model reasons once (think_tokens, its
    attention captured in one more forward), then the large model answers with the Simple prompt alone, with the
    whole reasoning (Full) and with each layer's sparse selection."""
    s, l = HUB_MODELS[small], HUB_MODELS[large]
    cs, cl = floor_cost(s.parameters, gpu), floor_cost(l.parameters, gpu)
    p, kept = POPE_PROMPT_TOKENS, round(KEPT_SHARE * think_tokens)
    small_time = cs.call(p, think_tokens) + cs.prefill(p + think_tokens)  # reasoning, then the capture's forward
    large_time = (cl.call(p, ANSWER_TOKENS) + cl.call(p + think_tokens, ANSWER_TOKENS)
                  + layers * cl.call(p + kept, ANSWER_TOKENS))
    kv = (kv_bytes_per_token(s.shape) + kv_bytes_per_token(l.shape)) * (p + think_tokens)
    memory = (s.bytes + l.bytes + kv) / 1e9
    return Estimate(questions * (small_time + large_time), questions, 2 + 2 + layers, memory)


def layer_ablation_notice(args) -> list[str]:
    """09's estimate for its parsed flags (mai.cli.parse calls it before anything downloads); [] when the run's
    models are not the paper's."""
    if args.small not in HUB_MODELS or args.large not in HUB_MODELS:
        return []
    rows = HUB_DATASETS["pope"].rows
    questions = min(args.limit, rows) if args.limit else rows
    layers = len(args.layers) if args.layers else layers_of(HUB_MODELS[args.small].shape)
    est = layer_ablation(args.small, args.large, questions, args.think_tokens, layers)
    return est.lines(f"Table 9 over {layers} layers")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", default=GPU, choices=sorted(PEAK_BF16_FLOPS))
    p.add_argument("--limit", type=int, help="POPE questions (default: all)")
    args = p.parse_args(argv)
    small, large = "Qwen/Qwen3-VL-2B-Instruct", "Qwen/Qwen3-VL-8B-Instruct"
    questions = args.limit or HUB_DATASETS["pope"].rows
    layers = layers_of(HUB_MODELS[small].shape)
    for line in layer_ablation(small, large, questions, 1024, layers, args.gpu).lines(
            f"Table 9 over {layers} layers", args.gpu):
        print(line)


if __name__ == "__main__":
    main()
