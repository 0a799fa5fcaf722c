#!/usr/bin/env python
"""Write a random-weight checkpoint directory of any supported family in the layout of a downloaded one.

    python scripts/make_checkpoint.py NAME DIR [--thinking] [--no-weights] [--seed N]

NAME is a random-weight architecture of mai.families: Qwen3-VL's tiny-small, tiny-large, qwen3-vl-2b/4b/8b,
and each other family's tiny shape (tiny-qwen2.5-vl, tiny-gemma3, tiny-llava-onevision, tiny-internvl3.5,
tiny-smolvlm, tiny-qwen3, tiny-smollm2, tiny-gemma3-text) and released shapes (qwen2.5-vl-3b/7b,
gemma3-4b/12b, llava-onevision-0.5b/7b, internvl3.5-1b/2b/8b, smolvlm-256m/2.2b, qwen3-0.6b/8b,
smollm2-135m-shape, smollm2-1.7b, gemma3-270m-text, gemma3-1b-text; see --help). Other families are written
by transformers' own writers
(mai.checkpoints): config.json, generation_config.json, model.safetensors, the processor's or
tokenizer's files with the chat template, and the same mai_checkpoint.json marker. For Qwen3-VL, DIR receives what Qwen/Qwen3-VL-*-Instruct (with --thinking: -Thinking) holds: config.json with the
released values, generation_config.json, preprocessor_config.json, video_preprocessor_config.json,
chat_template.json, Qwen3's tokenizer files (tokenizer.json, vocab.json, merges.txt,
tokenizer_config.json) and random bf16 weights as safetensors (sharded with model.safetensors.index.json
where the released checkpoint is). --no-weights leaves the weights out, for vLLM's load_format="dummy"; it
allocates none (a released 8B or 12B shape is built on the meta device), so it runs on any machine.
One file is not in a released checkpoint: mai_checkpoint.json, which says the weights are random (runs
record random_weights: true for the directory).

The directory is then passed where a downloaded checkpoint goes, e.g.
    python experiments/10_mai.py --preset cpu --small DIR_SMALL --large DIR_LARGE
Weights are random: answers are noise; only shapes, prompts, token counts and timings are real.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mai import checkpoints, cli, families  # noqa: E402


def main(argv=None) -> None:
    architectures = families.architectures()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=list(architectures), metavar="NAME",
                   help=f"architecture: {', '.join(architectures)}")
    p.add_argument("directory", metavar="DIR", help="output directory (created; files in it are replaced)")
    p.add_argument("--thinking", action="store_true", help="a -Thinking checkpoint: its chat template opens <think>")
    p.add_argument("--no-weights", dest="weights", action="store_false",
                   help="leave out the weights (for vLLM's load_format='dummy')")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    args = p.parse_args(argv)
    family = architectures[args.name]
    out = checkpoints.write(family, args.name, args.directory, thinking=args.thinking, weights=args.weights,
                            seed=args.seed)
    files = sorted(f.name for f in out.iterdir())
    print(f"{out}: {args.name}{' (Thinking)' if args.thinking else ''}, "
          f"{'random weights' if args.weights else 'no weights'}: {', '.join(files)}")


if __name__ == "__main__":
    cli.run(main)
