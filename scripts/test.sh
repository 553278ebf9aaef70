#!/usr/bin/env bash
# scripts/test.sh — the whole test suite: installs what is missing, builds, then runs
#   1. the runtime, stream, allocator and loader tests under ThreadSanitizer (build-tsan/), and
#   2. every test (ctest) in the Release build.
# VDNN_SKIP_TSAN=1 skips step 1 (a quicker local run). Extra arguments go to ctest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ensure_packages "${VDNN_PACKAGES[@]}"
build_vdnn

if [ "${VDNN_SKIP_TSAN:-0}" != 1 ]; then
  # libgomp is not instrumented, so ThreadSanitizer cannot see OpenMP's barriers and reports
  # false races inside every parallel loop. OMP_NUM_THREADS=1 keeps oneDNN's and vdnn's OpenMP
  # loops single-threaded inside each stream worker, while vdnn's own threads (three stream
  # workers, the batch loader) still run concurrently — those are what this run checks.
  TSAN_DIR="$VDNN_ROOT/build-tsan"
  # The CUDA backend is left out here: its tests skip without a GPU and nvcc would only add time.
  cmake -S "$VDNN_ROOT" -B "$TSAN_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVDNN_SANITIZE=thread \
    -DVDNN_CUDA=OFF >/dev/null
  cmake --build "$TSAN_DIR" -j "$JOBS" --target vdnn_tests
  echo "== ThreadSanitizer: runtime, streams, allocators, loader"
  OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$TSAN_DIR/vdnn_tests" \
    --gtest_brief=1 \
    --gtest_filter='CpuDevice*:DevicePool*:OffsetAllocator*:HostPool*:Residency*:Batch*:Offload.Bit*:Offload.Too*'
fi

cd "$BUILD_DIR"
OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j "$JOBS" "$@"
