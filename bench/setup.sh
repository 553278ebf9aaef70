#!/usr/bin/env bash
# bench/setup.sh — what the benchmarks need: build/vdnn (Release), PyTorch 2.x from pip in
# bench/.venv, and Debian's python3-torch (1.13) for /usr/bin/python3 where apt can install it.
#
# Usage: bash bench/setup.sh          Environment: SKIP_BUILD [0] (1: use the existing build/vdnn),
#                                     SKIP_DEBIAN_TORCH [0] (1: don't apt-get install python3-torch)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

build_vdnn() {
  if [[ ${SKIP_BUILD:-0} == 1 ]]; then
    require_vdnn
    log "SKIP_BUILD=1: using the existing $(rel "$VDNN")"
    return
  fi
  log "building vdnn (Release; a no-op when up to date)"
  (cd "$ROOT" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build build -j2) >&2
  require_vdnn
  local type
  type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$ROOT/build/CMakeCache.txt" 2>/dev/null || true)
  [[ $type == Release ]] || log "warning: build/ is configured as '${type:-?}', not Release"
}

install_pip_torch() {
  if [[ ! -x $PIP_PY ]]; then
    log "creating the virtual environment $(rel "$VENV")"
    python3 -m venv "$VENV" || die "python3 -m venv failed (apt-get install python3-venv?)"
  fi
  # numpy only silences torch's "Failed to initialize NumPy" warning.
  "$PIP_PY" -c 'import numpy' 2>/dev/null ||
    "$PIP_PY" -m pip install -q numpy >&2 || log "warning: could not install numpy"
  local v
  v=$(torch_version_of "$PIP_PY")
  if [[ $v == 2.* ]]; then
    log "pip PyTorch $v already in $(rel "$VENV")"
    return
  fi
  "$PIP_PY" -m pip install -q --upgrade pip >&2 || log "warning: could not upgrade pip"
  log "installing PyTorch (CPU) from download.pytorch.org/whl/cpu"
  if ! "$PIP_PY" -m pip install --timeout 30 --retries 1 'torch>=2,<3' \
      --index-url https://download.pytorch.org/whl/cpu >&2; then
    log "the PyTorch CPU index is unreachable here: falling back to plain PyPI (the CUDA build of"
    log "the wheel, with its nvidia-* dependencies: a large download; it runs on the CPU all the same)"
    "$PIP_PY" -m pip install 'torch>=2,<3' >&2 || die "pip install torch failed"
  fi
  v=$(torch_version_of "$PIP_PY")
  [[ $v == 2.* ]] || die "torch in $(rel "$VENV") does not import (got '$v')"
  log "pip PyTorch $v installed in $(rel "$VENV")"
}

install_debian_torch() {
  if [[ ${SKIP_DEBIAN_TORCH:-0} == 1 ]]; then
    log "SKIP_DEBIAN_TORCH=1: not using Debian's python3-torch"
    return
  fi
  [[ -x $DEBIAN_PY ]] || { log "no $DEBIAN_PY: skipping Debian's python3-torch"; return; }
  if [[ -n $(torch_version_of "$DEBIAN_PY") ]]; then
    log "Debian's python3-torch $(torch_version_of "$DEBIAN_PY") already installed"
    return
  fi
  command -v apt-get >/dev/null || { log "no apt-get: skipping Debian's python3-torch"; return; }
  local sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo -n)
  log "trying apt-get install python3-torch (Debian's PyTorch 1.13)"
  apt-cache show python3-torch >/dev/null 2>&1 || "${sudo[@]}" apt-get update -qq >&2 || true
  if apt-cache show python3-torch >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq python3-torch >&2; then
    log "Debian's python3-torch $(torch_version_of "$DEBIAN_PY") installed"
  else
    log "python3-torch is not installable here: skipping the Debian PyTorch variant"
  fi
}

build_vdnn
install_pip_torch
install_debian_torch
log "setup done"
