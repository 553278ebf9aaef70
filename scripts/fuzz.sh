#!/usr/bin/env bash
# scripts/fuzz.sh — builds the libFuzzer targets (fuzz/, clang, ASan+UBSan, in build-fuzz/) and runs
# each one, as many at once as there are cores (JOBS); exits non-zero if any finds something (crash,
# sanitizer report, uncaught exception other than vdnn::Error, hang, huge allocation).
# docs/reliability.md ("Fuzzing") has the long run.
#   bash scripts/fuzz.sh                          # 15 s per target (the CI smoke run)
#   FUZZ_SECONDS=3600 bash scripts/fuzz.sh        # a long run
#   FUZZ_RUNS=1000000 bash scripts/fuzz.sh        # a fixed number of executions per target
#   FUZZ_TARGETS="idx_file safetensors" bash scripts/fuzz.sh
# New inputs go to build-fuzz/corpus/<target> (fuzz/corpus/<target> holds the committed seeds);
# a crashing input is saved as build-fuzz/artifacts/<target>/crash-<sha1> — feed it to the target
# (build-fuzz/fuzz/fuzz_<target> FILE) to reproduce, then make it a test under tests/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ensure_packages "${VDNN_FUZZ_PACKAGES[@]}"

FUZZ_DIR="$VDNN_ROOT/build-fuzz"
FUZZ_TARGETS="${FUZZ_TARGETS:-model_file idx_file safetensors profiles onnx_import npy cifar image token_data}"
CC=clang CXX=clang++ cmake -S "$VDNN_ROOT" -B "$FUZZ_DIR" -DVDNN_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for t in $FUZZ_TARGETS; do targets+=(--target "fuzz_$t"); done
cmake --build "$FUZZ_DIR" -j "$JOBS" "${targets[@]}"

if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="${FUZZ_SECONDS:-15}"); fi
# One target's run: its summary line on success; the log's tail and the input's place on a finding.
fuzz_one() {
  local t=$1 dict=()
  [ -f "$VDNN_ROOT/fuzz/$t.dict" ] && dict=(-dict="$VDNN_ROOT/fuzz/$t.dict")
  mkdir -p "$FUZZ_DIR/corpus/$t" "$FUZZ_DIR/artifacts/$t"
  # -rss_limit_mb / -malloc_limit_mb: a reader that believes a hostile size field is a finding.
  # -timeout: one input taking 10 s is a hang. Only the summary lines are kept on success.
  local log="$FUZZ_DIR/artifacts/$t/last-run.log"
  if ! "$FUZZ_DIR/fuzz/fuzz_$t" "${limit[@]}" "${dict[@]}" -rss_limit_mb=2048 -malloc_limit_mb=512 \
      -timeout=10 -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/$t/" \
      "$FUZZ_DIR/corpus/$t" "$VDNN_ROOT/fuzz/corpus/$t" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz: $t found a problem; the input is in $FUZZ_DIR/artifacts/$t/" >&2
    return 1
  fi
  local runs rss
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
  echo "fuzz $t: $runs executions, no finding (peak RSS ${rss} MB; $(ls "$FUZZ_DIR/corpus/$t" | wc -l) inputs in build-fuzz/corpus/$t)"
}

# Each target is one process on one core: $JOBS of them run at once, each for its own full time.
failed=0
running=0
for t in $FUZZ_TARGETS; do
  fuzz_one "$t" &
  running=$((running + 1))
  if ((running >= JOBS)); then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while ((running > 0)); do
  wait -n || failed=1
  running=$((running - 1))
done
exit "$failed"
