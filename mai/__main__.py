"""Ask MAI one question, about images or text alone, and see which route the cascade took.

    python -m mai answer --image chart.png --question "Which year had the highest sales?"
    python -m mai answer --image chart.png --question "..." --transfer sparse --sparse-layer 12 --delta 0.8
    python -m mai answer --preset cpu --image chart.png --question "..."   # tiny random models, CPU
    python -m mai answer --preset cpu-text --question "Is a tomato a fruit?"   # text only, tiny random models
    python -m mai answer --preset cpu-real --question "..."   # text only: Qwen2.5-Coder 0.5B + 1.5B, CPU
    python -m mai serve --preset cpu   # an OpenAI-compatible endpoint on 127.0.0.1:8000 (mai/serving/server.py)

Without --image the question is text only: every pair takes one (a vision-language model is then asked
with no image part). An --image given to a text-only model is refused, not dropped: the model could not
see it, and its answer would seem to be about the image.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mai import MaiError, cli, experiment, prompts



def presets() -> dict:
    """The served presets (mai.serving.server.PRESETS): one answer, served or asked here, is computed with the same
    settings, and cpu-real's are mai.cli's frozen REAL_*, as Table 10's."""
    from mai.serving.server import PRESETS

    return PRESETS


def family_of(spec: str):
    """The family of a model spec read without its weights (its mai.model_specs.resolve record: an architecture
    name, a real checkpoint, a local checkpoint directory's config.json); None for a hub id, which would need the
    hub: it is checked again once loaded."""
    from mai.model_specs import is_local_or_hub_id, resolve

    if is_local_or_hub_id(spec) and not (Path(spec) / "config.json").is_file():
        return None
    return resolve(spec).family


def check_sees_images(role: str, spec: str, family, n_images: int) -> None:
    if n_images and family is not None and not family.multimodal:
        raise MaiError(f"--image given, but the {role} model {spec} is text-only ({family.name}) and cannot see "
                       "images; ask without --image, or choose a vision-language pair")


def answer(argv=None) -> None:
    from PIL import Image

    from mai.benchmarks import get_benchmark
    from mai.cascade import Cascade

    p = cli._Parser(prog="python -m mai answer", description=__doc__,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", action="append", default=[],
                   help="image file (repeat for several); none: a text-only question")
    p.add_argument("--question", required=True)
    p.add_argument("--preset", choices=sorted(presets()), default="paper",
                   help="paper: Qwen3-VL 2B + 8B from the hub; cpu: tiny random-weight Qwen3-VL models; cpu-text: "
                        "tiny random-weight text models (Qwen3, SmolLM2); cpu-real: Qwen2.5-Coder 0.5B + 1.5B "
                        "Instruct, real weights, text only")
    p.add_argument("--benchmark", default="chartqa",
                   help="whose post-prompt and answer matcher to use (default: chartqa)")
    p.add_argument("--device", default="auto")
    p.add_argument("--dtype", help="auto (the default unless the preset names one), bf16, fp16, fp32")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the preset's, else torch's own)")
    p.add_argument("--decode", choices=("eager", "compiled"), default="eager",
                   help="eager (default), or compiled: first stages decode with a compiled forward (mai/compiled_decode.py)")
    p.add_argument("--attn", default="sdpa")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-pixels", type=int)
    p.add_argument("--json", action="store_true", help="print the whole trace as JSON")
    cli.add_cascade_flags(p)
    p.add_argument("--think-prompt", choices=list(prompts.THINK_STYLES),
                   help="the Think prompt, as the experiments' flag (default: the preset's, else instruction)")
    p.add_argument("--simple-prompt", type=cli.simple_prompt_arg, metavar="STYLE|BENCHMARK=STYLE,...",
                   help="the Simple prompt, as the experiments' flag (default: the preset's, else post-prompt)")
    args = p.parse_args(argv)
    for key, value in presets()[args.preset].items():  # a flag given wins over the preset
        if getattr(args, key, None) is None and key in vars(args):
            setattr(args, key, value)
    args.transfer, args.think_prompt = args.transfer or "full", args.think_prompt or "instruction"
    args.dtype = args.dtype or "auto"
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if not args.question.strip():
        raise MaiError("--question is empty")
    bench = get_benchmark(args.benchmark)
    for role, spec in (("small", args.small), ("large", args.large)):  # before any image or weight is read
        check_sees_images(role, spec, family_of(spec), len(args.image))
    images = []
    for path in args.image:
        try:
            images.append(Image.open(path).convert("RGB"))
        except OSError as err:
            raise MaiError(f"cannot read image {path}: {err}") from None
    config = cli.cascade_config(args)
    small = experiment.generator(args.small, args)
    large = experiment.generator(args.large, args)
    for role, gen in (("small", small), ("large", large)):  # a hub id's family is known only now
        check_sees_images(role, gen.loaded.spec, gen.loaded.family, len(images))
    cli.check_sparse_layer(config, small.loaded)
    cascade = Cascade(small, large, config, small.loaded.label, large.loaded.label)
    simple_tokens = min(bench.max_new_tokens, args.simple_tokens or bench.max_new_tokens)
    cli.check_split_and_think_prompt(argparse.Namespace(benchmarks=[bench.name], think_prompt=args.think_prompt,
                                                        simple_prompt=args.simple_prompt))
    think, simple = prompts.styled(args.question, bench, args.think_prompt,
                                   cli.simple_prompt_styles(args.simple_prompt, [bench.name])[bench.name])
    trace = cascade.answer(args.question, images, bench.agreement, bench.post_prompt, simple_tokens,
                           think_prompt=think, simple_prompt=simple)
    if args.json:
        print(json.dumps(trace.to_dict(), indent=2))
        return
    random = [m.label for m in (small.loaded, large.loaded) if m.random_weights]
    if random:
        print(f"(random weights: {', '.join(random)}; the answer means nothing, the route and costs are real)")
    print(f"question: {'text only' if not images else f'{len(images)} image(s)'}")
    print(f"answer: {trace.answer}\nroute:  {trace.route}")
    print(f"{'model':<14}{'mode':<10}{'in':>7}{'out':>6}{'prefill s':>11}{'decode s':>10}{'total s':>9}  answer")
    for c in trace.calls:
        r = c.result
        print(f"{c.model:<14}{c.mode:<10}{r['input_tokens']:>7}{r['output_tokens']:>6}"
              f"{r['times']['prefill']:>11.3f}{r['times']['decode']:>10.3f}{r['latency']:>9.3f}  {c.answer or ''}")
    t = trace.totals()
    extra = f", kept {trace.kept_tokens}/{trace.reasoning_tokens} reasoning tokens" if trace.kept_tokens else ""
    print(f"total: {t['latency']:.3f} s; large model output tokens {t['large_output_tokens']}{extra}")


def serve(argv=None) -> None:
    """python -m mai serve: see mai/serving/server.py (--help)."""
    from mai.serving.server import serve as run_server

    run_server(argv)


COMMANDS = {"answer": answer, "serve": serve}


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: python -m mai {{{','.join(COMMANDS)}}} ...\n\n{__doc__}", file=sys.stderr)
        sys.exit(0 if argv and argv[0] in ("-h", "--help") else 2)
    cli.run(lambda: COMMANDS[argv[0]](argv[1:]))


if __name__ == "__main__":
    main()
