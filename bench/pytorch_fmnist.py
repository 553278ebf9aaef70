#!/usr/bin/env python3
"""Trains PyTorch's twin of vdnn's fmnist_cnn on Fashion-MNIST with vdnn's recipe and prints one
line per epoch in `vdnn train`'s format ("epoch   3 ... test acc 0.9012 ..."), so that
bench/watch_accuracy.py reads both the same way.

The recipe is vdnn train's defaults: batch 128, the last partial batch dropped, reshuffled every
epoch; SGD lr 0.05 with a cosine schedule over all steps (lr at step s = 0.05 * (1 + cos(pi s / S)) / 2,
stepped every batch), momentum 0.9, weight decay 5e-4 on conv/FC weights; vdnn's initialization;
pixels normalized as (p / 255 - 0.2860) / 0.3530. Test accuracy over the 10,000 test images after
every epoch (eval mode). Works with PyTorch 1.13 and 2.x.

  bench/.venv/bin/python bench/pytorch_fmnist.py --epochs 10 [--data /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn

from pytorch_models import build, sgd_like_vdnn

MEAN, STD = 0.2860, 0.3530


def read_idx(path: str) -> torch.Tensor:
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return torch.frombuffer(bytearray(data[4 + 4 * dims:]), dtype=torch.uint8).reshape(shape)


def load(folder: str, split: str):
    images = read_idx(os.path.join(folder, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte.gz")).long()
    x = (images.float().div_(255.0).sub_(MEAN).div_(STD)).unsqueeze(1).contiguous()
    return x, labels


def evaluate(model, x, y, batch):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            right += (model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item()
    model.train()
    return right / len(x)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_x, train_y = load(args.data, "train")
    test_x, test_y = load(args.data, "t10k")
    print(f"pytorch {torch.__version__}: fmnist_cnn, {len(train_x)} train, {len(test_x)} test; "
          f"batch {args.batch}, {args.threads} threads", flush=True)

    model = build("fmnist_cnn")
    model.train()
    opt = sgd_like_vdnn(model, args.lr)
    loss_fn = nn.CrossEntropyLoss()
    per_epoch = len(train_x) // args.batch
    total = per_epoch * args.epochs
    step = 0
    for epoch in range(1, args.epochs + 1):
        start = time.perf_counter()
        order = torch.randperm(len(train_x))
        loss_sum = right = 0.0
        for b in range(per_epoch):
            idx = order[b * args.batch:(b + 1) * args.batch]
            x, y = train_x[idx], train_y[idx]
            lr = args.lr * 0.5 * (1.0 + math.cos(math.pi * min(1.0, step / total)))
            for group in opt.param_groups:
                group["lr"] = lr
            opt.zero_grad(set_to_none=True)
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            loss_sum += loss.item()
            right += (out.argmax(1) == y).sum().item()
            step += 1
        seconds = time.perf_counter() - start
        acc = evaluate(model, test_x, test_y, args.batch)
        print(f"epoch {epoch:3d}  lr {lr:.4f}  loss {loss_sum / per_epoch:.4f}  train acc "
              f"{right / (per_epoch * args.batch):.4f}  test acc {acc:.4f}  "
              f"{per_epoch * args.batch / seconds:.0f} img/s  {seconds:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
