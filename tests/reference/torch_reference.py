#!/usr/bin/env python3
"""Layers as PyTorch defines them, in float64: the independent definition that
tests/reference/test_torch_reference.cc compares vdnn's CPU kernels against.

usage: torch_reference.py IN.json OUT.json

IN.json is {"cases": [...]}; each case carries a vdnn layer object ("layer": the fields a model
file would hold, read here with vdnn's documented defaults), the input "shape" [N, C, H, W] and
plain NCHW "x" (or [N, T, C] for the sequence layers; attention: [N, T, 3C], q|k|v packed), the parameters in vdnn's plain layouts ("params": weights then bias, or gamma then
beta), "dy" (absent for the loss, whose own gradient is taken) and "labels" for the loss.
OUT.json is {"results": [{"y", "dx", "dparams"}]} in the same order, all flattened row-major.
Needs python3-torch (Debian; scripts/setup.sh installs it).
"""
import json
import math
import sys

import torch
import torch.nn.functional as F


def pair(value, fallback):
    if value is None:
        return fallback
    return tuple(value) if isinstance(value, list) else (value, value)


def tensor(values, shape):
    return torch.tensor(values, dtype=torch.float64).reshape(shape).requires_grad_(True)


def run(case):
    layer, kind = case["layer"], case["layer"]["type"]
    x = tensor(case["x"], case["shape"])
    params = []
    if kind in ("avg_pool", "max_pool"):
        kernel = pair(layer.get("kernel"), None)
        stride = pair(layer.get("stride"), kernel)
        pad = pair(layer.get("pad"), (0, 0))
        ceil = layer.get("ceil", False)
        if kind == "max_pool":
            y = F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil)
        else:
            include = not layer.get("exclude_padding", True)
            y = F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil, count_include_pad=include)
    elif kind == "lrn":
        y = F.local_response_norm(x, layer.get("size", 5), alpha=layer.get("alpha", 1e-4),
                                  beta=layer.get("beta", 0.75), k=layer.get("k", 1.0))
    elif kind == "conv":
        groups, channels = layer.get("groups", 1), layer["channels"]
        kh, kw = pair(layer["kernel"], None)
        w = tensor(case["params"][0], [channels, case["shape"][1] // groups, kh, kw])
        params = [w]
        b = None
        if layer.get("bias", True):
            b = tensor(case["params"][1], [channels])
            params.append(b)
        pad = pair(layer.get("pad"), (0, 0))
        pad_end = pair(layer.get("pad_end"), pad)
        # vdnn's pad is top/left and pad_end bottom/right; F.pad takes (left, right, top, bottom).
        padded = F.pad(x, (pad[1], pad_end[1], pad[0], pad_end[0]))
        y = F.conv2d(padded, w, b, stride=pair(layer.get("stride"), (1, 1)),
                     dilation=pair(layer.get("dilation"), (1, 1)), groups=groups)
    elif kind == "relu6":
        y = F.relu6(x)  # hardtanh(0, 6): the gradient passes only where 0 < x < 6
    elif kind == "batch_norm":
        c = case["shape"][1]
        gamma, beta = tensor(case["params"][0], [c]), tensor(case["params"][1], [c])
        params = [gamma, beta]
        y = F.batch_norm(x, None, None, gamma, beta, training=True, eps=layer.get("eps", 1e-5))
    elif kind == "fc":
        flat = x.flatten(1)
        w = tensor(case["params"][0], [layer["units"], flat.shape[1]])
        b = tensor(case["params"][1], [layer["units"]])
        params = [w, b]
        y = F.linear(flat, w, b)
    elif kind == "attention":
        # Debian's torch 1.13 has no F.scaled_dot_product_attention (it arrived in 2.0), so this is
        # its definition spelled out: softmax(q k^T / sqrt(D) + mask) v per head. The comparison
        # with torch 2.x's own function belongs to the pip-torch parity suite (tests/torch).
        n, t, c = case["shape"][0], case["shape"][1], case["shape"][2] // 3
        heads = layer["heads"]
        d = c // heads
        q, k, v = (z.reshape(n, t, heads, d).transpose(1, 2) for z in x.split(c, dim=2))
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        if layer.get("causal", True):
            s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        y = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(n, t, c)
    elif kind == "layer_norm":
        c = case["shape"][-1]
        gamma = beta = None
        if layer.get("affine", True):
            gamma, beta = tensor(case["params"][0], [c]), tensor(case["params"][1], [c])
            params = [gamma, beta]
        y = F.layer_norm(x, (c,), gamma, beta, eps=layer.get("eps", 1e-5))
    elif kind == "gelu":
        y = F.gelu(x, approximate=layer.get("approximate", "none"))
    elif kind == "linear":
        w = tensor(case["params"][0], [layer["units"], case["shape"][-1]])
        b = tensor(case["params"][1], [layer["units"]])
        params = [w, b]
        y = F.linear(x, w, b)  # on the last axis: every token alone
    elif kind == "token_cross_entropy":
        v = case["shape"][-1]
        y = F.cross_entropy(x.reshape(-1, v), torch.tensor(case["labels"]),
                            ignore_index=layer.get("ignore_index", -100))
    elif kind == "softmax_cross_entropy":
        y = F.cross_entropy(x.flatten(1), torch.tensor(case["labels"]), reduction="mean")
    else:
        raise SystemExit(f"torch_reference.py: no definition for layer type '{kind}'")
    if "dy" in case:
        y.backward(torch.tensor(case["dy"], dtype=torch.float64).reshape(y.shape))
    else:
        y.backward()
    return {"y": y.detach().flatten().tolist(), "dx": x.grad.flatten().tolist(),
            "dparams": [p.grad.flatten().tolist() for p in params]}


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: torch_reference.py IN.json OUT.json")
    with open(sys.argv[1]) as f:
        cases = json.load(f)["cases"]
    results = [run(case) for case in cases]
    with open(sys.argv[2], "w") as f:
        json.dump({"results": results, "torch": torch.__version__}, f)


if __name__ == "__main__":
    main()
