#!/usr/bin/env bash
# scripts/test.sh — the whole test suite: installs what is missing, builds, runs every test (ctest).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ensure_packages "${VDNN_PACKAGES[@]}"
build_vdnn
cd "$BUILD_DIR"
OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j "$JOBS" "$@"
