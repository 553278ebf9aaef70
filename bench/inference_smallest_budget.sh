#!/usr/bin/env bash
# bench/inference_smallest_budget.sh — `vdnn infer` at batch 32 at its smallest budget (issue 20):
# the budget is read from the refusal of a tiny one (every convolution whose direct kernel needs
# less workspace made direct; every weight resident: --stream-weights never, since on this CPU the
# host copies of streamed weights are the same memory), then one timed run at exactly that budget. Prints per model the
# budget, the convolutions made direct, the peak RSS above `vdnn --help`'s and the median latency.
# Uses the files bench/inference_memory.sh made (WORK: its --work folder).
#
#   bash bench/inference_smallest_budget.sh [VDNN=build/vdnn] [WORK=build/inference_bench]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
V=${1:-$ROOT/build/vdnn}
W=${2:-$ROOT/build/inference_bench}
base=$(/usr/bin/time -f %M "$V" --help 2>&1 >/dev/null | tail -1)
echo "baseline (vdnn --help) max RSS: $base KiB"
for m in resnet18 resnet50 vgg16 googlenet; do
  args=(--model "$W/onnx/${m}_eval_b32.onnx" --images "$W/input_b32_s224_seed0.npy"
        --logits "$W/${m}_b32_smallest.npy" --batch 32 --threads 2 --stream-weights never)
  smallest=$({ "$V" infer "${args[@]}" --device-memory 1MiB 2>&1 || true; } | sed -n 's/.*it needs at least [^(]*(\([0-9]*\) bytes).*/\1/p')
  out=$({ /usr/bin/time -f "maxrss_kib %M" "$V" infer "${args[@]}" --device-memory "${smallest}B" --repeat 5 --json; } 2>&1)
  rss=$(echo "$out" | sed -n 's/maxrss_kib //p')
  latency=$(echo "$out" | sed -n 's/.*"batch_seconds_median": \([0-9.e-]*\).*/\1/p')
  direct=$(echo "$out" | python3 -c 'import sys, json; t = sys.stdin.read(); print(len(json.loads(t[:t.rindex("}") + 1])["direct_convolutions"]))')
  echo "$m b32: smallest budget $smallest B, $direct convolutions direct, peak RSS above baseline $(( (rss - base) / 1024 )) MiB, $latency s/batch"
done
