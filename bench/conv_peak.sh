#!/usr/bin/env bash
# bench/conv_peak.sh — the best convolution throughput oneDNN reaches on this machine, for issue 8's
# cases 6 (link scaling) and 7 (roofline): ROUNDS runs of `vdnn profile --model MODEL --batch BATCH`
# (every kernel timed cold, median of REPEATS) reduced by bench/conv_peak.py, interleaved with the
# direct benchmark of the same convolutions in pip PyTorch's oneDNN (bench/pytorch_conv_peak.py).
# Writes bench/results/conv_peak.json (vdnn) and conv_peak_pytorch.json (list of runs).
#
# Usage: bash bench/conv_peak.sh      Environment: ROUNDS [3], MODEL [vgg_cifar], BATCH [64],
#                                     REPEATS [5], THREADS [2]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
MODEL=${MODEL:-vgg_cifar}
BATCH=${BATCH:-64}
REPEATS=${REPEATS:-5}
require_ints ROUNDS BATCH REPEATS
require_vdnn
RAW="$RESULTS/raw/conv_peak"
fresh_dir "$RAW"
have_torch=0
[[ -z $(torch_version_of "$PIP_PY") ]] || have_torch=1

profiles=()
for ((round = 1; round <= ROUNDS; round++)); do
  file="$RAW/profile_r$round.json"
  cmd="OMP_NUM_THREADS=$THREADS build/vdnn profile --model $MODEL --batch $BATCH --repeats $REPEATS --progress none --json"
  run_measured "$cmd" "$file" "$RAW/profile_r$round.log" stdout
  log "conv peak round $round/$ROUNDS: vdnn profile: exit $RUN_RC"
  ((RUN_RC != 0)) || profiles+=("$file")
  if ((have_torch)); then
    cmd=$(pytorch_cmd "$PIP_PY" pytorch_conv_peak.py --model "$MODEL" --batch "$BATCH" --repeats "$REPEATS")
    run_measured "$cmd" "$RAW/pytorch_r$round.json" "$RAW/pytorch_r$round.log" stdout
    log "conv peak round $round/$ROUNDS: PyTorch oneDNN: exit $RUN_RC"
  fi
done
((${#profiles[@]} > 0)) || die "every vdnn profile run failed (see $(rel "$RAW"))"
python3 "$BENCH/conv_peak.py" "$MODEL" "$BATCH" "${profiles[@]}" >"$RESULTS/conv_peak.json"
cat "$RAW"/pytorch_r*.json 2>/dev/null | python3 -c 'import json, sys
print(json.dumps([json.loads(l) for l in sys.stdin if l.strip()]))' >"$RESULTS/conv_peak_pytorch.json"
log "best convolution: $(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
b = d["best"]
print("%.1f GFLOP/s, median of %d run(s); best run: %s %s, %s" % (d["best_gflops"], len(d["runs"]), b["layer"], b["pass"], b["algorithm"]))' "$RESULTS/conv_peak.json")"
