#!/usr/bin/env bash
# bench/slice_runs.sh — training below the largest layer on this CPU with slice runs (issue 21),
# whole against sliced, each at its own smallest budget:
#   MODEL=vgg_cifar (default): batch 256 under `all`, its three blocks sliced;
#   MODEL=resnet18: 3x64x64, 10 classes, batch 128; whole under `all`, the stem (conv1, bn1, relu,
#     maxpool: a batch norm inside the run) in 8 slices under `dyn`, which moves convolutions to
#     leaner algorithms to reach the smallest budget (a layer3 convolution's fastest algorithm
#     needs 44 MiB of workspace).
# First `vdnn plan --device cpu --json` (measured costs) gives each one's smallest budget and
# predicted step there; then ROUNDS rounds of the two trainings, interleaved, each a fresh process
# at exactly that budget, read their iteration_ms from the report. Prints the floor without slices
# (largest layer's input + output + parameters, gradients, momentum; the tests print it too),
# each configuration's budget, predicted and measured medians. Not part of CI.
#
# Usage: bash bench/slice_runs.sh      e.g. MODEL=resnet18 ROUNDS=3 ITERATIONS=8 bash bench/slice_runs.sh
# Environment: MODEL [vgg_cifar], ROUNDS [3], ITERATIONS [8], BUILD_DIR [build], OUT [a temporary folder].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODEL=${MODEL:-vgg_cifar}
ROUNDS=${ROUNDS:-3}
ITERATIONS=${ITERATIONS:-8}
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$ROOT/$BUILD_DIR"
VDNN="$BUILD_DIR/vdnn"
require_ints ROUNDS ITERATIONS
require_vdnn
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
log "raw results: $OUT"
warn_if_busy

case $MODEL in
  vgg_cifar)
    common="--model vgg_cifar --batch 256"
    whole="--policy all"
    sliced="--policy all --slice-run conv1_1:pool1:8 --slice-run conv2_1:pool2:4 --slice-run conv3_1:pool3:4" ;;
  resnet18)
    common="--model resnet18 --input 3x64x64 --classes 10 --batch 128"
    whole="--policy all"
    sliced="--policy dyn --slice-run conv1:maxpool:8" ;;
  *) die "MODEL=$MODEL: expected vgg_cifar or resnet18" ;;
esac

field() {  # FILE EXPR: a value of a plan's (or a report's) JSON
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"j": j}))' "$1" "$2"
}
# Each variant's smallest budget (`all`: its configuration's; `dyn`: all with the leanest
# algorithms), then its plan at exactly that budget for the predicted step.
for variant in whole sliced; do
  flags=${!variant}
  if [[ $flags == *"--policy dyn"* ]]; then
    "$VDNN" plan $common $flags --device-memory 1MiB --json >"$OUT/${variant}_floor.json" 2>/dev/null || true
    budget=$(field "$OUT/${variant}_floor.json" 'j["dyn"]["minimum_budget"]')
  else
    "$VDNN" plan $common $flags --json >"$OUT/${variant}_floor.json"
    budget=$(field "$OUT/${variant}_floor.json" 'j["configurations"][0]["minimum_budget"]')
  fi
  "$VDNN" plan $common $flags --device-memory "$budget" --json >"$OUT/${variant}_plan.json"
  echo "$budget" >"$OUT/${variant}_budget.txt"
done
: >"$OUT/rounds.txt"
for ((round = 1; round <= ROUNDS; round++)); do
  for variant in whole sliced; do
    "$VDNN" train $common ${!variant} --data synthetic --synthetic-samples 2048 --iterations "$ITERATIONS" --no-eval --lr 0.005 \
      --device-memory "$(cat "$OUT/${variant}_budget.txt")" --progress none --report "$OUT/${variant}_r$round.json" \
      >"$OUT/${variant}_r$round.log" 2>&1 || die "$variant, round $round failed: $(tail -1 "$OUT/${variant}_r$round.log")"
    echo "$variant $(field "$OUT/${variant}_r$round.json" 'j["iteration_ms"]')" >>"$OUT/rounds.txt"
  done
done
python3 - "$OUT" "$MODEL" "$common" "$whole" "$sliced" <<'PY'
import json, statistics, sys
out, model, common = sys.argv[1:4]
flags = dict(whole=sys.argv[4], sliced=sys.argv[5])
rows = [line.split() for line in open(f"{out}/rounds.txt")]
print(f"{model} ({common}); {len(rows) // 2} rounds, medians of iteration_ms (the first, warm-up iteration included)")
print("configuration   smallest budget    predicted ms   measured ms")
for name in ("whole", "sliced"):
    plan = json.load(open(f"{out}/{name}_plan.json"))["configurations"][0]
    budget = int(open(f"{out}/{name}_budget.txt").read())
    measured = statistics.median(float(r[1]) for r in rows if r[0] == name)
    print(f"{name:14s} {budget / 2**20:10.2f} MiB {plan['iteration_seconds'] * 1e3:12.1f} {measured:13.1f}   {flags[name]}")
PY
