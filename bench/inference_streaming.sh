#!/usr/bin/env bash
# bench/inference_streaming.sh — VGG-16 at batch 1 in half its weights (issue 20): `vdnn infer`
# with every weight resident against --device-memory 264MiB (fc6 cut into blocks, the largest
# layers' weights streamed from host memory), interleaved in fresh processes, each with the fastest
# forward algorithm per layer as measured on this CPU (--conv-algo fastest); then what
# `vdnn plan --inference --device cpu` predicts for both on this CPU's measured costs (the same
# per-layer choice, calibrated on a few timed passes).
# Prints per run the latency (median of REPEAT passes after a warm-up), the bytes streamed per
# inference, the arena and the peak RSS; the logits of the two runs are compared.
# Uses the files bench/inference_memory.sh made (WORK: its --work folder).
#
#   bash bench/inference_streaming.sh [VDNN=build/vdnn] [WORK=build/inference_bench] [ROUNDS=5] [REPEAT=10]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
V=${1:-$ROOT/build/vdnn}
W=${2:-$ROOT/build/inference_bench}
ROUNDS=${3:-5}
REPEAT=${4:-10}
MODEL=$W/onnx/vgg16_eval_b1.onnx
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {  # $1: label, then flags
  local label=$1; shift
  local out
  out=$({ /usr/bin/time -f "maxrss_kib %M" "$V" infer --model "$MODEL" --images "$W/input_b1_s224_seed0.npy" \
          --logits "$OUT/$label.npy" --batch 1 --threads 2 --repeat "$REPEAT" --conv-algo fastest --json "$@"; } 2>&1)
  echo "$out" | python3 -c '
import sys, json
t = sys.stdin.read()
j = json.loads(t[t.index("{"):t.rindex("}") + 1])
rss = int(t.split("maxrss_kib ")[1].split()[0])
print("%-9s latency %7.1f ms  streamed %6.1f MiB/inference  arena %6.1f MiB  peak RSS %6.0f MiB" % (
    sys.argv[1], j["batch_seconds_median"] * 1e3, j["streamed_bytes_per_batch"] / 2**20,
    j["arena_bytes"] / 2**20, rss / 1024))' "$label"
}
for r in $(seq "$ROUNDS"); do
  run resident
  run 264MiB --device-memory 264MiB
done
/usr/bin/python3 - "$OUT" <<'PY'
import sys, numpy as np
a, b = (np.load(f"{sys.argv[1]}/{n}.npy") for n in ("resident", "264MiB"))
print("logits: max |resident - streamed| = %g (max |logit| %g)" % (np.abs(a - b).max(), np.abs(a).max()))
PY
for budget in "" "--device-memory 264MiB"; do
  echo "predicted (vdnn plan --inference --device cpu ${budget:-without a budget}):"
  "$V" plan --inference --model "$MODEL" --device cpu --batches 1 $budget | sed -n 2,3p
done
