#!/usr/bin/env bash
# scripts/train.sh — the main job: installs what is missing, builds, trains the default
# Fashion-MNIST network. Extra arguments go to `vdnn train` (e.g. --epochs 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ensure_packages "${VDNN_PACKAGES[@]}"
build_vdnn
exec "$BUILD_DIR/vdnn" train "$@"
