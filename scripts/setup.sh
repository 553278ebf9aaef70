#!/usr/bin/env bash
# scripts/setup.sh — installs the Debian packages vdnn needs (only those missing) and builds it.
# Sourced by scripts/train.sh and scripts/test.sh; safe to run on its own: `bash scripts/setup.sh`.
# Environment: BUILD_DIR (default build), BUILD_TYPE (default Release), JOBS (default nproc).
#   build_vdnn [TARGET...]   configure (unity batches, ccache) and build those targets, or everything
set -euo pipefail

VDNN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$VDNN_ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-Release}"
JOBS="${JOBS:-$(nproc)}"

# What building and training need (scripts/train.sh installs only these):
# ocl-icd-opencl-dev: Debian's dnnl-config.cmake requires OpenCL (only a recommendation of libdnnl-dev).
# libonnx-dev + libprotobuf-dev (+ protobuf-compiler, which protobuf's CMake config wants): ONNX
# import and export (src/interop). pybind11-dev: the Python API (CMake decides at the first configure
# whether to build it, so it is here and not with the tests). libgtest-dev: found at configure time.
# libopenmpi-dev: data-parallel training (src/comm: MPI_Allreduce of the gradients between CPU ranks,
# and the bootstrap of NCCL between GPU ranks; CMake's find_package(MPI), here and in an installed
# package's vdnnConfig.cmake), with openmpi-bin for `mpirun -np N vdnn train`. libjpeg62-turbo-dev and
# libpng-dev: image folders (src/data/image_decode.cc decodes with them; the tests write images too).
# ccache: a rebuild of an unchanged file, here or in a fresh clone on this machine, is a cache hit.
VDNN_PACKAGES=(build-essential cmake pkg-config libdnnl-dev ocl-icd-opencl-dev nlohmann-json3-dev
               libcli11-dev zlib1g-dev libgtest-dev dataset-fashion-mnist
               libonnx-dev libprotobuf-dev protobuf-compiler pybind11-dev
               libopenmpi-dev openmpi-bin libjpeg62-turbo-dev libpng-dev ccache)
# What the tests add (scripts/test.sh): libxml2-utils (xmllint) and librsvg2-bin (rsvg-convert):
# vdnn's SVGs are valid XML and render. python3-torch (PyTorch 1.13, for /usr/bin/python3): the
# independent float64 definition of each layer that tests/reference/test_torch_reference.cc compares
# the kernels with. python3-torchvision, python3-onnx, python3-pytest, python3-venv: the interop and
# Python tests (scripts/python_env.sh adds PyPI's onnxruntime and safetensors in a virtual environment).
# libonnx-testdata: ONNX's own conformance data (/usr/share/libonnx-testdata/data: each node and
# pytorch-converted test a model.onnx with its inputs and expected outputs), which
# tests/interop/test_onnx_conformance.cc imports and runs (OnnxConformance.*, docs/interop.md).
# bible-kjv (and its data, bible-kjv-text): the King James Bible, real English for the char-level
# language-model tests; `bible -f Gen1:1-Rev22:21 > kjv.txt` writes its 4.4 MB as text (no Debian 12
# package installs a plain English text of 1 MB or more as one file; docs/design/data-loading.md).
VDNN_TEST_PACKAGES=(libxml2-utils librsvg2-bin python3-torch python3-torchvision python3-onnx
                    python3-pytest python3-venv python3-pip libonnx-testdata bible-kjv bible-kjv-text)
# The fuzzing run (scripts/fuzz.sh): clang with libFuzzer and the sanitizer runtimes.
VDNN_FUZZ_PACKAGES=(clang libclang-rt-14-dev)

ensure_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

build_vdnn() {
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake -S "$VDNN_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" -DVDNN_UNITY_BUILD=ON >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  ensure_packages "${VDNN_PACKAGES[@]}" "${VDNN_TEST_PACKAGES[@]}"
  build_vdnn
fi
