#!/usr/bin/env bash
# bench/sub_batches.sh — the cost and the memory of running every convolution in K slices of the
# batch (issue 21, `vdnn train --conv-sub-batches K`): vgg_cifar at batch 64, K = 1, 2, 4
# interleaved in fresh processes, ROUNDS rounds; prints round, K, images/s and the report's device
# peak. Not part of CI. Usage: ROUNDS=3 bash bench/sub_batches.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VDNN="${VDNN:-build/vdnn}"
ROUNDS="${ROUNDS:-3}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
echo "round K images_per_second peak_device_bytes"
for round in $(seq "$ROUNDS"); do
  for k in 1 2 4; do
    # lr 0.001: vgg_cifar (no batch norm) diverges at the default rate within a dozen steps.
    "$VDNN" train --model vgg_cifar --batch 64 --data synthetic --synthetic-samples 1280 --iterations 12 \
      --lr 0.001 --no-eval --progress none --conv-sub-batches "$k" --report "$report" >/dev/null
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($round, $k, round(j['images_per_second']), j['peak_device_bytes'])" "$report"
  done
done
