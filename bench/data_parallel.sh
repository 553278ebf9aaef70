#!/usr/bin/env bash
# bench/data_parallel.sh — issue 19 on this machine: 2 ranks x half batch (mpirun, one thread each)
# against 1 rank x the whole batch (two threads), the same global batch on the same two cores;
# interleaved in fresh processes (A B A B ...), medians of ms per step. Also: the all-reduce time
# and the fraction of it hidden under compute, measured from rank 0's and rank 1's recorded step
# (the report's data_parallel.per_rank), and what `vdnn plan --ranks 2 --network mpi-shared-memory`
# predicts with costs measured on one thread (each rank has one core). The mpi-shared-memory profile's
# bandwidth comes from bench/allreduce_bandwidth.c, run first. Not part of CI.
#
#   bash bench/data_parallel.sh    # ROUNDS [3], ITERS [30], MODELS ["fmnist_cnn vgg_cifar"], GLOBAL [64], SMALL [2MiB]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VDNN="$ROOT/build/vdnn"
ROUNDS=${ROUNDS:-3} ITERS=${ITERS:-30} GLOBAL=${GLOBAL:-64} MODELS=${MODELS:-"fmnist_cnn vgg_cifar"}
SMALL=${SMALL:-2MiB}  # the 2-rank runs also with buckets of this size (default: DDP's 25 MiB)
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
echo "raw results: $OUT (OUT=$OUT SKIP_RUNS=1 re-summarizes them)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun -np 2 --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
mpicc -O2 "$ROOT/bench/allreduce_bandwidth.c" -o "$OUT/allreduce_bandwidth"
echo "all-reduce on this machine: $("${MPIRUN[@]}" "$OUT/allreduce_bandwidth")"
TRAIN=(train --data synthetic --synthetic-samples 4096 --iterations "$ITERS" --no-eval --progress none
       --lr 0.002 --lr-schedule constant)
for model in $MODELS; do
  [ "${SKIP_RUNS:-0}" = 1 ] && continue
  for round in $(seq "$ROUNDS"); do
    OMP_NUM_THREADS=2 "$VDNN" "${TRAIN[@]}" --model "$model" --batch "$GLOBAL" --report "$OUT/$model-one-$round.json" >/dev/null
    "${MPIRUN[@]}" "$VDNN" "${TRAIN[@]}" --model "$model" --batch $((GLOBAL / 2)) \
      --report "$OUT/$model-two-$round.json" >/dev/null
    "${MPIRUN[@]}" "$VDNN" "${TRAIN[@]}" --model "$model" --batch $((GLOBAL / 2)) --bucket-size "$SMALL" \
      --report "$OUT/$model-small-$round.json" >/dev/null
  done
  for bucket in 25MiB "$SMALL"; do
    OMP_NUM_THREADS=1 "$VDNN" plan --model "$model" --batch $((GLOBAL / 2)) --ranks 2 --network mpi-shared-memory \
      --policy none --bucket-size "$bucket" --json > "$OUT/$model-plan-$bucket.json"
  done
done
/usr/bin/python3 - "$OUT" "$MODELS" "$ROUNDS" "$GLOBAL" "$SMALL" <<'PY'
import json, statistics, sys
out, models, rounds, batch, small = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
print(f"| model | buckets | 1 rank x {batch}, 2 threads: ms/step | 2 ranks x {batch // 2}, 1 thread each: ms/step | 1-rank / 2-rank | all-reduce ms (rank 0 / 1) | hidden under compute (rank 0 / 1) | predicted 2-rank ms/step | predicted hidden |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
med = statistics.median
for m in models:
    one = [json.load(open(f"{out}/{m}-one-{r}.json")) for r in range(1, rounds + 1)]
    a = med(j["iteration_ms"] for j in one)
    for kind, bucket in (("two", "25MiB"), ("small", small)):
        two = [json.load(open(f"{out}/{m}-{kind}-{r}.json")) for r in range(1, rounds + 1)]
        b = med(j["iteration_ms"] for j in two)
        ranks = [[j["data_parallel"]["per_rank"][k] for j in two] for k in (0, 1)]
        ar = [med(x["all_reduce_ms"] for x in r) for r in ranks]
        hid = [med(x["all_reduce_hidden_fraction"] for x in r) for r in ranks]
        plan = json.load(open(f"{out}/{m}-plan-{bucket}.json"))
        points = [p for c in plan["data_parallel"]["configurations"] for p in c["points"] if p["ranks"] == 2]
        pred = min(points, key=lambda p: p["iteration_seconds"])  # the plan's fastest configuration under none
        n = two[0]["data_parallel"]["gradient_buckets"]
        print(f"| {m} | {n} x {bucket} | {a:.1f} | {b:.1f} | {a / b:.2f} | {ar[0]:.1f} / {ar[1]:.1f} | "
              f"{100 * hid[0]:.0f}% / {100 * hid[1]:.0f}% | {1e3 * pred['iteration_seconds']:.1f} | "
              f"{100 * pred['all_reduce_hidden']:.0f}% |")
        print(f"<!-- per round ms, 1 rank {[round(j['iteration_ms'], 1) for j in one]}, 2 ranks "
              f"{[round(j['iteration_ms'], 1) for j in two]} -->")
PY
