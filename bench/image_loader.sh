#!/usr/bin/env bash
# bench/image_loader.sh — vdnn's image-folder loader (`vdnn load --augment imagenet`: JPEG decode,
# random resized crop to 224, flip, normalize, into batches) against PyTorch's DataLoader with
# torchvision's ImageFolder and the same transforms (bench/torch_image_loader.py, Debian's
# /usr/bin/python3), on the same JPEG folder with the same number of loader threads and batch size.
# Nothing is trained. ROUNDS rounds of vdnn then PyTorch, interleaved, each run a fresh process
# timing one epoch after its first batch; prints round, images/s of each and their ratio, then the
# medians and the median of the per-round vdnn/torch ratios. Not part of CI.
#
# The folder (10 classes x 100 training images shaped like ImageNet photos, bench/make_image_folder.py)
# is made when FOLDER/train is missing, and read once before the rounds so that neither loader
# pays for the disk.
#
# Usage: bash bench/image_loader.sh       e.g. ROUNDS=5 THREADS=2 BATCH=64 bash bench/image_loader.sh
# Environment: ROUNDS [3], THREADS [2] (vdnn --data-threads, DataLoader num_workers), BATCH [64],
#   FOLDER [/tmp/vdnn-bench-images], BUILD_DIR [build] (runs BUILD_DIR/vdnn), OUT [a temporary
#   folder] (every run's output and log).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
BATCH=${BATCH:-64}
FOLDER=$(realpath -m "${FOLDER:-/tmp/vdnn-bench-images}")
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR="$ROOT/$BUILD_DIR"
VDNN="$BUILD_DIR/vdnn"
require_ints ROUNDS THREADS BATCH
require_vdnn
[[ -x $DEBIAN_PY ]] || die "$DEBIAN_PY (with torch and torchvision) is missing"
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

if [[ ! -d $FOLDER/train ]]; then
  "$DEBIAN_PY" "$BENCH/make_image_folder.py" "$FOLDER" >&2
fi
find "$FOLDER/train" -type f -exec cat {} + >/dev/null  # into the page cache, for both loaders

vdnn_cmd="$(printf %q "$(rel "$VDNN")") load --data $(printf %q "$FOLDER") --input 3x224x224 --batch $BATCH --data-threads $THREADS --augment imagenet"
torch_cmd="$DEBIAN_PY bench/torch_image_loader.py $(printf %q "$FOLDER") --threads $THREADS --batch $BATCH"
log "raw results: $OUT"
log "A: $vdnn_cmd"
log "B: $torch_cmd"
warn_if_busy

# images_per_second of a run's last stdout line (a JSON object), or "-" when there is none.
images_per_second() {
  python3 -c 'import sys
sys.path.insert(0, sys.argv[1])
from benchlib import read_last_json_line
try:
    print(float(read_last_json_line(sys.argv[2])["images_per_second"]))
except Exception:
    print("-")' "$BENCH" "$1"
}

rounds="$OUT/rounds.txt"
: >"$rounds"
echo "round vdnn_images_per_second torch_images_per_second vdnn/torch"
for ((round = 1; round <= ROUNDS; round++)); do
  ips=()
  for loader in vdnn torch; do
    cmd=vdnn_cmd
    [[ $loader == vdnn ]] || cmd=torch_cmd
    run_measured "${!cmd}" "$OUT/${loader}_r$round.json" "$OUT/${loader}_r$round.log" stdout
    if ((RUN_RC == 0)); then ips+=("$(images_per_second "$OUT/${loader}_r$round.json")"); else ips+=(-); fi
  done
  python3 -c 'import sys
a, b = (None if x == "-" else float(x) for x in sys.argv[2:4])
print(sys.argv[1], "-" if a is None else round(a, 1), "-" if b is None else round(b, 1),
      "-" if a is None or not b else f"{a / b:.2f}")' "$round" "${ips[@]}" | tee -a "$rounds"
done
python3 -c 'import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
vdnn = [float(r[1]) for r in rows if r[1] != "-"]
torch = [float(r[2]) for r in rows if r[2] != "-"]
ratios = [float(r[3]) for r in rows if r[3] != "-"]
for name, xs in (("vdnn", vdnn), ("torch", torch)):
    if xs:
        print(f"{name}: median {statistics.median(xs):.1f} images/s (min {min(xs):.1f}, max {max(xs):.1f}, n={len(xs)})")
    else:
        print(f"{name}: no successful run")
if ratios:
    each = ", ".join(f"{x:.2f}" for x in ratios)
    print(f"vdnn/torch: median of per-round ratios {statistics.median(ratios):.2f}x ({each})")
sys.exit(0 if len(ratios) == len(rows) else 1)' "$rounds"
