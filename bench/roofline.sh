#!/usr/bin/env bash
# bench/roofline.sh — issue 8, case 7: FLOPs of a whole MODEL training step divided by its measured
# time, as a share of the best convolution throughput oneDNN reaches here (bench/conv_peak.sh; run
# first unless bench/results/conv_peak.json exists and REUSE_CONV_PEAK=1). Step time: ROUNDS
# fresh `vdnn train` runs, steady state after WARMUP iterations (as bench/throughput.sh measures).
# Writes bench/results/case7.md.
#
# Usage: bash bench/roofline.sh
# Environment: ROUNDS [3], MODEL [vgg_cifar], BATCH [64], ITERS [30], WARMUP [5], LR [0.01],
#   REUSE_CONV_PEAK [0], THREADS [2].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
MODEL=${MODEL:-vgg_cifar}
BATCH=${BATCH:-64}
ITERS=${ITERS:-30}
WARMUP=${WARMUP:-5}
LR=${LR:-0.01}
require_ints ROUNDS BATCH ITERS WARMUP
((ITERS % WARMUP == 0)) || die "ITERS ($ITERS) must be a multiple of WARMUP ($WARMUP)"
require_vdnn
if [[ ${REUSE_CONV_PEAK:-0} != 1 || ! -s $RESULTS/conv_peak.json ]]; then
  MODEL=$MODEL BATCH=$BATCH bash "$BENCH/conv_peak.sh"
fi

RAW="$RESULTS/raw/case7"
fresh_dir "$RAW"
MANIFEST="$RAW/runs.tsv"
manifest_init "$MANIFEST"
(cd "$ROOT" && OMP_NUM_THREADS=$THREADS build/vdnn models) >"$RAW/models.txt"
warn_if_busy
for ((round = 1; round <= ROUNDS; round++)); do
  file="$RAW/r$round"
  load=$(loadavg)
  cmd=$(vdnn_train_cmd --model "$MODEL" --batch "$BATCH" --data synthetic \
    --synthetic-samples $((BATCH * WARMUP)) --iterations $((WARMUP + ITERS)) --no-eval \
    --lr "$LR" --lr-schedule constant --progress none --report "$(rel "$file.json")")
  run_measured "$cmd" "$file.json" "$file.log"
  log "case 7 round $round/$ROUNDS: vdnn train $MODEL: exit $RUN_RC"
  manifest_add "$MANIFEST" case=7 model="$MODEL" batch="$BATCH" iterations="$ITERS" warmup="$WARMUP" \
    round="$round" variant=vdnn kind=vdnn rc="$RUN_RC" file="$file.json" loadavg="$load" command="$cmd"
done
python3 "$BENCH/summarize_roofline.py" "$MANIFEST" "$RESULTS/conv_peak.json" \
  "$RESULTS/conv_peak_pytorch.json" "$RAW/models.txt" "$RESULTS/case7.md"
log "wrote $(rel "$RESULTS/case7.md")"
