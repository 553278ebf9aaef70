#!/usr/bin/env python3
"""Bytes PyTorch keeps for the backward pass of one training step (bench/pytorch_models.py's twin
of a vdnn model), counted with torch.autograd.graph.saved_tensors_hooks: every tensor autograd
saves during forward + loss passes through the pack hook; each distinct storage (by its data
pointer) is counted once, at its full size. Storages that belong to parameters are reported apart:
vdnn counts weights in their own memory class, not as feature maps.

Prints one JSON line: {"saved_bytes": ..., "saved_bytes_without_parameters": ...,
"parameter_bytes_saved": ..., "tensors": ..., "storages": ..., "by_dtype": {...}, ...}

  bench/.venv/bin/python bench/pytorch_saved_bytes.py --model resnet18 --input 3x64x64 --batch 32
Works with PyTorch 1.13 and 2.x.
"""
import argparse
import json
import sys

import torch
import torch.nn as nn

from pytorch_models import MODELS, build, parse_input


def storage_of(t: torch.Tensor):
    """(data pointer, bytes) of the whole storage behind t."""
    if hasattr(t, "untyped_storage"):  # 2.x
        s = t.untyped_storage()
        return s.data_ptr(), s.nbytes()
    s = t.storage()  # 1.13: a TypedStorage
    return s.data_ptr(), s.size() * s.element_size()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), required=True)
    ap.add_argument("--input", help="input shape CxHxW (default: the model's)")
    ap.add_argument("--classes", type=int, help="class count (default: the model's)")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    shape = parse_input(args.input) or MODELS[args.model][0]
    classes = args.classes or MODELS[args.model][1]
    model = build(args.model, shape, classes)
    model.train()
    params = {storage_of(p)[0] for p in model.parameters()}
    x = torch.randn(args.batch, *shape)
    y = torch.randint(0, classes, (args.batch,))

    storages, by_dtype = {}, {}
    tensors = 0

    def pack(t):
        nonlocal tensors
        tensors += 1
        if t.layout == torch.strided and t.device.type == "cpu":
            ptr, nbytes = storage_of(t)
            if ptr not in storages:
                storages[ptr] = nbytes
                key = str(t.dtype).replace("torch.", "")
                by_dtype[key] = by_dtype.get(key, 0) + (0 if ptr in params else nbytes)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()  # the saved tensors were usable: the count is of a real step

    total = sum(storages.values())
    param_bytes = sum(n for p, n in storages.items() if p in params)
    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "input": list(shape),
        "classes": classes,
        "batch": args.batch,
        "saved_bytes": total,
        "saved_bytes_without_parameters": total - param_bytes,
        "parameter_bytes_saved": param_bytes,
        "tensors": tensors,
        "storages": len(storages),
        "by_dtype_without_parameters": by_dtype,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
