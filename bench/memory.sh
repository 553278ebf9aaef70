#!/usr/bin/env bash
# bench/memory.sh — issue 8, case 5: memory held for backward per step. vdnn: the planned peak of
# its feature-map class (every value, saved state and the input batch kept on the device for the
# backward pass; the plan is what the executor uses, byte for byte) under --policy none, and the
# same class under conv / all, which offload to host memory; from one training step's --report.
# PyTorch: bytes autograd saves for backward (bench/pytorch_saved_bytes.py). Sizes only, no timing,
# so nothing is interleaved. Writes bench/results/case5.md.
#
# Usage: bash bench/memory.sh
# Environment: MEMORY_CASES ["fmnist_cnn:128 vgg_cifar:64 resnet18:32:3x64x64"] (model:batch[:CxHxW]),
#   SKIP_DEBIAN_TORCH [0], THREADS [2].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MEMORY_CASES=${MEMORY_CASES:-"fmnist_cnn:128 vgg_cifar:64 resnet18:32:3x64x64"}
require_vdnn
RAW="$RESULTS/raw/case5"
fresh_dir "$RAW"
MANIFEST="$RAW/runs.tsv"
manifest_init "$MANIFEST"

mapfile -t TORCHES < <(pytorch_variants)
for spec in $MEMORY_CASES; do
  IFS=: read -r model batch input <<<"$spec"
  shape_flags=()
  [[ -z $input ]] || shape_flags=(--input "$input")
  for policy in none conv all; do
    file="$RAW/${model}_$policy"
    cmd=$(vdnn_train_cmd --model "$model" "${shape_flags[@]}" --batch "$batch" --data synthetic \
      --synthetic-samples "$batch" --iterations 1 --no-eval --policy "$policy" --progress none \
      --report "$(rel "$file.json")")
    run_measured "$cmd" "$file.json" "$file.log"
    log "case 5: $model b$batch vdnn $policy: exit $RUN_RC"
    manifest_add "$MANIFEST" case=5 model="$model${input:+@$input}" batch="$batch" \
      variant="vdnn $policy" kind=vdnn rc="$RUN_RC" file="$file.json" command="$cmd"
  done
  for i in "${!TORCHES[@]}"; do
    IFS='|' read -r label py <<<"${TORCHES[$i]}"
    file="$RAW/${model}_torch$i"
    cmd=$(pytorch_cmd "$py" pytorch_saved_bytes.py --model "$model" "${shape_flags[@]}" --batch "$batch")
    run_measured "$cmd" "$file.json" "$file.log" stdout
    log "case 5: $model b$batch $label: exit $RUN_RC"
    manifest_add "$MANIFEST" case=5 model="$model${input:+@$input}" batch="$batch" \
      variant="$label" kind=pytorch rc="$RUN_RC" file="$file.json" command="$cmd"
  done
done
python3 "$BENCH/summarize_memory.py" "$MANIFEST" "$RESULTS/case5.md"
log "wrote $(rel "$RESULTS/case5.md")"
