#!/usr/bin/env python3
"""PyTorch (CPU) training throughput for the networks of vdnn's models/fmnist_cnn.json,
models/vgg_cifar.json, models/resnet18.json and models/resnet50.json (bench/pytorch_models.py), on
random input tensors.

Times N training iterations (forward, cross-entropy loss, backward, SGD step) after W warm-up
iterations and prints one JSON line:

  {"framework": "pytorch", "torch_version": ..., "model": ..., "batch": ...,
   "images_per_second": ..., ...}

Works with PyTorch 1.13 (Debian's python3-torch) and 2.x.

  bench/.venv/bin/python bench/pytorch_train.py --model resnet18 --input 3x64x64 --batch 32
  bench/.venv/bin/python bench/pytorch_train.py --model vgg_cifar --autocast bf16   # mixed precision
"""
import argparse
import contextlib
import json
import platform
import sys
import time

import torch
import torch.nn as nn

from pytorch_models import MODELS, build, parse_input, sgd_like_vdnn

# model -> default batch, default timed iterations, default warm-up
DEFAULTS = {
    "fmnist_cnn": (128, 60, 10),
    "vgg_cifar": (64, 30, 5),
    "resnet18": (32, 20, 5),
    "resnet50": (16, 20, 5),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="fmnist_cnn")
    ap.add_argument("--input", help="input shape CxHxW (default: the model's)")
    ap.add_argument("--classes", type=int, help="class count (default: the model's)")
    ap.add_argument("--batch", type=int, help="batch size (default: 128 / 64 / 32)")
    ap.add_argument("--iterations", type=int, help="timed iterations (default: 60 / 30 / 20)")
    ap.add_argument("--warmup", type=int, help="untimed warm-up iterations (default: 10 / 5 / 5)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--channels-last", action="store_true", help="NHWC memory format")
    ap.add_argument("--autocast", choices=["bf16"],
                    help='forward and loss under torch.autocast("cpu", torch.bfloat16) (PyTorch 2.x)')
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    batch, iterations, warmup = DEFAULTS[args.model]
    shape = parse_input(args.input) or MODELS[args.model][0]
    classes = args.classes or MODELS[args.model][1]
    batch = args.batch if args.batch is not None else batch
    iterations = args.iterations if args.iterations is not None else iterations
    warmup = args.warmup if args.warmup is not None else warmup
    if batch < 1 or iterations < 1 or warmup < 0 or args.threads < 1:
        ap.error("--batch, --iterations and --threads must be >= 1, --warmup >= 0")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    model = build(args.model, shape, classes)
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    opt = sgd_like_vdnn(model, args.lr, args.momentum, args.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, *shape).contiguous(memory_format=fmt)
    y = torch.randint(0, classes, (batch,))

    def precision():
        if args.autocast == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with precision():
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # vdnn reads its loss every step too

    for _ in range(warmup):
        step()
    start = time.perf_counter()
    for _ in range(iterations):
        loss = step()
    seconds = time.perf_counter() - start

    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "batch": batch,
        "input": list(shape),
        "classes": classes,
        "images_per_second": batch * iterations / seconds,
        "iterations": iterations,
        "warmup": warmup,
        "seconds": seconds,
        "threads": torch.get_num_threads(),
        "channels_last": args.channels_last,
        "autocast": args.autocast or "none",
        "mkldnn": torch.backends.mkldnn.is_available(),
        "final_loss": loss,
        "python": platform.python_version(),
        "executable": sys.executable,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
