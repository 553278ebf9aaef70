#!/usr/bin/env bash
# bench/compare_binaries.sh — A/B of two vdnn builds on one training command: ROUNDS rounds, each
# runs OLD then NEW (interleaved, fresh processes, --threads/OMP_NUM_THREADS = THREADS), and prints
# images/s, ms per iteration and the weights hash of every run, then the medians and the median of
# the per-round NEW/OLD ratios. How this repository's "interleaved pairs" figures are measured.
#
# Usage: bash bench/compare_binaries.sh OLD NEW ROUNDS TRAIN_ARGS...
#   cp build/vdnn /tmp/vdnn_old    # before the change; rebuild after it
#   bash bench/compare_binaries.sh /tmp/vdnn_old build/vdnn 4 --model resnet18 --input 3x64x64 \
#     --batch 32 --data synthetic --synthetic-samples 160 --iterations 25 --lr 0.01 \
#     --lr-schedule constant
# Environment: THREADS [2].
set -euo pipefail
(($# >= 3)) || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1 new=$2 rounds=$3
shift 3
[[ -x $old && -x $new ]] || { echo "compare_binaries: '$old' and '$new' must be executables" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "compare_binaries: ROUNDS '$rounds' must be a positive integer" >&2; exit 2; }
threads=${THREADS:-2}
report=$(mktemp)
trap 'rm -f "$report"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for binary in "$old" "$new"; do
    OMP_NUM_THREADS=$threads "$binary" train --threads "$threads" "$@" --no-eval --progress none \
      --report "$report" >/dev/null
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[2], sys.argv[3], round(r["images_per_second"], 1), round(r["iteration_ms"], 1), r["weights_sha256"][:12])' \
      "$report" "$r" "$binary"
  done
done | tee /dev/stderr | python3 -c 'import statistics, sys
runs = [line.split() for line in sys.stdin]
old, new = runs[0][1], runs[1][1]
ips = {b: [float(x[2]) for x in runs if x[1] == b] for b in (old, new)}
ratios = [n / o for o, n in zip(ips[old], ips[new])]
for b in (old, new):
    print(f"{b}: median {statistics.median(ips[b]):.1f} images/s (min {min(ips[b]):.1f}, max {max(ips[b]):.1f})")
each = ", ".join(f"{x:.2f}" for x in ratios)
print(f"new/old: median of per-round ratios {statistics.median(ratios):.2f}x ({each})")'
