#!/usr/bin/env bash
# scripts/install_check.sh — libvdnn as an installed package (run by scripts/test.sh after the
# Release build; about 15 s): installs $BUILD_DIR into a temporary prefix, then, with the source
# tree out of reach (another cwd, VDNN_DATA_DIR and friends unset),
#   1. the installed `vdnn plan --model fmnist_cnn --device h100` finds the model and the profile in
#      <prefix>/share/vdnn (next to its executable);
#   2. the same binary copied away from its data directory, and one given a VDNN_DATA_DIR that does
#      not exist, fail with one line naming every place looked in;
#   3. examples/ configures with find_package(vdnn) against the prefix, builds and runs (load a
#      model, plan under a budget, train 5 steps).
# Any failure exits non-zero. Usage: bash scripts/install_check.sh [build dir]
set -euo pipefail
VDNN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-${BUILD_DIR:-$VDNN_ROOT/build}}"
JOBS="${JOBS:-$(nproc)}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PREFIX="$WORK/prefix"
fail() { echo "install check: $*" >&2; exit 1; }
unset VDNN_DATA_DIR VDNN_MODELS_DIR VDNN_PROFILES_DIR

echo "== install check: cmake --install into $PREFIX, examples/ built against it"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >/dev/null
for f in lib/libvdnn_util.a lib/libvdnn_cpu.a lib/libvdnn_runtime.a bin/vdnn include/vdnn/vdnn.h lib/cmake/vdnn/vdnnConfig.cmake \
         lib/cmake/vdnn/vdnnConfigVersion.cmake lib/cmake/vdnn/vdnnTargets.cmake \
         share/vdnn/models/fmnist_cnn.json share/vdnn/profiles/devices/h100.json; do
  [ -e "$PREFIX/$f" ] || fail "cmake --install did not install $f"
done
cd "$WORK"

# 1. The installed CLI finds its data directory.
out="$("$PREFIX/bin/vdnn" plan --model fmnist_cnn --batch 32 --device h100)" ||
  fail "the installed vdnn plan --model fmnist_cnn --device h100 failed"
grep -q "^model fmnist_cnn, batch 32, device h100" <<<"$out" || fail "unexpected plan output: $out"

# 2. Without a data directory: one clear error naming where it looked.
mkdir -p "$WORK/lonely/bin" && cp "$PREFIX/bin/vdnn" "$WORK/lonely/bin/vdnn"
if err="$("$WORK/lonely/bin/vdnn" plan --model fmnist_cnn --device h100 2>&1)"; then
  fail "a vdnn with no data directory planned anyway: $err"
fi
grep -q "no data directory with a models/ folder (looked in: $WORK/lonely/share/vdnn (next to the running executable" \
  <<<"$err" || fail "unclear error without a data directory: $err"
if err="$(VDNN_DATA_DIR="$WORK/nowhere" "$PREFIX/bin/vdnn" plan --model fmnist_cnn 2>&1)"; then
  fail "VDNN_DATA_DIR=$WORK/nowhere planned anyway: $err"
fi
grep -q "looked in: $WORK/nowhere (\$VDNN_DATA_DIR)" <<<"$err" || fail "unclear error for a missing VDNN_DATA_DIR: $err"

# 3. A program built against the installed package.
{ cmake -S "$VDNN_ROOT/examples" -B "$WORK/example" -DCMAKE_PREFIX_PATH="$PREFIX" &&
  cmake --build "$WORK/example" -j "$JOBS"; } >"$WORK/example.log" 2>&1 ||
  { tail -n 40 "$WORK/example.log" >&2; fail "examples/ did not configure or build against the installed package"; }
out="$(OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" "$WORK/example/plan_and_train")" || fail "examples/plan_and_train failed: $out"
echo "$out"
grep -q "^trained 5 steps: loss [0-9.]*, weights [0-9a-f]\{64\}$" <<<"$out" || fail "unexpected example output"
echo "== install check: passed"
