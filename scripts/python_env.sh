#!/usr/bin/env bash
# scripts/python_env.sh — the Python environment the interop and Python API tests run in.
#
# A virtual environment at $BUILD_DIR/pyenv, of Debian's /usr/bin/python3 (not whatever python3 is
# first on PATH), that sees the system's site packages (Debian's
# python3-torch 1.13, python3-torchvision, python3-onnx, python3-numpy, python3-pytest, installed by
# scripts/setup.sh) and adds from PyPI what Debian lacks, with pinned versions: onnxruntime (to run
# what `vdnn export --onnx` writes) and safetensors (PyTorch's state_dict files). Idempotent: a
# second run only checks. Usage: bash scripts/python_env.sh [build dir]; then $BUILD_DIR/pyenv/bin/python.
set -euo pipefail
VDNN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-${BUILD_DIR:-$VDNN_ROOT/build}}"
ENV_DIR="$BUILD_DIR/pyenv"
VDNN_PYPI_PACKAGES=(onnxruntime==1.20.1 safetensors==0.4.5)

if [ ! -x "$ENV_DIR/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$ENV_DIR"
fi
if ! "$ENV_DIR/bin/python" -c "import onnxruntime, safetensors" 2>/dev/null; then
  "$ENV_DIR/bin/pip" install -q --disable-pip-version-check "${VDNN_PYPI_PACKAGES[@]}"
fi
"$ENV_DIR/bin/python" -c "import torch, torchvision, onnx, numpy, pytest, onnxruntime, safetensors" ||
  { echo "python_env: $ENV_DIR lacks a package (see scripts/setup.sh and this script)" >&2; exit 1; }
