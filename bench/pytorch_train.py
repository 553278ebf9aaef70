#!/usr/bin/env python3
"""PyTorch (CPU) training throughput for the networks of vdnn's models/fmnist_cnn.json and
models/vgg_cifar.json, on random input tensors.

Times N training iterations (forward, cross-entropy loss, backward, SGD step) after W warm-up
iterations and prints one JSON line:

  {"framework": "pytorch", "torch_version": ..., "model": ..., "batch": ...,
   "images_per_second": ..., ...}

Works with PyTorch 1.13 (Debian's python3-torch) and 2.x.
"""
import argparse
import json
import platform
import sys
import time

import torch
import torch.nn as nn

# model -> (input C, H, W), default batch, default timed iterations, default warm-up
MODELS = {
    "fmnist_cnn": ((1, 28, 28), 128, 60, 10),
    "vgg_cifar": ((3, 32, 32), 64, 30, 5),
}
CLASSES = 10


def fmnist_cnn() -> nn.Module:
    # models/fmnist_cnn.json: conv 3x3 pad 1 without bias, BN, ReLU, 2x2 max-pool (x2),
    # fc 256, ReLU, dropout 0.3, fc 10 (softmax cross-entropy is the loss).
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, 256),
        nn.ReLU(inplace=True),
        nn.Dropout(0.3),
        nn.Linear(256, CLASSES),
    )


def vgg_cifar() -> nn.Module:
    # models/vgg_cifar.json: conv 64,64,pool,128,128,pool,256,256,pool (3x3 pad 1, bias, ReLU),
    # fc 512, ReLU, fc 10.
    layers = []
    c_in = 3
    for stage in (64, 128, 256):
        for _ in range(2):
            layers += [nn.Conv2d(c_in, stage, 3, padding=1, bias=True), nn.ReLU(inplace=True)]
            c_in = stage
        layers.append(nn.MaxPool2d(2))
    layers += [
        nn.Flatten(),
        nn.Linear(256 * 4 * 4, 512),
        nn.ReLU(inplace=True),
        nn.Linear(512, CLASSES),
    ]
    return nn.Sequential(*layers)


BUILDERS = {"fmnist_cnn": fmnist_cnn, "vgg_cifar": vgg_cifar}


def param_groups(model: nn.Module, weight_decay: float):
    """Weight decay on conv/linear weights only (as vdnn: biases and BN scale/shift undecayed)."""
    decay, no_decay = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if isinstance(module, (nn.Conv2d, nn.Linear)) and name == "weight":
                decay.append(p)
            else:
                no_decay.append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=sorted(MODELS), default="fmnist_cnn")
    ap.add_argument("--batch", type=int, help="batch size (default: 128 fmnist_cnn, 64 vgg_cifar)")
    ap.add_argument("--iterations", type=int, help="timed iterations (default: 60 / 30)")
    ap.add_argument("--warmup", type=int, help="untimed warm-up iterations (default: 10 / 5)")
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads (default 2)")
    ap.add_argument("--channels-last", action="store_true", help="NHWC memory format")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    shape, batch, iterations, warmup = MODELS[args.model]
    batch = args.batch if args.batch is not None else batch
    iterations = args.iterations if args.iterations is not None else iterations
    warmup = args.warmup if args.warmup is not None else warmup
    if batch < 1 or iterations < 1 or warmup < 0 or args.threads < 1:
        ap.error("--batch, --iterations and --threads must be >= 1, --warmup >= 0")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    model = BUILDERS[args.model]()
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    opt = torch.optim.SGD(param_groups(model, args.weight_decay), lr=args.lr,
                          momentum=args.momentum)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, *shape).contiguous(memory_format=fmt)
    y = torch.randint(0, CLASSES, (batch,))

    def step() -> float:
        opt.zero_grad(set_to_none=True)
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
        "images_per_second": batch * iterations / seconds,
        "iterations": iterations,
        "warmup": warmup,
        "seconds": seconds,
        "threads": torch.get_num_threads(),
        "channels_last": args.channels_last,
        "mkldnn": torch.backends.mkldnn.is_available(),
        "final_loss": loss,
        "python": platform.python_version(),
        "executable": sys.executable,
    }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
