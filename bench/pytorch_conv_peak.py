#!/usr/bin/env python3
"""A direct benchmark of oneDNN's forward convolution through PyTorch (its mkldnn path): every conv
layer of a vdnn model at a batch size, timed alone (median of --repeats after 2 warm-up calls),
as GFLOP/s with direct-convolution FLOPs (bench/model_flops.py). A cross-check of `vdnn profile`'s
per-layer figures with a different oneDNN build (PyTorch 2.x bundles oneDNN 3.x).

Prints one JSON line: {"best_gflops": ..., "best_layer": ..., "layers": {name: gflops}, ...}

  bench/.venv/bin/python bench/pytorch_conv_peak.py --model vgg_cifar --batch 64
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

from model_flops import MODELS_DIR, layer_flops, pair


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--channels-last", action="store_true")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    with open(f"{MODELS_DIR}/{args.model}.json") as f:
        spec = {layer["name"]: layer for layer in json.load(f)["layers"]}
    results = {}
    with torch.no_grad():
        for name, f in layer_flops(args.model).items():
            if f["type"] != "conv":
                continue
            layer = spec[name]
            c, h, w = f["input"]
            groups = layer.get("groups", 1)
            stride, pad = pair(layer, "stride", 1), pair(layer, "pad", 0)
            x = torch.randn(args.batch, c, h, w).contiguous(memory_format=fmt)
            weight = torch.randn(layer["channels"], c // groups, *pair(layer, "kernel", 1))
            weight = weight.contiguous(memory_format=fmt)
            bias = torch.randn(layer["channels"]) if layer.get("bias", True) else None

            def conv():
                return F.conv2d(x, weight, bias, stride, pad, 1, groups)
            for _ in range(2):
                conv()
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                conv()
                times.append(time.perf_counter() - start)
            results[name] = f["flops"] * args.batch / statistics.median(times) / 1e9
    best = max(results, key=results.get)
    print(json.dumps({"framework": "pytorch", "torch_version": torch.__version__,
                      "model": args.model, "batch": args.batch, "channels_last": args.channels_last,
                      "best_gflops": results[best], "best_layer": best, "layers": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
