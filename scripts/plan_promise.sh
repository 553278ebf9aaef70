#!/usr/bin/env bash
# scripts/plan_promise.sh — a plan is a promise, checked on the torchvision networks (issue 41): for
# each model, `vdnn profile --save` once, `vdnn plan --costs` on that profile, then every row's
# `vdnn train` flags (its "runs_as") for one iteration at the row's smallest budget (must train) and
# one byte below it (must be refused). tests/cli/test_cli_plan_promise.cc holds the same on small
# networks in CI; these take minutes on two cores, so this is a manual check.
# Prints one line per row: model, configuration, smallest budget, at / below; exits 1 on a broken promise.
#   flock /tmp/vdnn-cpu.lock bash scripts/plan_promise.sh build/vdnn [--batch 2] [models...]
# Default models: the shipped torchvision networks at 3x224x224 (alexnet vgg16 vgg19 resnet18 resnet34
# resnet50 resnet101 googlenet); an ONNX file of scripts/export_torchvision.py works as well.
set -uo pipefail
VDNN="${1:?usage: plan_promise.sh VDNN_BINARY [--batch N] [models...]}"
shift
batch=2
if [ "${1:-}" = "--batch" ]; then batch="$2"; shift 2; fi
MODELS=("$@")
[ ${#MODELS[@]} -gt 0 ] || MODELS=(alexnet vgg16 vgg19 resnet18 resnet34 resnet50 resnet101 googlenet)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
train=(train --data synthetic --synthetic-samples "$batch" --iterations 1 --no-eval --progress none)

broken=0
for model in "${MODELS[@]}"; do
  costs="$WORK/$(basename "$model").costs.json"
  "$VDNN" profile --model "$model" --batch "$batch" --repeats 1 --progress none --save "$costs" >/dev/null ||
    { echo "$model: profile failed"; broken=1; continue; }
  "$VDNN" plan --model "$model" --batch "$batch" --costs "$costs" --json >"$WORK/plan.json" ||
    { echo "$model: plan failed"; broken=1; continue; }
  while IFS=$'\t' read -r label runs_as smallest; do
    # shellcheck disable=SC2086  # runs_as is a list of flags
    if "$VDNN" "${train[@]}" --model "$model" --batch "$batch" $runs_as --device-memory "$smallest" >"$WORK/at.log" 2>&1; then at=trains; else at="REFUSED: $(tail -n 1 "$WORK/at.log")"; broken=1; fi
    # shellcheck disable=SC2086
    if "$VDNN" "${train[@]}" --model "$model" --batch "$batch" $runs_as --device-memory $((smallest - 1)) >"$WORK/below.log" 2>&1; then below="TRAINS (the plan's smallest is not the smallest)"; broken=1; else below=refused; fi
    printf '%-10s %-28s %-40s %10.2f MiB  at: %s; 1 byte below: %s\n' "$(basename "$model")" "$label" "$runs_as" \
      "$(echo "$smallest / 1048576" | bc -l)" "$at" "$below"
  done < <(python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["configurations"]:
    print(c["configuration"], c["runs_as"], c["minimum_budget"], sep="\t")' "$WORK/plan.json")
done
exit $broken
