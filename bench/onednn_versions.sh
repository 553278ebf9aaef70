#!/usr/bin/env bash
# bench/onednn_versions.sh — Debian's oneDNN 2.6 against PyPI's current oneDNN 3.x on the
# convolutions of two vdnn training steps (bench/onednn_versions.cc: resnet18 at 3x64x64 batch 32,
# vgg_cifar batch 64; forward, backward data and backward weights of every convolution, blocked
# layouts). The same source is compiled against each; ROUNDS rounds run the two interleaved, fresh
# processes, and the medians of each step's convolution time and their ratio are printed. Issue 24
# asks whether 3.x is >= 1.2x faster before moving the CPU backend to it. Not part of CI.
#
# PyPI's oneDNN (`onednn-devel`, pinned below) is the oneAPI build: its CPU engine runs on SYCL
# (Intel's OpenCL CPU runtime, TBB threads) and it depends on the SYCL and compiler runtimes, about
# 2 GB in a virtual environment (ONEDNN3_VENV, made when missing). OCL_ICD_FILENAMES points the
# OpenCL loader at that CPU runtime; without it the engine cannot be created.
#
# Usage: bash bench/onednn_versions.sh            e.g. ROUNDS=5 REPS=7 PRECISION=bf16 bash bench/onednn_versions.sh
# Environment: ROUNDS [3], REPS [7] (timed runs per primitive; the median is kept), PRECISION [f32]
#   (bf16: activations and weights read in bf16, weight gradients f32, as vdnn's --precision bf16), THREADS [2]
#   (OMP_NUM_THREADS for 2.6; the SYCL runtime uses every core, 2 here), ONEDNN3_VENV [/tmp/onednn3-venv].
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
REPS=${REPS:-7}
PRECISION=${PRECISION:-f32}
require_ints ROUNDS REPS
[[ $PRECISION == f32 || $PRECISION == bf16 ]] || { echo "PRECISION: expected f32 or bf16, got '$PRECISION'" >&2; exit 2; }
V3=${ONEDNN3_VENV:-/tmp/onednn3-venv}
ONEDNN3_PIN="onednn-devel==2026.1.0"  # oneDNN 3.13.2
if [[ ! -x $V3/bin/pip ]]; then
  log "installing $ONEDNN3_PIN into $V3 (about 2 GB)"
  "$DEBIAN_PY" -m venv "$V3"
  "$V3/bin/pip" install -q "$ONEDNN3_PIN"
fi
BIN=$(mktemp -d)
g++ -O2 -std=c++20 "$BENCH/onednn_versions.cc" -ldnnl -o "$BIN/conv_onednn2"
g++ -O2 -std=c++20 -I"$V3/include" "$BENCH/onednn_versions.cc" -L"$V3/lib" -Wl,-rpath,"$V3/lib" -ldnnl \
  -o "$BIN/conv_onednn3"
run2() { "$BIN/conv_onednn2" "$1" "$REPS" "$PRECISION"; }
run3() { LD_LIBRARY_PATH="$V3/lib" OCL_ICD_FILENAMES="$V3/lib/libintelocl.so" "$BIN/conv_onednn3" "$1" "$REPS" "$PRECISION"; }
warn_if_busy

OUT="$BIN/results.jsonl"
for net in resnet18 vgg_cifar; do
  for ((r = 1; r <= ROUNDS; ++r)); do
    run2 "$net" >>"$OUT"
    run3 "$net" >>"$OUT"
  done
done
"$DEBIAN_PY" - "$OUT" <<'EOF'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
for net in ("resnet18", "vgg_cifar"):
    by = {}
    for r in runs:
        if r["net"] == net:
            by.setdefault(r["onednn"], []).append(r)
    (v2, a), (v3, b) = sorted(by.items())
    m2 = statistics.median(x["conv_ms"] for x in a)
    m3 = statistics.median(x["conv_ms"] for x in b)
    print(f"{net} ({a[0]['precision']}): convolutions of a step, oneDNN {v2} {m2:.1f} ms, oneDNN {v3} {m3:.1f} ms: "
          f"3.x is {m2 / m3:.2f}x as fast (rounds: {[round(x['conv_ms'], 1) for x in a]} / "
          f"{[round(x['conv_ms'], 1) for x in b]})")
    for la, lb in zip(a[0]["layers"], b[0]["layers"]):
        t2 = statistics.median(sum(x["layers"][i][k] for k in ("forward_ms", "backward_data_ms", "backward_weights_ms"))
                               for x in a for i in range(len(x["layers"])) if x["layers"][i]["layer"] == la["layer"])
        t3 = statistics.median(sum(x["layers"][i][k] for k in ("forward_ms", "backward_data_ms", "backward_weights_ms"))
                               for x in b for i in range(len(x["layers"])) if x["layers"][i]["layer"] == lb["layer"])
        impls = lambda l: "/".join(l[k] for k in ("forward_impl", "backward_data_impl", "backward_weights_impl"))
        print(f"  {la['layer']:14s} x{la['count']}  {t2:7.2f} ms ({impls(la)})  {t3:7.2f} ms ({impls(lb)})  {t2 / t3:.2f}x")
EOF
rm -rf "$BIN"
