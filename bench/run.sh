#!/usr/bin/env bash
# bench/run.sh — training throughput of vdnn vs PyTorch (CPU) on this machine.
#
# The one entry point:
#   1. builds vdnn (Release) if needed,
#   2. installs PyTorch 2.x (CPU) into bench/.venv with pip, and Debian's python3-torch
#      (1.13, used through /usr/bin/python3) when apt can install it,
#   3. for each case (fmnist_cnn batch 128, vgg_cifar batch 64) runs vdnn and each PyTorch
#      variant interleaved, A B C A B C ..., for ROUNDS rounds, each run a fresh process,
#   4. writes bench/results/train_throughput.md (plus runs.tsv and the raw outputs in raw/).
#
# vdnn's report gives training-only images/s (evaluation is outside its timer, and --no-eval skips
# it), but over every iteration, warm-up included.  vdnn is therefore run for W + N iterations
# in epochs of W batches; the table shows both its own figure and the steady state of epochs 2..,
# the same N-after-W iterations that PyTorch times.
#
# Usage: bench/run.sh [--setup-only]
#
# Environment knobs (defaults in brackets):
#   ROUNDS [5]                 interleaved rounds per case
#   FMNIST_ITERS [60]          timed iterations, fmnist_cnn
#   FMNIST_WARMUP [10]         warm-up iterations, fmnist_cnn
#   VGG_ITERS [30]             timed iterations, vgg_cifar
#   VGG_WARMUP [5]             warm-up iterations, vgg_cifar
#   THREADS [2]                OMP_NUM_THREADS / torch.set_num_threads for every run
#   LR [0.01]                  learning rate for both (constant schedule)
#   SKIP_BUILD [0]             1: don't call cmake (the binary must already exist)
#   SKIP_DEBIAN_TORCH [0]      1: don't try apt-get install python3-torch
#   CHANNELS_LAST [0]          1: also run the pip PyTorch with --channels-last
#   RESULTS [bench/results]    output folder
#
# OPENBLAS_CORETYPE is left exactly as it is in the environment (recorded in the output).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
VENV="$BENCH/.venv"
VDNN="$ROOT/build/vdnn"
ROUNDS=${ROUNDS:-5}
FMNIST_ITERS=${FMNIST_ITERS:-60}
FMNIST_WARMUP=${FMNIST_WARMUP:-10}
VGG_ITERS=${VGG_ITERS:-30}
VGG_WARMUP=${VGG_WARMUP:-5}
THREADS=${THREADS:-2}
LR=${LR:-0.01}   # the same for both; 0.05 diverges on vgg_cifar (no batch norm) and NaNs are not a fair race
SKIP_BUILD=${SKIP_BUILD:-0}
SKIP_DEBIAN_TORCH=${SKIP_DEBIAN_TORCH:-0}
CHANNELS_LAST=${CHANNELS_LAST:-0}
RESULTS=$(realpath -m "${RESULTS:-$BENCH/results}")
DEBIAN_PY=/usr/bin/python3

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

for v in ROUNDS FMNIST_ITERS FMNIST_WARMUP VGG_ITERS VGG_WARMUP THREADS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a non-negative integer, got '${!v}'"
done
((ROUNDS >= 1 && FMNIST_ITERS >= 1 && VGG_ITERS >= 1 && THREADS >= 1)) ||
  die "ROUNDS, *_ITERS and THREADS must be >= 1"

SETUP_ONLY=0
case "${1:-}" in
  --setup-only) SETUP_ONLY=1 ;;
  "") ;;
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (expected --setup-only or nothing)" ;;
esac

# ---------------------------------------------------------------------------------------------
# 1. vdnn
build_vdnn() {
  if [[ $SKIP_BUILD == 1 ]]; then
    [[ -x $VDNN ]] || die "SKIP_BUILD=1 but $VDNN does not exist"
    log "SKIP_BUILD=1: using the existing $VDNN"
    return
  fi
  log "building vdnn (Release; a no-op when up to date)"
  (cd "$ROOT" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build build -j2) >&2
  [[ -x $VDNN ]] || die "build finished but $VDNN is missing"
  local type
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$ROOT/build/CMakeCache.txt" 2>/dev/null || true)
  [[ $type == Release ]] || log "warning: build/ is configured as '${type:-?}', not Release"
}

# ---------------------------------------------------------------------------------------------
# 2. PyTorch: pip 2.x in bench/.venv, Debian's python3-torch through /usr/bin/python3
torch_version_of() {  # python -> version on stdout, or nothing
  "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null || true
}

install_pip_torch() {
  if [[ ! -x $VENV/bin/python ]]; then
    log "creating the virtual environment $VENV"
    python3 -m venv "$VENV" || die "python3 -m venv failed (apt-get install python3-venv?)"
  fi
  local v
  v=$(torch_version_of "$VENV/bin/python")
  # numpy only silences torch's "Failed to initialize NumPy" warning.
  "$VENV/bin/python" -c 'import numpy' 2>/dev/null ||
    "$VENV/bin/python" -m pip install -q numpy >&2 || log "warning: could not install numpy"
  if [[ $v == 2.* ]]; then
    log "pip PyTorch $v already in $VENV"
    return
  fi
  "$VENV/bin/python" -m pip install -q --upgrade pip >&2 || log "warning: could not upgrade pip"
  log "installing PyTorch (CPU) from download.pytorch.org/whl/cpu"
  if ! "$VENV/bin/python" -m pip install --timeout 30 --retries 1 'torch>=2,<3' \
      --index-url https://download.pytorch.org/whl/cpu >&2; then
    log "the PyTorch CPU index is unreachable here: falling back to plain PyPI (the CUDA build of"
    log "the wheel, with its nvidia-* dependencies: a large download; it runs on the CPU all the same)"
    "$VENV/bin/python" -m pip install 'torch>=2,<3' >&2 || die "pip install torch failed"
  fi
  v=$(torch_version_of "$VENV/bin/python")
  [[ $v == 2.* ]] || die "torch in $VENV does not import (got '$v')"
  log "pip PyTorch $v installed in $VENV"
}

install_debian_torch() {
  if [[ $SKIP_DEBIAN_TORCH == 1 ]]; then
    log "SKIP_DEBIAN_TORCH=1: not using Debian's python3-torch"
    return
  fi
  [[ -x $DEBIAN_PY ]] || { log "no $DEBIAN_PY: skipping Debian's python3-torch"; return; }
  if [[ -n $(torch_version_of "$DEBIAN_PY") ]]; then
    log "Debian's python3-torch $(torch_version_of "$DEBIAN_PY") already installed"
    return
  fi
  if ! command -v apt-get >/dev/null; then
    log "no apt-get: skipping Debian's python3-torch"
    return
  fi
  local sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo -n)
  log "trying apt-get install python3-torch (Debian's PyTorch 1.13)"
  if ! apt-cache show python3-torch >/dev/null 2>&1; then
    "${sudo[@]}" apt-get update -qq >&2 || true
  fi
  if apt-cache show python3-torch >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq python3-torch >&2; then
    log "Debian's python3-torch $(torch_version_of "$DEBIAN_PY") installed"
  else
    log "python3-torch is not installable here: skipping the Debian PyTorch variant"
  fi
}

build_vdnn
install_pip_torch
install_debian_torch
if [[ $SETUP_ONLY == 1 ]]; then
  log "setup done"
  exit 0
fi

# ---------------------------------------------------------------------------------------------
# 3. measure
PIP_PY="$VENV/bin/python"
PIP_TORCH=$(torch_version_of "$PIP_PY")
DEBIAN_TORCH=""
[[ $SKIP_DEBIAN_TORCH == 1 || ! -x $DEBIAN_PY ]] || DEBIAN_TORCH=$(torch_version_of "$DEBIAN_PY")

# Variants: label|python (empty for vdnn)|extra pytorch flags
VARIANTS=("vdnn||")
VARIANTS+=("pytorch $PIP_TORCH (pip)|$PIP_PY|")
[[ $CHANNELS_LAST != 1 ]] || VARIANTS+=("pytorch $PIP_TORCH (pip, channels-last)|$PIP_PY|--channels-last")
[[ -z $DEBIAN_TORCH ]] || VARIANTS+=("pytorch $DEBIAN_TORCH (Debian)|$DEBIAN_PY|")

# Cases: model|batch|timed iterations|warm-up iterations
CASES=("fmnist_cnn|128|$FMNIST_ITERS|$FMNIST_WARMUP" "vgg_cifar|64|$VGG_ITERS|$VGG_WARMUP")

RAW="$RESULTS/raw"
rm -rf "$RAW"
mkdir -p "$RAW"
MANIFEST="$RESULTS/runs.tsv"
printf 'model\tbatch\titerations\twarmup\tround\tvariant\tkind\trc\tfile\tloadavg\tcommand\n' >"$MANIFEST"
export OMP_NUM_THREADS=$THREADS

# vdnn times each epoch separately (shuffling and evaluation excluded) and its report's
# images_per_second covers every iteration, the first, slow ones included.  So run it with epochs
# of exactly WARMUP batches (--synthetic-samples = batch * WARMUP) for WARMUP + ITERS iterations:
# epoch 1 is the warm-up, and epochs 2.. are the ITERS timed iterations, like PyTorch's.
vdnn_cmd() {  # model batch iters warmup report
  local model=$1 batch=$2 iters=$3 warmup=$4 report=${5#"$ROOT"/} per_epoch=$4
  ((warmup > 0)) || per_epoch=$iters
  printf '%s' "OMP_NUM_THREADS=$THREADS build/vdnn train --model $model --batch $batch" \
    " --data synthetic --synthetic-samples $((batch * per_epoch))" \
    " --iterations $((warmup + iters)) --no-eval --threads $THREADS --lr $LR --lr-schedule constant" \
    " --report $(printf %q "$report")"
}
pytorch_cmd() {  # python flags model batch iters warmup
  local py=${1#"$ROOT"/} flags=$2 model=$3 batch=$4 iters=$5 warmup=$6
  printf '%s' "OMP_NUM_THREADS=$THREADS $(printf %q "$py") bench/pytorch_train.py --model $model --batch $batch" \
    " --iterations $iters --warmup $warmup --threads $THREADS --lr $LR${flags:+ $flags}"
}

load1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
  log "warning: load average $load1 before measuring: other work is running, results will be noisy"
fi
log "vdnn $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); pip torch ${PIP_TORCH:-none};" \
  "Debian torch ${DEBIAN_TORCH:-not used}; $ROUNDS round(s); OMP_NUM_THREADS=$THREADS;" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>}"
for c in "${CASES[@]}"; do
  IFS='|' read -r model batch iters warmup <<<"$c"
  if ((warmup > 0 && iters % warmup != 0)); then
    die "$model: timed iterations ($iters) must be a multiple of the warm-up ($warmup): vdnn" \
      "measures whole epochs of 'warm-up' batches"
  fi
  for ((round = 1; round <= ROUNDS; round++)); do
    for i in "${!VARIANTS[@]}"; do
      IFS='|' read -r label py flags <<<"${VARIANTS[$i]}"
      file="$RAW/${model}_r${round}_v${i}"
      load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
      if [[ -z $py ]]; then
        kind=vdnn
        cmd=$(vdnn_cmd "$model" "$batch" "$iters" "$warmup" "$file.json")
      else
        kind=pytorch
        cmd=$(pytorch_cmd "$py" "$flags" "$model" "$batch" "$iters" "$warmup")
      fi
      set +e
      if [[ $kind == vdnn ]]; then
        (cd "$ROOT" && eval "$cmd") >"$file.log" 2>&1
        rc=$?
      else
        (cd "$ROOT" && eval "$cmd") >"$file.json" 2>"$file.log"
        rc=$?
      fi
      set -e
      log "$model round $round/$ROUNDS: $label: rc $rc"
      ((rc == 0)) || { log "  failed; see $file.log:"; tail -n 5 "$file.log" >&2 || true; }
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$model" "$batch" "$iters" "$warmup" \
        "$round" "$label" "$kind" "$rc" "$file.json" "$load" "$cmd" >>"$MANIFEST"
    done
  done
done

# ---------------------------------------------------------------------------------------------
# 4. report
lscpu_field() { lscpu 2>/dev/null | sed -n "s/^$1: *//p" | head -n1; }
BENCH_CPU_MODEL=$(lscpu_field 'Model name')
BENCH_CPUS=$(nproc)
BENCH_CORES_PER_SOCKET=$(lscpu_field 'Core(s) per socket')
BENCH_SOCKETS=$(lscpu_field 'Socket(s)')
BENCH_THREADS_PER_CORE=$(lscpu_field 'Thread(s) per core')
BENCH_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
BENCH_VDNN_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')
BENCH_VDNN_DIRTY=no
if git -C "$ROOT" status --porcelain -- . ':!bench' ':!docs' 2>/dev/null | grep -q .; then
  BENCH_VDNN_DIRTY=yes
fi
BENCH_PIP_TORCH="${PIP_TORCH:-none}"
BENCH_DEBIAN_TORCH="${DEBIAN_TORCH:-not used}"
BENCH_OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE-<unset>}"
BENCH_THREADS=$THREADS
BENCH_ROUNDS=$ROUNDS
BENCH_LOADAVG_END=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
export BENCH_CPU_MODEL BENCH_CPUS BENCH_CORES_PER_SOCKET BENCH_SOCKETS BENCH_THREADS_PER_CORE \
  BENCH_DATE BENCH_VDNN_COMMIT BENCH_VDNN_DIRTY BENCH_PIP_TORCH BENCH_DEBIAN_TORCH \
  BENCH_OPENBLAS_CORETYPE BENCH_THREADS BENCH_ROUNDS BENCH_LOADAVG_END
"$PIP_PY" "$BENCH/summarize.py" "$MANIFEST" "$RESULTS/train_throughput.md"
log "wrote $RESULTS/train_throughput.md"
cat "$RESULTS/train_throughput.md"
