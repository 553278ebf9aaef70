#!/usr/bin/env bash
# bench/auto_sweep.sh — issue 17's claim about `auto`, checked on every zoo network: at every budget
# of `vdnn plan --sweep` (from the largest smallest budget, which is at least none's, down to the
# floor), on titan-x-maxwell/pcie3 and a100-40gb/pcie4, `auto` (a) fits wherever `all` fits and
# (b) is predicted no slower than the fastest vDNN column that fits (none, conv, all, dyn, and
# with --prefetch ahead their /ahead columns), to a relative 1e-9. Prints one markdown row per
# network x device (bench/summarize_auto_sweep.py) and every violation; exits 1 on any.
# Planning only (the simulator on the device profiles): no GPU, no training.
#
#   nice -n 10 bash bench/auto_sweep.sh                  # the zoo at the paper's / the docs' batches
#   CASES="vgg16:256 resnet18:256" STEPS=20 bash bench/auto_sweep.sh
#
# CASES: model:batch pairs (default: docs/benchmarks.md "Placement without waste", i.e. the
# paper's batches for AlexNet, OverFeat, GoogLeNet, VGG-16, and the docs' for the others).
# DEVICES: device/link pairs. STEPS: --sweep-steps (10: the full zoo in about 4 min on 2 cores;
# auto is planned at every budget, so the time grows with it). KEEP: a folder for the JSON plans.
# VDNN_BIN: another binary (a copy of build/vdnn, so that a rebuild mid-run cannot mix two builds;
# run it with VDNN_DATA_DIR=<this repository>).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
VDNN=${VDNN_BIN:-$VDNN}
CASES=${CASES:-"alexnet:128 alexnet:256 overfeat:128 overfeat:256 googlenet:128 googlenet:256 vgg16:64
  vgg16:128 vgg16:256 vgg19:128 resnet18:256 resnet34:256 resnet50:128 resnet101:64 resnet152:64 vgg116:32
  vgg216:16 vgg316:16 vgg416:8 fmnist_cnn:128 fmnist_dag:128 vgg16_cifar:128 vgg_cifar:128"}
DEVICES=${DEVICES:-"titan-x-maxwell/pcie3 a100-40gb/pcie4"}
STEPS=${STEPS:-10}
require_ints STEPS
[[ -x $VDNN ]] || die "$VDNN not built (cmake --build build --target vdnn)"
if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP"; dir=$KEEP; else
  dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT; fi

for case in $CASES; do [[ $case =~ ^[A-Za-z0-9_.-]+:[0-9]+$ ]] || die "CASES: '$case' is not model:batch"; done
for pair in $DEVICES; do [[ $pair =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || die "DEVICES: '$pair' is not device/link"; done
plans=()
for case in $CASES; do
  model=${case%%:*} batch=${case##*:}
  for pair in $DEVICES; do
    device=${pair%%/*} link=${pair##*/}
    out="$dir/${model}_b${batch}_${device}_${link}.json"
    start=$SECONDS
    "$VDNN" plan --model "$model" --batch "$batch" --device "$device" --link "$link" --prefetch ahead \
      --sweep --sweep-steps "$STEPS" --json >"$out" || die "vdnn plan failed: $model b$batch $device/$link"
    log "$model b$batch $device/$link: $((SECONDS - start)) s"
    plans+=("$model" "$batch" "$device/$link" "$out")
  done
done
"$DEBIAN_PY" "$BENCH/summarize_auto_sweep.py" "${plans[@]}"
