#!/usr/bin/env python3
"""bench/plan_scale.py — how long `vdnn plan` takes on networks of 10^3..10^4 layers.

Writes the deep models of tests/cli/test_cli_plan_scale.cc (a chain of in-place ReLUs, a ResNet of
7-layer basic blocks; input 3x8x8, 10 classes) into a temporary folder and times
`vdnn plan --model M --batch 4 --device h200` (a device profile: no kernel is measured) for every
binary given, ROUNDS rounds, binaries interleaved within a round, fresh processes. Prints every run,
then the median per model and binary. The figures of docs/benchmarks.md, "Planning at depth".

Usage: python3 bench/plan_scale.py ROUNDS BINARY [BINARY...]
  python3 bench/plan_scale.py 3 build/vdnn
  python3 bench/plan_scale.py 3 /tmp/vdnn_old build/vdnn     # A/B, interleaved
Environment: PLAN_SCALE_MODELS (comma list of chain1000, chain10000, resnet10002; default all),
PLAN_SCALE_TIMEOUT seconds per run (default 900; a run past it counts as that, marked '>').
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def layer(kind, name, **fields):
    return {"type": kind, "name": name, **fields}


def chain(n):
    layers = [layer("relu", f"relu{i}") for i in range(n)]
    return layers + [layer("fc", "fc", units="classes"), layer("softmax_cross_entropy", "loss")]


def resnet(blocks):
    def conv(name, **extra):
        return layer("conv", name, channels=8, kernel=3, pad=1, bias=False, **extra)

    layers = [conv("conv1"), layer("batch_norm", "bn1"), layer("relu", "relu")]
    x = "relu"
    for b in range(blocks):
        p = f"b{b}_"
        layers += [conv(p + "conv1", inputs=[x]), layer("batch_norm", p + "bn1"), layer("relu", p + "relu1"),
                   conv(p + "conv2"), layer("batch_norm", p + "bn2"),
                   layer("add", p + "add", inputs=[p + "bn2", x]), layer("relu", p + "relu")]
        x = p + "relu"
    return layers + [layer("avg_pool", "avgpool", **{"global": True}), layer("fc", "fc", units="classes"),
                     layer("softmax_cross_entropy", "loss")]


MODELS = {"chain1000": lambda: chain(1000), "chain10000": lambda: chain(10000), "resnet10002": lambda: resnet(1428)}


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit(__doc__)
    rounds, binaries = int(sys.argv[1]), sys.argv[2:]
    names = os.environ.get("PLAN_SCALE_MODELS", ",".join(MODELS)).split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"plan_scale: unknown model(s) {unknown}; valid: {', '.join(MODELS)}")
    timeout = float(os.environ.get("PLAN_SCALE_TIMEOUT", "900"))
    seconds = {(n, b): [] for n in names for b in binaries}
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            path = os.path.join(folder, name + ".json")
            layers = MODELS[name]()
            with open(path, "w") as f:
                json.dump({"name": name, "input": [3, 8, 8], "classes": 10, "layers": layers}, f)
            for r in range(1, rounds + 1):
                for binary in binaries:
                    start = time.monotonic()
                    try:
                        done = subprocess.run([binary, "plan", "--model", path, "--batch", "4", "--device", "h200"],
                                              capture_output=True, text=True, timeout=timeout)
                        took, mark = time.monotonic() - start, ""
                        if done.returncode != 0:
                            sys.exit(f"plan_scale: {binary} failed on {name}:\n{done.stdout}{done.stderr}")
                    except subprocess.TimeoutExpired:
                        took, mark = timeout, ">"
                    seconds[(name, binary)].append(took)
                    print(f"{name} ({len(layers)} layers) round {r} {binary}: {mark}{took:.2f} s", flush=True)
    for (name, binary), runs in seconds.items():
        print(f"{name} {binary}: median {statistics.median(runs):.2f} s (min {min(runs):.2f}, max {max(runs):.2f})")


if __name__ == "__main__":
    main()
