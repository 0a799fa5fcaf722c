#!/usr/bin/env bash
# Checks MAI's vLLM prompts against vLLM's own Qwen3-VL input processing, on a machine WITHOUT a GPU:
#
#     bash scripts/check_vllm_prompts.sh            # VLLM_VENV=... to choose where vLLM's virtualenv goes
#
# Creates (or reuses, when current) a separate virtualenv with requirements-gpu.txt (vLLM 0.30.0, torch
# 2.13.0, transformers 5.24; it downloads gigabytes the first time), then runs scripts/check_vllm_prompts.py:
# a weightless 2B-shape checkpoint directory loads as a vLLM model config; vLLM's expansion of our
# TokensPrompts (one <|image_pad|> per image) equals the transformers processor's for several image sizes;
# the second stage's prompt extends the first's token for token. Not part of the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VLLM_VENV:-$HOME/.cache/mai/vllm-venv}
PY=${PYTHON:-python3}
stamp="$VENV/.installed"
want=$(cat requirements.txt requirements-gpu.txt scripts/check_vllm_prompts.sh | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "installing requirements-gpu.txt into $VENV (the first time: gigabytes, minutes)"
    [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -r requirements-gpu.txt
    echo "$want" > "$stamp"
fi
# vLLM's torchvision is built for PyPI's torch; a torch from elsewhere (a local CPU wheel) breaks its import.
if ! "$VENV/bin/python" -c "import torchvision" 2>/dev/null; then
    echo "error: torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)') and torchvision are not one" \
         "build in $VENV; reinstall PyPI's: $VENV/bin/pip install --force-reinstall --no-deps torch==2.13.0" >&2
    exit 2
fi
HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_LOGGING_LEVEL=${VLLM_LOGGING_LEVEL:-WARNING} \
    exec "$VENV/bin/python" scripts/check_vllm_prompts.py
