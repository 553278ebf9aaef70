#!/usr/bin/env bash
# scripts/gpu-check.sh — the whole GPU check in one run, for a machine with an NVIDIA GPU:
#   1. builds vdnn with the CUDA backend required (-DVDNN_CUDA=ON) into $BUILD_DIR,
#   2. runs the GPU tests (every op against the CPU backend, bit-identical weights across
#      policies on the GPU, VGG-16 under a budget, one-rank NCCL all-reduce) -> gpu-tests.xml,
#      gpu-tests.log, then data parallel over NCCL under mpirun (section 2b) -> comm/*,
#   3. benchmarks VGG-16 at ImageNet size (3x224x224, synthetic data), batch 64 and 256:
#      policy none with unlimited memory against all and conv under a 12 GiB budget, sync event
#      and layer; one `vdnn train --report` per case -> runs/*.json, and
#   4. writes gpu-check.json (one record per case) and gpu-check.md (the table for
#      docs/benchmarks.md): planned peak device memory, steady images/s, ratio to none.
#
#   bash scripts/gpu-check.sh [OUT_DIR]        # OUT_DIR default: $OUT if set, else gpu-check-out
#
# GPU time is scarce, so the script never stops early on a failure (a failed test or case is
# recorded and the rest still runs), writes its summary after every case (a killed run leaves
# what it measured), and skips the cases left when TIME_BUDGET seconds have passed. Steady
# images/s is the last epoch's (each case runs 2 epochs of STEPS iterations; the first absorbs
# cuDNN's algorithm search, lazy module loading and warm-up). --conv-algo auto (the fastest
# algorithm cuDNN measures) is tried first under the budget; when its workspaces do not fit, the
# case runs again with direct (memory-optimal) and says so.
#
# Data parallel (2b): NCCL needs one GPU per rank (two ranks on one GPU is ncclInvalidUsage,
# "Duplicate GPU detected"), so with 2+ GPUs it trains 2 ranks (policies none and all, every step's
# weights compared across the ranks, the two policies' weights compared), and with one GPU it
# trains 1 rank under mpirun the same way and checks that 2 ranks on the one GPU stop with one
# clear NCCL error on each rank within COMM_TIMEOUT instead of hanging.
#
# Environment (defaults in brackets), also to try the script on a CPU machine:
#   BUILD_DIR [build-gpu]  SKIP_BUILD [0]  SKIP_TESTS [0]  SKIP_COMM [0]  COMM_TIMEOUT [120]
#   JOBS [nproc]  BACKEND [cuda]
#   MODEL [vgg16]  INPUT [3x224x224]  BATCHES ["256 64"]  BUDGET [12GiB]  STEPS [4]  LR [0.001]
#   SYNCS ["event layer"]  CASE_TIMEOUT [240]  TIME_BUDGET [480]
#   e.g. SKIP_BUILD=1 BUILD_DIR=build BACKEND=cpu MODEL=vgg_cifar INPUT=3x32x32 BATCHES="16 8" \
#        BUDGET=64MiB STEPS=2 bash scripts/gpu-check.sh /tmp/gpu-check-cpu
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${1:-${OUT:-$ROOT/gpu-check-out}}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
SKIP_BUILD="${SKIP_BUILD:-0}"
SKIP_TESTS="${SKIP_TESTS:-0}"
SKIP_COMM="${SKIP_COMM:-0}"
COMM_TIMEOUT="${COMM_TIMEOUT:-120}"
JOBS="${JOBS:-$(nproc)}"
BACKEND="${BACKEND:-cuda}"
MODEL="${MODEL:-vgg16}"
INPUT="${INPUT:-3x224x224}"
BATCHES="${BATCHES:-256 64}"
BUDGET="${BUDGET:-12GiB}"
STEPS="${STEPS:-4}"
LR="${LR:-0.001}"
SYNCS="${SYNCS:-event layer}"
CASE_TIMEOUT="${CASE_TIMEOUT:-240}"
TIME_BUDGET="${TIME_BUDGET:-480}"

START=$SECONDS
mkdir -p "$OUT_DIR/runs"
RECORDS="$OUT_DIR/records.jsonl"  # one JSON object per case, appended as cases finish
: >"$RECORDS"
log() { echo "gpu-check [$((SECONDS - START))s]: $*" | tee -a "$OUT_DIR/gpu-check.log"; }

# --- environment -------------------------------------------------------------------------------
GPU_NAME="none"
if command -v nvidia-smi >/dev/null 2>&1; then
  GPU_NAME="$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
  nvidia-smi >"$OUT_DIR/nvidia-smi.txt" 2>&1 || true
fi
NVCC_VERSION="$( (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null) | grep -o 'release [^,]*')"
log "GPU: ${GPU_NAME:-unknown}; nvcc: ${NVCC_VERSION:-not found}; out: $OUT_DIR"

# --- 1. build ----------------------------------------------------------------------------------
BUILD_STATUS="skipped"
if [ "$SKIP_BUILD" != 1 ]; then
  log "building into $BUILD_DIR (-DVDNN_CUDA=ON, -j$JOBS)"
  build_start=$SECONDS
  if cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DVDNN_CUDA=ON >"$OUT_DIR/build.log" 2>&1 &&
     cmake --build "$BUILD_DIR" -j "$JOBS" >>"$OUT_DIR/build.log" 2>&1; then
    BUILD_STATUS="ok in $((SECONDS - build_start)) s"
  else
    BUILD_STATUS="failed (see build.log)"
    log "build failed:"; tail -n 30 "$OUT_DIR/build.log"
  fi
fi
VDNN="$BUILD_DIR/vdnn"
if [ ! -x "$VDNN" ]; then
  log "no $VDNN: nothing to run"
  exit 1
fi

# --- 2. GPU tests ------------------------------------------------------------------------------
TESTS_STATUS="skipped"
if [ "$SKIP_TESTS" != 1 ] && [ -x "$BUILD_DIR/vdnn_tests" ]; then
  log "GPU tests"
  (cd "$BUILD_DIR" && OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}" timeout 600 ./vdnn_tests \
      --gtest_filter='Cuda*:Backend*:Cli.BackendCuda*' --gtest_output="xml:$OUT_DIR/gpu-tests.xml") \
      >"$OUT_DIR/gpu-tests.log" 2>&1
  rc=$?
  summary="$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$OUT_DIR/gpu-tests.log" |
             sed 's/^\[ *//; s/ *\]//; s/,.*//' | tr '\n' ' ')"
  TESTS_STATUS="exit $rc: ${summary:-no summary}"
  log "GPU tests: $TESTS_STATUS"
  grep -E '^\[  FAILED  \]|SKIPPED \]|Failure|error' "$OUT_DIR/gpu-tests.log" | head -n 40
fi

# --- 2b. data parallel (NCCL on cuda, MPI on cpu) -----------------------------------------------
# One `mpirun -np RANKS vdnn train` per case on synthetic data, every step's weights compared across
# the ranks (--verify-replicas). mpirun refuses root unless told (containers run as root).
COMM_STATUS="skipped"
comm_case() {  # comm_case NAME RANKS POLICY -> prints the weights hash, or "failed ..."
  local name=$1 ranks=$2 policy=$3 out="$OUT_DIR/comm/$1.log" rc
  local args=(train --backend "$BACKEND" --data synthetic --synthetic-samples 512 --batch 32 --iterations 12
              --no-eval --policy "$policy" --verify-replicas --collective-timeout 60 --report "$OUT_DIR/comm/$name.json")
  timeout "$COMM_TIMEOUT" mpirun -np "$ranks" --oversubscribe "$VDNN" "${args[@]}" >"$out" 2>&1
  rc=$?
  if [ $rc -eq 0 ] && grep -q "^replicas: the $ranks ranks held identical weights" "$out" ||
     { [ $rc -eq 0 ] && [ "$ranks" = 1 ]; }; then
    grep -o '^weights_sha256 [0-9a-f]*' "$out" | cut -d' ' -f2
  else
    echo "failed (exit $rc): $(grep -m1 -i error "$out" | tr '"\\' "'/" | cut -c1-200)"
  fi
}
if [ "$SKIP_COMM" != 1 ]; then
  if ! command -v mpirun >/dev/null 2>&1; then
    COMM_STATUS="skipped: no mpirun (scripts/setup.sh installs openmpi-bin)"
  else
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"
    mkdir -p "$OUT_DIR/comm"
    GPU_COUNT="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')"
    RANKS=2
    [ "$BACKEND" = cuda ] && [ "${GPU_COUNT:-0}" -lt 2 ] && RANKS=1
    log "data parallel: $RANKS rank(s), backend $BACKEND, ${GPU_COUNT:-0} GPU(s)"
    none_hash="$(comm_case "dp${RANKS}_none" "$RANKS" none)"
    all_hash="$(comm_case "dp${RANKS}_all" "$RANKS" all)"
    COMM_STATUS="$RANKS ranks: none $none_hash; all $all_hash"
    if [ "$none_hash" = "$all_hash" ] && [ "${#none_hash}" = 64 ]; then
      COMM_STATUS="$COMM_STATUS (same weights)"
    else
      COMM_STATUS="$COMM_STATUS (WEIGHTS DIFFER OR A RUN FAILED)"
    fi
    if [ "$BACKEND" = cuda ] && [ "$RANKS" = 1 ]; then
      # Two ranks on one GPU: NCCL refuses; each rank must say so and stop, not hang.
      start=$SECONDS
      timeout "$COMM_TIMEOUT" mpirun -np 2 --oversubscribe "$VDNN" train --backend cuda --data synthetic \
        --synthetic-samples 256 --batch 32 --iterations 2 --no-eval --collective-timeout 60 \
        >"$OUT_DIR/comm/dp2_one_gpu.log" 2>&1
      rc=$?
      if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "NCCL" "$OUT_DIR/comm/dp2_one_gpu.log"; then
        COMM_STATUS="$COMM_STATUS; 2 ranks on 1 GPU: stopped with an NCCL error in $((SECONDS - start)) s as expected"
      else
        COMM_STATUS="$COMM_STATUS; 2 ranks on 1 GPU: UNEXPECTED (exit $rc in $((SECONDS - start)) s, see comm/dp2_one_gpu.log)"
      fi
    fi
  fi
  log "data parallel: $COMM_STATUS"
fi

# --- 3. benchmark ------------------------------------------------------------------------------
# Top-level number of a `vdnn train --report` file (nlohmann dump(2): top-level keys are indented
# by exactly two spaces); the last epoch's images/s is the last six-space-indented one.
top_number() {
  awk -v k="\"$2\":" '$1 == k && substr($0, 1, 3) == "  \"" && !found { v = $2; sub(/,$/, "", v); found = 1 }
                       END { print (found ? v : "null") }' "$1"
}
steady_images_per_second() {
  awk '/^      "images_per_second":/ { v = $2; sub(/,$/, "", v) } END { print (v == "" ? "null" : v) }' "$1"
}

# run_case BATCH POLICY SYNC BUDGET(or "") -> appends one record
run_case() {
  local batch=$1 policy=$2 sync=$3 budget=$4
  local name="${MODEL}_b${batch}_${policy}_${sync}"
  local report="$OUT_DIR/runs/$name.json" out="$OUT_DIR/runs/$name.log"
  local status algo="auto" rc args
  if (( SECONDS - START > TIME_BUDGET )); then
    log "$name: skipped (time budget of $TIME_BUDGET s spent)"
    printf '{"case":"%s","model":"%s","batch":%s,"policy":"%s","sync":"%s","budget":"%s","status":"skipped: time budget"}\n' \
      "$name" "$MODEL" "$batch" "$policy" "$sync" "${budget:-unlimited}" >>"$RECORDS"
    return
  fi
  for algo in auto direct; do
    args=(train --backend "$BACKEND" --model "$MODEL" --input "$INPUT" --data synthetic
          --synthetic-samples $((batch * STEPS)) --batch "$batch" --iterations $((2 * STEPS))
          --no-eval --lr "$LR" --policy "$policy" --sync "$sync" --conv-algo "$algo" --report "$report")
    [ -n "$budget" ] && args+=(--device-memory "$budget")
    rm -f "$report"
    log "$name: vdnn ${args[*]}"
    timeout "$CASE_TIMEOUT" "$VDNN" "${args[@]}" >"$out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && [ -f "$report" ]; then status="ok"; break; fi
    status="failed (exit $rc): $(tail -n 1 "$out" | tr '"\\' "'/" | cut -c1-300)"
    [ $rc -eq 124 ] && status="timed out after $CASE_TIMEOUT s"
    # Only a budget refusal is worth a second try with the memory-optimal algorithms.
    if [ -z "$budget" ] || ! grep -q "too small" "$out"; then break; fi
    log "$name: auto's workspaces do not fit $budget, trying direct"
  done
  log "$name: $status"
  if [ "$status" = ok ]; then
    printf '{"case":"%s","model":"%s","batch":%s,"policy":"%s","sync":"%s","budget":"%s","conv_algo":"%s","status":"ok","images_per_second":%s,"steady_images_per_second":%s,"peak_device_bytes":%s,"device_memory_bytes":%s,"offloaded_bytes_per_iteration":%s,"iteration_ms":%s,"weights_sha256":%s}\n' \
      "$name" "$MODEL" "$batch" "$policy" "$sync" "${budget:-unlimited}" "$algo" \
      "$(top_number "$report" images_per_second)" "$(steady_images_per_second "$report")" \
      "$(top_number "$report" peak_device_bytes)" "$(top_number "$report" device_memory_bytes)" \
      "$(top_number "$report" offloaded_bytes_per_iteration)" "$(top_number "$report" iteration_ms)" \
      "$(top_number "$report" weights_sha256)" >>"$RECORDS"
  else
    printf '{"case":"%s","model":"%s","batch":%s,"policy":"%s","sync":"%s","budget":"%s","conv_algo":"%s","status":"%s"}\n' \
      "$name" "$MODEL" "$batch" "$policy" "$sync" "${budget:-unlimited}" "$algo" "$status" >>"$RECORDS"
  fi
  write_summary
}

# --- 4. summary --------------------------------------------------------------------------------
write_summary() {
  {
    printf '{\n  "gpu": "%s",\n  "nvcc": "%s",\n  "backend": "%s",\n  "build": "%s",\n  "tests": "%s",\n  "data_parallel": "%s",\n' \
      "$GPU_NAME" "$NVCC_VERSION" "$BACKEND" "$BUILD_STATUS" "$TESTS_STATUS" "$COMM_STATUS"
    printf '  "model": "%s",\n  "input": "%s",\n  "steps_per_epoch": %s,\n  "runs": [\n' "$MODEL" "$INPUT" "$STEPS"
    awk 'NR > 1 { print prev "," } { prev = "    " $0 } END { if (NR) print prev }' "$RECORDS"
    printf '  ]\n}\n'
  } >"$OUT_DIR/gpu-check.json"
  # The table: ratio = steady images/s over none's (same batch, event sync).
  awk -v model="$MODEL" -v input="$INPUT" -v gpu="$GPU_NAME" '
    function field(line, key,   m) {
      if (match(line, "\"" key "\":(\"[^\"]*\"|[^,}]*)")) {
        m = substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 3); gsub(/"/, "", m); return m
      }
      return ""
    }
    function mib(b) { return b == "" || b == "null" ? "-" : sprintf("%.0f", b / 1048576) }
    { lines[NR] = $0
      if (field($0, "policy") == "none" && field($0, "sync") == "event" && field($0, "status") == "ok")
        base[field($0, "batch")] = field($0, "steady_images_per_second") }
    END {
      printf "### %s %s on %s\n\n", model, input, gpu
      print "| batch | policy | sync | budget | conv algo | planned peak MiB | arena MiB | offloaded MiB/iter | images/s (steady) | vs none | status |"
      print "| ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |"
      for (i = 1; i <= NR; ++i) {
        l = lines[i]; b = field(l, "batch"); ips = field(l, "steady_images_per_second")
        ratio = (ips != "" && ips != "null" && base[b] > 0) ? sprintf("%.3f", ips / base[b]) : "-"
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", b, field(l, "policy"), field(l, "sync"),
          field(l, "budget"), field(l, "conv_algo"), mib(field(l, "peak_device_bytes")),
          mib(field(l, "device_memory_bytes")), mib(field(l, "offloaded_bytes_per_iteration")),
          (ips == "" || ips == "null") ? "-" : sprintf("%.1f", ips), ratio, field(l, "status")
      }
    }' "$RECORDS" >"$OUT_DIR/gpu-check.md"
}

write_summary
for sync in $SYNCS; do
  for batch in $BATCHES; do
    run_case "$batch" none "$sync" ""
    run_case "$batch" all "$sync" "$BUDGET"
    run_case "$batch" conv "$sync" "$BUDGET"
  done
done
write_summary
log "done: $OUT_DIR/gpu-check.json, $OUT_DIR/gpu-check.md"
cat "$OUT_DIR/gpu-check.md"
