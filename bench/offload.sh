#!/usr/bin/env bash
# bench/offload.sh — cost of offloading: training throughput of vdnn under none / conv / all, with
# --sync event and --sync layer, at several emulated link bandwidths; every configuration is run
# ROUNDS times, interleaved (A B C ... A B C ...), each a fresh process; medians and per-round
# ratios to `none` go to bench/results/offload.md.
#
# Usage: bench/offload.sh            Environment: ROUNDS [3], MODEL [vgg_cifar], BATCH [64],
#        ITERS [12], LINKS ["0 8 2"] (GB/s; 0 = no link model), THREADS [2]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VDNN="$ROOT/build/vdnn"
ROUNDS=${ROUNDS:-3}
MODEL=${MODEL:-vgg_cifar}
BATCH=${BATCH:-64}
ITERS=${ITERS:-12}
LINKS=${LINKS:-"0 8 2"}
THREADS=${THREADS:-2}
OUT="$ROOT/bench/results"
mkdir -p "$OUT/offload_raw"
[ -x "$VDNN" ] || { echo "build vdnn first: bash scripts/setup.sh" >&2; exit 1; }
: > "$OUT/offload_runs.tsv"
for round in $(seq 1 "$ROUNDS"); do
  for link in $LINKS; do
    for policy in none conv all; do
      for sync in event layer; do
        [ "$policy" = none ] && [ "$sync" = layer ] && continue
        f="$OUT/offload_raw/${round}_${link}_${policy}_${sync}.json"
        OMP_NUM_THREADS=$THREADS "$VDNN" train --model "$MODEL" --data synthetic --batch "$BATCH" \
          --synthetic-samples $((BATCH * ITERS)) --iterations "$ITERS" --no-eval \
          --policy "$policy" --sync "$sync" --link-bandwidth "$link" --report "$f" > /dev/null
        python3 - "$f" "$round" "$link" "$policy" "$sync" >> "$OUT/offload_runs.tsv" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
e = r["epochs"]
print("\t".join(sys.argv[2:6] + [str(r["images_per_second"]), str(r["stall_ms_per_iteration"]),
      str(r["peak_device_bytes"]), str(r["offloaded_bytes_per_iteration"])]))
PY
      done
    done
  done
done
python3 - "$OUT/offload_runs.tsv" "$MODEL" "$BATCH" "$ITERS" "$ROUNDS" > "$OUT/offload.md" <<'PY'
import statistics as st, sys, collections
rows = [l.split("\t") for l in open(sys.argv[1]).read().split("\n") if l]
by = collections.defaultdict(dict)
for rnd, link, pol, sync, ips, stall, peak, off in rows:
    by[(link, pol, sync)][rnd] = (float(ips), float(stall), int(peak), float(off))
print(f"model {sys.argv[2]}, batch {sys.argv[3]}, {sys.argv[4]} iterations, {sys.argv[5]} interleaved rounds\n")
print("| link GB/s | policy | sync | images/s (median) | vs none (median of per-round ratios) | stall ms/iter | peak MiB | offloaded MiB/iter |")
print("|---|---|---|---:|---:|---:|---:|---:|")
for (link, pol, sync), rounds in sorted(by.items(), key=lambda kv: (float(kv[0][0]) == 0, -float(kv[0][0]), kv[0][1] != "none", kv[0][1], kv[0][2])):
    base = by.get((link, "none", "event"), {})
    ratios = [rounds[r][0] / base[r][0] for r in rounds if r in base]
    ips = st.median(v[0] for v in rounds.values())
    print(f"| {'none' if float(link) == 0 else link} | {pol} | {sync} | {ips:.0f} | {st.median(ratios):.3f} | "
          f"{st.median(v[1] for v in rounds.values()):.1f} | {list(rounds.values())[0][2] / 2**20:.1f} | "
          f"{list(rounds.values())[0][3] / 2**20:.1f} |")
PY
cat "$OUT/offload.md"
