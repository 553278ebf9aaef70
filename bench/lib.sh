# shellcheck shell=bash
# bench/lib.sh — shell helpers shared by the benchmark scripts (sourced, never run).
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   require_ints ROUNDS ITERS
#   cmd=$(vdnn_train_cmd --model vgg_cifar --batch 64 --iterations 35)
#   run_measured "$cmd" "$RAW/x.json" "$RAW/x.log" stdout   # -> rc in $RUN_RC
#   manifest_init "$RAW/runs.tsv"; manifest_add "$RAW/runs.tsv" case=2 model=vgg_cifar ...
#
# Paths: ROOT (repository), BENCH (bench/), VDNN (build/vdnn), RESULTS (bench/results, or $RESULTS),
# PIP_PY (bench/.venv/bin/python), DEBIAN_PY (/usr/bin/python3). THREADS [2] sets OMP_NUM_THREADS
# for every run. OPENBLAS_CORETYPE is never touched: it is recorded as found.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
VDNN="$ROOT/build/vdnn"
VENV="$BENCH/.venv"
PIP_PY="$VENV/bin/python"
DEBIAN_PY=/usr/bin/python3
RESULTS=$(realpath -m "${RESULTS:-$BENCH/results}")
THREADS=${THREADS:-2}
export RESULTS THREADS OMP_NUM_THREADS=$THREADS

log() { printf '[bench] %s\n' "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

require_ints() {  # NAME... : each variable must be an integer >= 1
  local v
  for v in "$@"; do
    if ! [[ ${!v} =~ ^[0-9]+$ ]] || ((${!v} < 1)); then die "$v must be an integer >= 1, got '${!v}'"; fi
  done
}

require_vdnn() { [[ -x $VDNN ]] || die "$VDNN is missing: build it (bash scripts/setup.sh, or bench/run.sh)"; }

torch_version_of() {  # python -> torch version on stdout, or nothing
  "$1" -c 'import torch; print(torch.__version__)' 2>/dev/null || true
}

# PyTorch interpreters to compare with, one "label|python" per line: pip 2.x always (when it
# imports), Debian's 1.13 unless SKIP_DEBIAN_TORCH=1 or not installed.
pytorch_variants() {
  local v
  v=$(torch_version_of "$PIP_PY")
  [[ -z $v ]] || printf '%s\n' "pytorch $v (pip)|$PIP_PY"
  if [[ ${SKIP_DEBIAN_TORCH:-0} != 1 && -x $DEBIAN_PY ]]; then
    v=$(torch_version_of "$DEBIAN_PY")
    [[ -z $v ]] || printf '%s\n' "pytorch $v (Debian)|$DEBIAN_PY"
  fi
}

rel() { printf '%s' "${1#"$ROOT"/}"; }  # a path as the commands show it (from the repository root)

# The command lines, as printed in the results (run from ROOT). Extra arguments pass through.
vdnn_train_cmd() {
  local a q=""
  for a in "$@"; do q+=" $(printf %q "$a")"; done
  printf '%s' "OMP_NUM_THREADS=$THREADS build/vdnn train --threads $THREADS$q"
}
pytorch_cmd() {  # python script.py args...
  local py=$1 script=$2 a q=""
  shift 2
  for a in "$@"; do q+=" $(printf %q "$a")"; done
  printf '%s' "OMP_NUM_THREADS=$THREADS $(printf %q "$(rel "$py")") bench/$script --threads $THREADS$q"
}

# run_measured CMD OUT LOG [stdout|log]: runs CMD from ROOT in a fresh process; with `stdout` its
# standard output goes to OUT (PyTorch's JSON line), else everything goes to LOG (vdnn writes its
# own --report). Sets RUN_RC.
run_measured() {
  local cmd=$1 out=$2 logf=$3 mode=${4:-log}
  set +e
  if [[ $mode == stdout ]]; then
    (cd "$ROOT" && eval "$cmd") >"$out" 2>"$logf"
  else
    (cd "$ROOT" && eval "$cmd") >"$logf" 2>&1
  fi
  RUN_RC=$?
  set -e
  if ((RUN_RC != 0)); then
    log "  failed (exit $RUN_RC); last lines of $(rel "$logf"):"
    tail -n 5 "$logf" >&2 || true
  fi
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }

warn_if_busy() {
  local load1
  load1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
  if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
    log "warning: load average $load1 before measuring: other work is running, results will be noisy"
  fi
}

# A manifest is a TSV with one row per run; the summarizers read it by column name.
MANIFEST_COLUMNS=(case model batch iterations warmup round variant kind rc file loadavg command)
manifest_init() { (IFS=$'\t'; printf '%s\n' "${MANIFEST_COLUMNS[*]}") >"$1"; }
manifest_add() {  # FILE name=value... (columns not given stay empty)
  local file=$1 col kv row=() value
  shift
  for col in "${MANIFEST_COLUMNS[@]}"; do
    value=""
    for kv in "$@"; do [[ ${kv%%=*} == "$col" ]] && value=${kv#*=}; done
    row+=("${value//$'\t'/ }")
  done
  (IFS=$'\t'; printf '%s\n' "${row[*]}") >>"$file"
}

fresh_dir() { rm -rf "$1" && mkdir -p "$1"; }  # DIR: empty, for one case's raw files

# Facts about this machine and run, for the results' header (benchlib.py reads BENCH_*).
export_machine_facts() {
  lscpu_field() { lscpu 2>/dev/null | sed -n "s/^$1: *//p" | head -n1; }
  export BENCH_CPU_MODEL BENCH_CPUS BENCH_CORES_PER_SOCKET BENCH_SOCKETS BENCH_THREADS_PER_CORE \
    BENCH_DATE BENCH_VDNN_COMMIT BENCH_VDNN_DIRTY=no BENCH_PIP_TORCH BENCH_DEBIAN_TORCH="" \
    BENCH_OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE-<unset>}" BENCH_THREADS=$THREADS BENCH_LOADAVG_END
  BENCH_CPU_MODEL=$(lscpu_field 'Model name')
  BENCH_CPUS=$(nproc)
  BENCH_CORES_PER_SOCKET=$(lscpu_field 'Core(s) per socket')
  BENCH_SOCKETS=$(lscpu_field 'Socket(s)')
  BENCH_THREADS_PER_CORE=$(lscpu_field 'Thread(s) per core')
  BENCH_DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
  BENCH_VDNN_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')
  if git -C "$ROOT" status --porcelain -- . ':!bench' ':!docs' 2>/dev/null | grep -q .; then
    BENCH_VDNN_DIRTY=yes
  fi
  BENCH_PIP_TORCH=$(torch_version_of "$PIP_PY")
  BENCH_PIP_TORCH=${BENCH_PIP_TORCH:-none}
  [[ ${SKIP_DEBIAN_TORCH:-0} == 1 || ! -x $DEBIAN_PY ]] || BENCH_DEBIAN_TORCH=$(torch_version_of "$DEBIAN_PY")
  BENCH_DEBIAN_TORCH=${BENCH_DEBIAN_TORCH:-not used}
  BENCH_LOADAVG_END=$(loadavg)
}
