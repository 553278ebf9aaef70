#!/usr/bin/env bash
# bench/slice_runs.sh — training below the largest layer on this CPU with slice runs (issue 21):
# vgg_cifar at batch 256 under `all`, whole and with its three blocks sliced, each at its own
# smallest budget. First `vdnn plan --device cpu --json` (measured costs) gives each one's
# smallest budget and predicted step; then ROUNDS rounds of the two trainings, interleaved, each a
# fresh process at exactly that budget, read their iteration_ms from the report. Prints the floor
# without slices (largest layer's input + output + parameters, gradients, momentum), each
# configuration's budget, predicted and measured medians. Not part of CI.
#
# Usage: bash bench/slice_runs.sh      e.g. ROUNDS=5 ITERATIONS=8 bash bench/slice_runs.sh
# Environment: ROUNDS [3], ITERATIONS [8], BUILD_DIR [build], OUT [a temporary folder].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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

common="--model vgg_cifar --batch 256 --policy all"
slices="--slice-run conv1_1:pool1:8 --slice-run conv2_1:pool2:4 --slice-run conv3_1:pool3:4"
"$VDNN" plan $common --json >"$OUT/whole_plan.json"
"$VDNN" plan $common $slices --json >"$OUT/sliced_plan.json"

field() {  # FILE EXPR: a value of a plan's (or a report's) JSON
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"j": j}))' "$1" "$2"
}
budget_whole=$(field "$OUT/whole_plan.json" 'j["configurations"][0]["minimum_budget"]')
budget_sliced=$(field "$OUT/sliced_plan.json" 'j["configurations"][0]["minimum_budget"]')
: >"$OUT/rounds.txt"
for ((round = 1; round <= ROUNDS; round++)); do
  for variant in whole sliced; do
    budget_var=budget_$variant
    extra=""
    [[ $variant == sliced ]] && extra=$slices
    "$VDNN" train $common $extra --data synthetic --synthetic-samples 2048 --iterations "$ITERATIONS" --no-eval --lr 0.005 \
      --device-memory "${!budget_var}" --progress none --report "$OUT/${variant}_r$round.json" >"$OUT/${variant}_r$round.log" 2>&1 ||
      die "$variant, round $round failed: $(tail -1 "$OUT/${variant}_r$round.log")"
    echo "$variant $(field "$OUT/${variant}_r$round.json" 'j["iteration_ms"]')" >>"$OUT/rounds.txt"
  done
done
python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = [line.split() for line in open(f"{out}/rounds.txt")]
whole = json.load(open(f"{out}/whole_plan.json"))
print(f"vgg_cifar b256, all; {len(rows) // 2} rounds, medians of iteration_ms (the first, warm-up iteration included)")
print("configuration   smallest budget    predicted ms   measured ms")
for name in ("whole", "sliced"):
    plan = json.load(open(f"{out}/{name}_plan.json"))["configurations"][0]
    measured = statistics.median(float(r[1]) for r in rows if r[0] == name)
    print(f"{name:14s} {plan['minimum_budget'] / 2**20:10.2f} MiB {plan['iteration_seconds'] * 1e3:12.1f} {measured:13.1f}")
PY
