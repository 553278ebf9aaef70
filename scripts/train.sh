#!/usr/bin/env bash
# scripts/train.sh — the main job: installs what is missing, builds, and trains the default
# Fashion-MNIST network under a 48 MiB device-memory budget — less than the 60 MiB the network
# needs with everything resident — by offloading feature maps to host memory (vDNN_all).
# Extra arguments go to `vdnn train` and override these defaults (e.g. --epochs 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ensure_packages "${VDNN_PACKAGES[@]}"
build_vdnn vdnn  # the CLI alone: the tests are scripts/test.sh's
exec "$BUILD_DIR/vdnn" train --policy all --device-memory 48MiB "$@"
