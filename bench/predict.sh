#!/usr/bin/env bash
# bench/predict.sh — how well the simulator predicts a training step on this machine (issue 4).
# For each network: `vdnn profile` measures every kernel, then `--check` trains STEPS steps per
# policy (none, conv, all interleaved, medians) and prints predicted vs measured time and memory.
# ROUNDS repeats the whole thing. Not part of CI. Usage: ROUNDS=3 bash bench/predict.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
VDNN="${VDNN:-build/vdnn}"
ROUNDS="${ROUNDS:-3}"
STEPS="${STEPS:-10}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
for round in $(seq "$ROUNDS"); do
  for case in "fmnist_cnn 128" "fmnist_dag 64" "vgg_cifar 64"; do
    set -- $case
    echo "== round $round: $1 batch $2"
    "$VDNN" profile --model "$1" --batch "$2" --check none,conv,all --steps "$STEPS" | sed -n '/^policy/,$p'
  done
done
