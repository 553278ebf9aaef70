#!/usr/bin/env bash
# scripts/train.sh — the main job: installs what building and training need, builds the CLI, and
# trains fmnist_dag (a small Inception/ResNet-style DAG) on Fashion-MNIST under a 48 MiB
# device-memory budget by offloading its feature maps to host memory (vDNN_all). At batch 128 it does
# not fit 48 MiB with everything resident (`none` needs 55.9 MiB with the leanest algorithms, `conv`
# 58.2 MiB: `vdnn plan --model fmnist_dag --batch 128`); `all` needs 44.9 MiB.
# Extra arguments go to `vdnn train` and override these defaults (e.g. --epochs 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ensure_packages "${VDNN_PACKAGES[@]}"
build_vdnn vdnn  # the CLI alone: the tests are scripts/test.sh's
exec "$BUILD_DIR/vdnn" train --model fmnist_dag --policy all --device-memory 48MiB "$@"
