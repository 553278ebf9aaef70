#!/usr/bin/env bash
# bench/throughput.sh — one training-throughput case (issue 8, cases 1–3): vdnn against PyTorch
# (pip 2.x, and Debian's 1.13 where installed), ROUNDS rounds of A B C interleaved, each run a fresh
# process, on synthetic data; writes bench/results/case<N>.md (bench/summarize.py).
#
# Usage: bash bench/throughput.sh CASE MODEL BATCH ITERS WARMUP [CxHxW] [TITLE]
#   e.g. ROUNDS=3 bash bench/throughput.sh 3 resnet18 32 20 5 3x64x64
# Environment: ROUNDS [5], LR [0.01] (constant, both), CHANNELS_LAST [0] (1: also the pip PyTorch
# with --channels-last), BF16 [0] (1: also vdnn --precision bf16 and the pip PyTorch under
# torch.autocast bf16, channels-last: its fast bf16 layout), SKIP_DEBIAN_TORCH [0], THREADS [2].
#
# vdnn times each epoch separately (shuffle and evaluation excluded) and its report's
# images_per_second covers every iteration, the first, slow ones included. So it runs epochs of
# exactly WARMUP batches (--synthetic-samples = batch * WARMUP) for WARMUP + ITERS iterations:
# epoch 1 is the warm-up and epochs 2.. are the ITERS timed iterations, as PyTorch's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

(($# >= 5)) || die "usage: throughput.sh CASE MODEL BATCH ITERS WARMUP [CxHxW] [TITLE]"
CASE=$1 MODEL=$2 BATCH=$3 ITERS=$4 WARMUP=$5 INPUT=${6:-} TITLE=${7:-}
ROUNDS=${ROUNDS:-5}
LR=${LR:-0.01}  # 0.05 diverges on vgg_cifar (no batch norm) and NaNs are not a fair race
CHANNELS_LAST=${CHANNELS_LAST:-0}
BF16=${BF16:-0}
require_ints ROUNDS BATCH ITERS WARMUP
((ITERS % WARMUP == 0)) ||
  die "$MODEL: timed iterations ($ITERS) must be a multiple of the warm-up ($WARMUP): vdnn measures whole epochs of WARMUP batches"
require_vdnn
TITLE=${TITLE:-"Case $CASE: training images/s, $MODEL${INPUT:+ at $INPUT}, batch $BATCH"}

RAW="$RESULTS/raw/case$CASE"
fresh_dir "$RAW"
MANIFEST="$RAW/runs.tsv"
manifest_init "$MANIFEST"

# Variants: label|python (empty: vdnn)|extra flags (vdnn's or PyTorch's)
VARIANTS=("vdnn||")
[[ $BF16 != 1 ]] || VARIANTS+=("vdnn bf16||--precision bf16")
while IFS='|' read -r label py; do
  VARIANTS+=("$label|$py|")
  [[ $CHANNELS_LAST != 1 || $py != "$PIP_PY" ]] || VARIANTS+=("${label%)}, channels-last)|$py|--channels-last")
  [[ $BF16 != 1 || $py != "$PIP_PY" ]] ||
    VARIANTS+=("${label%)}, autocast bf16, channels-last)|$py|--autocast bf16 --channels-last")
done < <(pytorch_variants)
((${#VARIANTS[@]} > 1)) || log "warning: no PyTorch imports here (bash bench/setup.sh): vdnn only"

shape_flags=()
[[ -z $INPUT ]] || shape_flags=(--input "$INPUT")
warn_if_busy
for ((round = 1; round <= ROUNDS; round++)); do
  for i in "${!VARIANTS[@]}"; do
    IFS='|' read -r label py flags <<<"${VARIANTS[$i]}"
    file="$RAW/r${round}_v${i}"
    load=$(loadavg)
    if [[ -z $py ]]; then
      kind=vdnn
      # shellcheck disable=SC2086  # flags is a word list
      cmd=$(vdnn_train_cmd --model "$MODEL" "${shape_flags[@]}" --batch "$BATCH" --data synthetic \
        --synthetic-samples $((BATCH * WARMUP)) --iterations $((WARMUP + ITERS)) --no-eval \
        --lr "$LR" --lr-schedule constant --progress none --report "$(rel "$file.json")" $flags)
      run_measured "$cmd" "$file.json" "$file.log"
    else
      kind=pytorch
      # shellcheck disable=SC2086  # flags is a word list
      cmd=$(pytorch_cmd "$py" pytorch_train.py --model "$MODEL" "${shape_flags[@]}" --batch "$BATCH" \
        --iterations "$ITERS" --warmup "$WARMUP" --lr "$LR" $flags)
      run_measured "$cmd" "$file.json" "$file.log" stdout
    fi
    log "case $CASE ($MODEL) round $round/$ROUNDS: $label: exit $RUN_RC"
    manifest_add "$MANIFEST" case="$CASE" model="$MODEL" batch="$BATCH" iterations="$ITERS" \
      warmup="$WARMUP" round="$round" variant="$label" kind="$kind" rc="$RUN_RC" file="$file.json" \
      loadavg="$load" command="$cmd"
  done
done
python3 "$BENCH/summarize.py" "$MANIFEST" "$RESULTS/case$CASE.md" "$TITLE"
log "wrote $(rel "$RESULTS/case$CASE.md")"
