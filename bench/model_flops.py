#!/usr/bin/env python3
"""Per-layer forward FLOPs of the convolutions and fully connected layers of a vdnn model file,
counted as vdnn does (src/layers/conv.cc, fc.h): 2 per multiply-add, direct convolution
(2 * C/groups * kh * kw per output element, whatever algorithm runs), per image.

  python3 bench/model_flops.py vgg_cifar [--input 3x32x32] [--classes 10]
  -> {"conv1_1": {"type": "conv", "flops": 3538944.0, "reads_network_input": true, ...}, ...}
     (JSON, per image; a layer that reads the network input computes no data gradient)

As a module: layer_flops(path_or_name, input_shape=None, classes=None).
"""
import argparse
import json
import os
import sys

MODELS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def pair(cfg, key, default):
    v = cfg.get(key, default)
    return (v, v) if isinstance(v, int) else tuple(v)


def out_size(n, k, s, p, ceil=False):
    span = n + 2 * p - k
    return (-(-span // s) if ceil else span // s) + 1


def layer_flops(model, input_shape=None, classes=None):
    path = model if model.endswith(".json") else os.path.join(MODELS_DIR, model + ".json")
    with open(path) as f:
        spec = json.load(f)
    classes = classes or spec["classes"]
    shapes = {"data": tuple(input_shape or spec["input"])}   # value -> (C, H, W) or (units,)
    prev, result = "data", {}
    for layer in spec["layers"]:
        name, kind = layer["name"], layer["type"]
        in_names = layer.get("inputs", [prev])
        ins = [shapes[i] for i in in_names]
        x = ins[0]
        if kind == "conv":
            kh, kw = pair(layer, "kernel", 1)
            sh, sw = pair(layer, "stride", 1)
            ph, pw = pair(layer, "pad", 0)
            groups = layer.get("groups", 1)
            out = (layer["channels"], out_size(x[1], kh, sh, ph), out_size(x[2], kw, sw, pw))
            flops = 2.0 * (x[0] // groups) * kh * kw * out[0] * out[1] * out[2]
            result[name] = {"type": kind, "flops": flops, "input": list(x), "output": list(out),
                            "reads_network_input": "data" in in_names}
        elif kind in ("max_pool", "avg_pool"):
            if layer.get("global"):
                out = (x[0], 1, 1)
            else:
                kh, kw = pair(layer, "kernel", 1)
                sh, sw = pair(layer, "stride", (kh, kw))
                ph, pw = pair(layer, "pad", 0)
                ceil = layer.get("ceil", False)
                out = (x[0], out_size(x[1], kh, sh, ph, ceil), out_size(x[2], kw, sw, pw, ceil))
        elif kind == "fc":
            units = classes if layer["units"] == "classes" else layer["units"]
            n_in = 1
            for d in x:
                n_in *= d
            out = (units,)
            result[name] = {"type": kind, "flops": 2.0 * n_in * units, "input": list(x),
                            "output": [units], "reads_network_input": "data" in in_names}
        elif kind == "concat":
            out = (sum(s[0] for s in ins),) + tuple(x[1:])
        elif kind == "flatten":
            n = 1
            for d in x:
                n *= d
            out = (n,)
        else:  # relu, batch_norm, dropout, lrn, add, softmax_cross_entropy: shape-preserving
            out = x
        shapes[name] = out
        prev = name
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a name from models/ or a JSON file")
    ap.add_argument("--input", help="CxHxW")
    ap.add_argument("--classes", type=int)
    args = ap.parse_args(argv)
    shape = tuple(int(p) for p in args.input.split("x")) if args.input else None
    print(json.dumps(layer_flops(args.model, shape, args.classes), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
