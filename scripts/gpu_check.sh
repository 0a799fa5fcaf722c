#!/usr/bin/env bash
# GPU check: the serving-at-scale paths on one CUDA GPU (written for one H200), with no hub and no network.
#
#     bash scripts/gpu_check.sh                 # results and logs under $OUT (default /tmp/mai_gpu_check)
#
# Installs nothing: it uses the first Python that has torch with CUDA and transformers' Qwen3-VL
# ($PY, .venv/bin/python, python3, python). Every model is built with RANDOM weights of the real Qwen3-VL
# 2B and 8B shapes (transformers: mai.models; vLLM: load_format="dummy" on a local directory with the
# architecture's config and the shipped tokenizer, which has the real 151,936-token vocabulary); inputs are
# simulated (a noise image, a question of ordinary words) or synthetic (synth-chartqa, synth-pope). The
# numbers are timings of those shapes on this GPU, not the paper's accuracies.
#
#   1. experiments/03_stage_profiling.py (transformers): Tables 3-4 for the 2B and 8B shapes
#   2. experiments/10_mai.py --backend hf, in example order and in stage order (short)
#   3. if vLLM is installed: experiments/10_mai.py --backend vllm --order stage --transfer sparse (the
#      sparse transfer's attention then comes from one transformers prefill), and
#      scripts/gpu_check_vllm.py: vLLM stage profile, cascade in example vs stage order, prefix-cache hits.
#      Without vLLM these are skipped, and the script says so.
# The whole script keeps to an 8-minute budget (BUDGET_S, default 450 s: room is left for a killed step's
# 15 s grace): each step gets a timeout from what is left, and a step that no longer fits is skipped, with a
# line saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/mai_gpu_check}
BUDGET_S=${BUDGET_S:-450}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled \
       TOKENIZERS_PARALLELISM=false VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[gpu_check $(elapsed)s] $*"; }

# step NAME PLANNED_SECONDS COMMAND...: run with a timeout of min(planned, what is left), or skip it.
step() {
  local name=$1 planned=$2; shift 2
  local left=$(( BUDGET_S - $(elapsed) ))
  local limit=$(( planned < left ? planned : left ))
  if (( limit < 30 )); then
    log "SKIPPED $name: ${left}s of the ${BUDGET_S}s budget left"
    echo "$name: skipped (budget)" >> "$OUT/summary.txt"
    return 0
  fi
  log "START $name (timeout ${limit}s): $*"
  local t0=$(date +%s)
  timeout --signal=INT --kill-after=15 "$limit" "$@" 2>&1 | tee "$OUT/$name.log" | grep -v -E "it/s\]|s/it\]|^\s*$"
  local rc=${PIPESTATUS[0]}
  local took=$(( $(date +%s) - t0 ))
  log "END $name: exit $rc after ${took}s"
  echo "$name: exit $rc, ${took}s" >> "$OUT/summary.txt"
}

PY_FOUND=""
for candidate in ${PY:-} .venv/bin/python python3 python; do
  command -v "$candidate" >/dev/null 2>&1 || continue
  if "$candidate" -c "import torch, transformers; assert torch.cuda.is_available(); \
from transformers import Qwen3VLForConditionalGeneration" >/dev/null 2>&1; then PY_FOUND=$candidate; break; fi
done
: > "$OUT/summary.txt"
echo "=== machine ==="
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
if [[ -z "$PY_FOUND" ]]; then
  echo "no Python here has torch with CUDA and transformers with Qwen3-VL; nothing can be checked (installs nothing)"
  exit 1
fi
PY=$PY_FOUND
"$PY" - <<'EOF' | tee "$OUT/versions.txt"
import importlib.metadata as md, platform, torch
def v(p):
    try:
        return md.version(p)
    except md.PackageNotFoundError:
        return "absent"
print(f"python {platform.python_version()} ({__import__('sys').executable})")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, GPU {torch.cuda.get_device_name(0)}, "
      f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB")
print(f"transformers {v('transformers')}, vllm {v('vllm')}, flash-attn {v('flash-attn')}")
EOF
HAVE_VLLM=$("$PY" -c "import importlib.util as u; print(1 if u.find_spec('vllm') else 0)")
RUNS="$OUT/runs"; REPORT="$OUT/report"
COMMON=(--wandb disabled --out "$RUNS")  # each step writes its tables under $REPORT/<step>
MAI_SHORT=(--small qwen3-vl-2b --large qwen3-vl-8b --benchmarks synth-chartqa,synth-pope --limit 2
           --think-tokens 64 --simple-tokens 16)

echo; echo "=== 1. Tables 3-4: transformers stage profile, RANDOM weights of the real 2B and 8B shapes, simulated query ==="
step 03_profile_hf 150 "$PY" experiments/03_stage_profiling.py --random-weights --models qwen3-vl-2b,qwen3-vl-8b \
  --runs 5 --warmup 2 --output-tokens 16,128 --run-name gpu-check "${COMMON[@]}" --report-dir "$REPORT/03_hf"

echo; echo "=== 2. Table 10 (short): transformers backend, RANDOM 2B + 8B shapes, SYNTHETIC data, example then stage order ==="
step 10_mai_hf_example 100 "$PY" experiments/10_mai.py "${MAI_SHORT[@]}" --backend hf --order example \
  --run-name gpu-hf-example "${COMMON[@]}" --report-dir "$REPORT/10_hf_example"
step 10_mai_hf_stage 60 "$PY" experiments/10_mai.py "${MAI_SHORT[@]}" --backend hf --order stage \
  --run-name gpu-hf-stage "${COMMON[@]}" --report-dir "$REPORT/10_hf_stage"

if [[ "$HAVE_VLLM" == "1" ]]; then
  echo; echo "=== 3. vLLM backend: RANDOM (load_format=dummy) 2B + 8B shapes, enforce_eager (fast start, slower decode) ==="
  step 10_mai_vllm_stage 170 "$PY" experiments/10_mai.py "${MAI_SHORT[@]}" --backend vllm --order stage \
    --transfer sparse --sparse-layer 12 --vllm-eager --gpu-memory-utilization 0.7 --run-name gpu-vllm-stage "${COMMON[@]}" \
    --report-dir "$REPORT/10_vllm_stage"
  step vllm_profile_and_orders 170 "$PY" scripts/gpu_check_vllm.py --runs 5 --warmup 2 --output-tokens 16,128 \
    --limit 4 --think-tokens 64 --eager 1 --out "$OUT/vllm.json"
else
  echo; echo "=== 3. vLLM backend: NOT RUN: vllm is not installed in $PY (pip install -r requirements-gpu.txt) ==="
  echo "vllm: not installed, vLLM steps not run" >> "$OUT/summary.txt"
fi

echo; echo "=== summary ($(elapsed)s of ${BUDGET_S}s) ==="
cat "$OUT/versions.txt" "$OUT/summary.txt"
for table in $(find "$REPORT" -name "*.md" 2>/dev/null | sort); do
  echo; echo "--- $table"; cat "$table"
done
echo; echo "logs, runs and tables: $OUT"
