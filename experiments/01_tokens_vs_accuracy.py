"""Figure 1: accuracy against mean output tokens for Qwen3-VL 2B/4B/8B with the Simple (S) and the reasoning
(R) prompt, per benchmark: a large model answering briefly can beat a small one reasoning at length.

    python experiments/01_tokens_vs_accuracy.py                  # paper: reuses or runs Table 7's run
    python experiments/01_tokens_vs_accuracy.py --preset cpu     # tiny random models, synthetic data
    python experiments/01_tokens_vs_accuracy.py --preset cpu-real   # real Qwen2.5-Coder pair, shipped BBH tasks and GSM8K

The points are Table 7's: this script runs experiments/07_prompt_modes.py with the same flags (which
resumes, so rows that exist are reused and no model is loaded for them), then draws the figure to
figures/figure1_tokens_vs_accuracy*.png in 07's report/ (or --report-dir).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import figure01  # noqa: E402
from mai import cli  # noqa: E402

HERE = Path(__file__).resolve().parent


def _table7():
    spec = importlib.util.spec_from_file_location("prompt_modes", HERE / "07_prompt_modes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    table7 = _table7()
    args = table7.main(argv, doc=__doc__)  # resumes: finished rows are reused
    path = figure01.build(Path(args.out) / table7.EXPERIMENT / args.run_name, args.report_dir)
    print(f"figure: {path}")


if __name__ == "__main__":
    cli.run(main)
