#!/usr/bin/env bash
# bench/run.sh — issue 8's benchmarks, vdnn against PyTorch on this CPU, in one command: installs
# what they need (bench/setup.sh), runs the cases, and writes bench/results/case<N>.md per case and
# bench/results/benchmarks.md (this machine, the date, versions, then every case run now) for
# docs/benchmarks.md. Timed comparisons interleave their variants (A B A B…) in fresh processes
# and quote medians, min – max and per-round ratios. Not part of CI.
#
#   1  training images/s, fmnist_cnn, batch 128             (bench/throughput.sh)
#   2  training images/s, vgg_cifar, batch 64               (bench/throughput.sh)
#   3  training images/s, ResNet-18 at 3x64x64, batch 32    (bench/throughput.sh)
#   4  time to 91% test accuracy on Fashion-MNIST           (bench/time_to_accuracy.sh)
#   5  memory held for backward per step                    (bench/memory.sh)
#   6  offload overhead on GPU-scaled links                 (bench/offload.sh)
#   7  roofline: a vgg_cifar step against the best conv     (bench/roofline.sh)
#   8  training images/s, ResNet-50 at 3x64x64, batch 16    (bench/throughput.sh)
#   (6 and 7 share bench/conv_peak.sh, run once before them)
#
# Usage: bash bench/run.sh [--setup-only]       e.g. CASES="3 5" bash bench/run.sh
#
# Environment knobs (defaults in brackets):
#   CASES ["1 2 3 4 5 6 7 8"]   which cases, in this order
#   ROUNDS [5]                  interleaved rounds, cases 1–3 and 8
#   FMNIST_ITERS/_WARMUP [60/10], VGG_ITERS/_WARMUP [30/5], RESNET_ITERS/_WARMUP [20/5]
#   TTA_ROUNDS [3], TTA_EPOCHS [10] (cap), TARGET [0.91], TTA_DEBIAN [0]   case 4
#   OFFLOAD_ROUNDS [3], OFFLOAD_ITERS/_WARMUP [12/4], DEVICES ["titan-x-maxwell h200"]  case 6
#   ROOFLINE_ROUNDS [3], CONV_PEAK_ROUNDS [3]                                        cases 6–7
#   THREADS [2]                 OMP_NUM_THREADS / torch.set_num_threads / vdnn --threads
#   LR [0.01]                   learning rate of the throughput and offload runs (constant)
#   SKIP_BUILD [0]              1: don't call cmake (build/vdnn must exist)
#   SKIP_DEBIAN_TORCH [0]       1: don't use (or apt-get install) Debian's python3-torch
#   CHANNELS_LAST [0]           1: also run the pip PyTorch with --channels-last (cases 1–3)
#   BF16 [0]                    1: also vdnn --precision bf16 and the pip PyTorch under autocast bf16
#                               (channels-last) (cases 1–3)
#   RESULTS [bench/results]     output folder
#
# OPENBLAS_CORETYPE is left exactly as it is in the environment (recorded in the output).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CASES=${CASES:-"1 2 3 4 5 6 7 8"}
case "${1:-}" in
  --setup-only | "") ;;
  -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (expected --setup-only or nothing)" ;;
esac
for c in $CASES; do [[ $c =~ ^[1-8]$ ]] || die "CASES: '$c' is not a case number (1-8)"; done

bash "$BENCH/setup.sh"
[[ ${1:-} != --setup-only ]] || exit 0

mkdir -p "$RESULTS"
log "vdnn $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'); cases: $CASES;" \
  "OMP_NUM_THREADS=$THREADS; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>}"
conv_peak_done=0
need_conv_peak() {
  ((conv_peak_done)) && return
  ROUNDS=${CONV_PEAK_ROUNDS:-3} bash "$BENCH/conv_peak.sh"
  conv_peak_done=1
}
run_case() {
  case $1 in
    1) bash "$BENCH/throughput.sh" 1 fmnist_cnn 128 "${FMNIST_ITERS:-60}" "${FMNIST_WARMUP:-10}" ;;
    2) bash "$BENCH/throughput.sh" 2 vgg_cifar 64 "${VGG_ITERS:-30}" "${VGG_WARMUP:-5}" ;;
    3) bash "$BENCH/throughput.sh" 3 resnet18 32 "${RESNET_ITERS:-20}" "${RESNET_WARMUP:-5}" 3x64x64 ;;
    8) bash "$BENCH/throughput.sh" 8 resnet50 16 "${RESNET_ITERS:-20}" "${RESNET_WARMUP:-5}" 3x64x64 ;;
    4) ROUNDS=${TTA_ROUNDS:-3} EPOCHS=${TTA_EPOCHS:-10} bash "$BENCH/time_to_accuracy.sh" ;;
    5) bash "$BENCH/memory.sh" ;;
    6) need_conv_peak
       ROUNDS=${OFFLOAD_ROUNDS:-3} ITERS=${OFFLOAD_ITERS:-12} WARMUP=${OFFLOAD_WARMUP:-4} \
         REUSE_CONV_PEAK=1 bash "$BENCH/offload.sh" ;;
    7) need_conv_peak
       ROUNDS=${ROOFLINE_ROUNDS:-3} REUSE_CONV_PEAK=1 bash "$BENCH/roofline.sh" ;;
  esac
}
failed=()
for c in $CASES; do
  start=$SECONDS
  log "=== case $c"
  if run_case "$c"; then
    log "=== case $c done in $((SECONDS - start)) s"
  else
    failed+=("$c")
    log "=== case $c FAILED after $((SECONDS - start)) s"
  fi
done

export_machine_facts
case_files=()
for c in $CASES; do [[ " ${failed[*]} " == *" $c "* ]] || case_files+=("$RESULTS/case$c.md"); done
python3 "$BENCH/compose_results.py" "$RESULTS/benchmarks.md" "${case_files[@]}"
log "wrote $(rel "$RESULTS/benchmarks.md")"
((${#failed[@]} == 0)) || die "failed cases: ${failed[*]}"
