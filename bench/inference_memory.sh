#!/usr/bin/env bash
# bench/inference_memory.sh — peak memory and latency of inference, ONNX Runtime vs PyTorch vs vdnn
# (issue 20): makes build/pyenv (onnxruntime) if missing, then runs bench/inference_memory.py with
# every argument passed through (its header says what is measured and how).
#
#   bash bench/inference_memory.sh --models resnet18 --batches 1,32 --json-out /tmp/inference.json
#   bash bench/inference_memory.sh --models resnet18,resnet50,vgg16,googlenet --rounds 3
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$ROOT/scripts/python_env.sh" "$ROOT/build" >&2
exec "$ROOT/build/pyenv/bin/python" "$ROOT/bench/inference_memory.py" "$@"
