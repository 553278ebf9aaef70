#!/usr/bin/env bash
# bench/offload.sh — issue 8, case 6: cost of offloading. vdnn training throughput under
# --policy conv / all / dyn, each with --sync event and layer, against none, on emulated host links;
# "conv+ahead" / "all+ahead" add `--prefetch ahead` (look-ahead as deep as the same budget allows);
# ROUNDS rounds, every configuration once per round (interleaved), each a fresh process; medians
# and per-round ratios to `none` go to bench/results/case6.md (bench/summarize_offload.py).
#
# The links default to the compute-to-link ratio of each GPU in DEVICES on its PCIe generation
# (bench/scaled_link.py, from the best convolution throughput of bench/conv_peak.sh, which runs
# first unless bench/results/conv_peak.json exists and REUSE_CONV_PEAK=1). LINKS overrides them:
# "LABEL=GBPS@LATENCY ..." or plain bandwidths ("8 2": GB/s, no latency; 0 = no link model).
# dyn gets DYN_BUDGET (default: halfway between the smallest budgets of all and none, from
# `vdnn plan`, so that it must offload) and costs profiled on each link (`vdnn profile --save`);
# auto (issue 17) gets AUTO_BUDGET (default: all's smallest budget, the tightest all trains in) and
# the same costs.
#
# Usage: bash bench/offload.sh          e.g. ROUNDS=1 ITERS=4 WARMUP=2 LINKS="8 0.5" bash bench/offload.sh
# Environment: ROUNDS [3], MODEL [vgg_cifar], BATCH [64], INPUT (e.g. 3x64x64: the model's --input),
#   ITERS [12], WARMUP [4] (timed iterations after warm-up ones, as bench/throughput.sh),
#   DEVICES ["titan-x-maxwell h200"], LINKS,
#   POLICIES ["conv all dyn conv+ahead all+ahead"] (auto too: "all auto"), SYNCS ["event layer"],
#   DYN_BUDGET (e.g. 120MiB), AUTO_BUDGET, LR [0.01], THREADS [2].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
MODEL=${MODEL:-vgg_cifar}
BATCH=${BATCH:-64}
ITERS=${ITERS:-12}
WARMUP=${WARMUP:-4}
DEVICES=${DEVICES:-"titan-x-maxwell h200"}
POLICIES=${POLICIES:-"conv all dyn conv+ahead all+ahead"}
SYNCS=${SYNCS:-"event layer"}
LR=${LR:-0.01}
require_ints ROUNDS BATCH ITERS WARMUP
((ITERS % WARMUP == 0)) || die "ITERS ($ITERS) must be a multiple of WARMUP ($WARMUP)"
require_vdnn
RAW="$RESULTS/raw/case6"
fresh_dir "$RAW"
MANIFEST="$RAW/runs.tsv"
manifest_init "$MANIFEST"

if [[ -z ${LINKS:-} ]]; then
  if [[ ${REUSE_CONV_PEAK:-0} != 1 || ! -s $RESULTS/conv_peak.json ]]; then
    MODEL=$MODEL BATCH=$BATCH bash "$BENCH/conv_peak.sh"
  fi
  # shellcheck disable=SC2086  # DEVICES is a word list
  LINKS=$(python3 "$BENCH/scaled_link.py" "$RESULTS/conv_peak.json" $DEVICES --markdown "$RAW/scaling.md" | tr '\n' ' ')
fi
# Each link: label|bandwidth GB/s|latency
LINK_SPECS=()
for l in $LINKS; do
  label=${l%%=*} value=${l#*=}
  bw=${value%%@*} latency=0
  [[ $value != *@* ]] || latency=${value#*@}
  [[ $l == *=* ]] || label="$bw GB/s"
  LINK_SPECS+=("$label|$bw|$latency")
done
log "links: ${LINK_SPECS[*]}"

# dyn: costs measured on each link, and a budget that forces offloading.
shape_args=(--model "$MODEL" --batch "$BATCH")
[[ -z ${INPUT:-} ]] || shape_args+=(--input "$INPUT")
if [[ " $POLICIES " == *" dyn "* || " $POLICIES " == *" auto "* ]]; then
  for i in "${!LINK_SPECS[@]}"; do
    IFS='|' read -r label bw latency <<<"${LINK_SPECS[$i]}"
    (cd "$ROOT" && build/vdnn profile "${shape_args[@]}" --link-bandwidth "$bw" --link-latency "$latency" \
      --progress none --save "$RAW/costs_l$i.json") >"$RAW/costs_l$i.log" 2>&1 ||
      die "vdnn profile failed (see $(rel "$RAW/costs_l$i.log"))"
  done
  if [[ -z ${DYN_BUDGET:-} || -z ${AUTO_BUDGET:-} ]]; then
    (cd "$ROOT" && build/vdnn plan "${shape_args[@]}" --costs "$RAW/costs_l0.json" --json) >"$RAW/plan.json" ||
      die "vdnn plan failed"
    budgets=$(python3 -c 'import json, sys
rows = {r["runs_as"]: r["minimum_budget"] for r in json.load(open(sys.argv[1]))["configurations"]}
lo, hi = rows["--policy all"], min(v for k, v in rows.items() if k.startswith("--policy none"))
print(f"{(lo + hi) // 2 if hi > lo else lo}B {lo}B")' "$RAW/plan.json")
    DYN_BUDGET=${DYN_BUDGET:-${budgets% *}}
    AUTO_BUDGET=${AUTO_BUDGET:-${budgets#* }}
  fi
  log "dyn budget: $DYN_BUDGET, auto budget: $AUTO_BUDGET"
fi

run_config() {  # round link_index policy sync
  local round=$1 li=$2 policy=$3 sync=$4 label bw latency flags=() file cmd load
  if [[ $li == - ]]; then
    label="no link" bw=0 latency=0
  else
    IFS='|' read -r label bw latency <<<"${LINK_SPECS[$li]}"
    flags=(--link-bandwidth "$bw" --link-latency "$latency")
  fi
  [[ $policy != dyn ]] || flags+=(--device-memory "$DYN_BUDGET" --costs "$(rel "$RAW/costs_l$li.json")")
  [[ $policy != auto ]] || flags+=(--device-memory "$AUTO_BUDGET" --costs "$(rel "$RAW/costs_l$li.json")")
  [[ $policy != *+ahead ]] || flags+=(--prefetch ahead)
  file="$RAW/r${round}_l${li}_${policy}_$sync"
  load=$(loadavg)
  cmd=$(vdnn_train_cmd "${shape_args[@]}" --data synthetic --synthetic-samples $((BATCH * WARMUP)) \
    --iterations $((WARMUP + ITERS)) --no-eval --lr "$LR" --lr-schedule constant --progress none \
    --policy "${policy%+ahead}" --sync "$sync" "${flags[@]}" --report "$(rel "$file.json")")
  run_measured "$cmd" "$file.json" "$file.log"
  log "case 6 round $round/$ROUNDS: $label, $policy/$sync: exit $RUN_RC"
  manifest_add "$MANIFEST" case=6 model="$label" batch="$BATCH" iterations="$ITERS" warmup="$WARMUP" \
    round="$round" variant="$policy/$sync" kind=vdnn rc="$RUN_RC" file="$file.json" loadavg="$load" \
    command="$cmd"
}

warn_if_busy
for ((round = 1; round <= ROUNDS; round++)); do
  run_config "$round" - none event  # nothing to copy: one baseline for every link
  for li in "${!LINK_SPECS[@]}"; do
    for policy in $POLICIES; do
      for sync in $SYNCS; do run_config "$round" "$li" "$policy" "$sync"; done
    done
  done
done
python3 "$BENCH/summarize_offload.py" "$MANIFEST" "$RESULTS/case6.md" "$MODEL" "${DYN_BUDGET:-}" \
  "$RAW/scaling.md"
log "wrote $(rel "$RESULTS/case6.md")"
