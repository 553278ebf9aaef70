#!/usr/bin/env bash
# bench/time_to_accuracy.sh — issue 8, case 4: wall time until an epoch's test accuracy on
# Fashion-MNIST reaches TARGET, vdnn against PyTorch with the same recipe (vdnn train's defaults:
# fmnist_cnn, batch 128, SGD 0.05 cosine over EPOCHS epochs, momentum 0.9, weight decay 5e-4, seed 1;
# bench/pytorch_fmnist.py mirrors it). ROUNDS rounds, variants interleaved, fresh processes; each
# run is stopped as soon as it reaches the target (bench/watch_accuracy.py). Writes
# bench/results/case4.md.
#
# Usage: bash bench/time_to_accuracy.sh
# Environment: ROUNDS [3], TARGET [0.91], EPOCHS [10] (the cap, and the cosine schedule's length),
#   RUN_TIMEOUT [900] seconds per run, TTA_DEBIAN [0] (1: also Debian's PyTorch 1.13, ~4x slower
#   than pip's here: 10 minutes a run), DATA [/usr/share/datasets/fashion-mnist], THREADS [2].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
TARGET=${TARGET:-0.91}
EPOCHS=${EPOCHS:-10}
RUN_TIMEOUT=${RUN_TIMEOUT:-900}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
require_ints ROUNDS EPOCHS RUN_TIMEOUT
require_vdnn
[[ -d $DATA ]] || die "no Fashion-MNIST in $DATA (apt-get install dataset-fashion-mnist, or DATA=folder)"

RAW="$RESULTS/raw/case4"
fresh_dir "$RAW"
MANIFEST="$RAW/runs.tsv"
manifest_init "$MANIFEST"

VARIANTS=("vdnn|")
while IFS='|' read -r label py; do
  [[ $py == "$PIP_PY" || ${TTA_DEBIAN:-0} == 1 ]] && VARIANTS+=("$label|$py")
done < <(pytorch_variants)

data_flag=()
[[ $DATA == /usr/share/datasets/fashion-mnist ]] || data_flag=(--data "$DATA")
warn_if_busy
for ((round = 1; round <= ROUNDS; round++)); do
  for i in "${!VARIANTS[@]}"; do
    IFS='|' read -r label py <<<"${VARIANTS[$i]}"
    file="$RAW/r${round}_v${i}"
    load=$(loadavg)
    if [[ -z $py ]]; then
      kind=vdnn
      train=$(vdnn_train_cmd "${data_flag[@]}" --epochs "$EPOCHS" --progress none)
    else
      kind=pytorch
      train=$(pytorch_cmd "$py" pytorch_fmnist.py "${data_flag[@]}" --epochs "$EPOCHS")
    fi
    # The watcher starts the clock, then the command (in its own environment) starts.
    cmd="python3 bench/watch_accuracy.py --target $TARGET --log $(rel "$file.log") -- timeout $RUN_TIMEOUT env ${train}"
    run_measured "$cmd" "$file.json" "$file.err" stdout
    log "case 4 round $round/$ROUNDS: $label: exit $RUN_RC"
    manifest_add "$MANIFEST" case=4 model=fmnist_cnn batch=128 iterations="$EPOCHS" round="$round" \
      variant="$label" kind="$kind" rc="$RUN_RC" file="$file.json" loadavg="$load" command="$train"
  done
done
python3 "$BENCH/summarize_time_to_accuracy.py" "$MANIFEST" "$RESULTS/case4.md" "$TARGET" "$EPOCHS"
log "wrote $(rel "$RESULTS/case4.md")"
