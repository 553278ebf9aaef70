#!/usr/bin/env python3
"""PyTorch's side of the image-loader benchmark (bench/image_loader.sh): torchvision's ImageFolder
on DIR/train with the usual ImageNet training transforms (RandomResizedCrop(size),
RandomHorizontalFlip, ToTensor, Normalize with ImageNet's mean and std), read through a
DataLoader(batch, shuffle=True, num_workers=threads, drop_last=True, persistent_workers=False),
the main process on one thread. Nothing is trained: it only draws batches.

--rounds-warmup passes (each one epoch, or --batches batches) run first, untimed: they warm the
page cache and the lazy imports. Then the timed pass: "images_per_second" is timed from the arrival
of its first batch (the workers' start-up and their first batch left out) and counts the images of
the batches after that one. The workers start together, so with T of them the first T batches
arrive nearly together and this reading overstates a short pass (by about one batch in T-1 over
the pass: ~7% for an epoch of 15 batches and 2 workers). So the line also holds
"steady_images_per_second", timed from the arrival of batch T (the images after it), and
"pass_images_per_second", every image of the pass over the time from creating the iterator
(worker start-up included).

Prints one JSON line last:

  {"loader": "torch", "images": N, "seconds": S, "images_per_second": X, "threads": T, ...}

Works with PyTorch 1.13 / torchvision 0.14 (Debian's) and later.

  /usr/bin/python3 bench/torch_image_loader.py /tmp/vdnn-bench-images --threads 2 --batch 64
"""
import argparse
import json
import os
import sys
import time

import torch
import torchvision
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def make_loader(root: str, size: int, batch: int, threads: int, seed: int) -> DataLoader:
    transform = transforms.Compose([
        transforms.RandomResizedCrop(size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])
    dataset = datasets.ImageFolder(root, transform=transform)
    generator = torch.Generator()
    generator.manual_seed(seed)
    return DataLoader(dataset, batch_size=batch, shuffle=True, num_workers=threads, drop_last=True,
                      persistent_workers=False, generator=generator)


def one_pass(loader: DataLoader, batches: int):
    """Draws `batches` batches from a fresh iterator (fresh workers). Returns the seconds from
    creating the iterator to the arrival of each batch, and each batch's number of images."""
    start = time.perf_counter()
    arrivals, sizes = [], []
    iterator = iter(loader)
    for _ in range(batches):
        x, y = next(iterator)
        if x.dim() != 4 or x.shape[0] != y.shape[0]:
            raise RuntimeError(f"unexpected batch of shape {tuple(x.shape)} / {tuple(y.shape)}")
        arrivals.append(time.perf_counter() - start)
        sizes.append(int(x.shape[0]))
    del iterator  # shuts the workers down before the next pass
    return arrivals, sizes


def rate_after(arrivals, sizes, k: int):
    """(images, seconds) of the batches after the k-th (1-based), timed from its arrival."""
    return sum(sizes[k:]), arrivals[-1] - arrivals[k - 1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", metavar="DIR", help="a folder holding train/<class>/<image>")
    ap.add_argument("--threads", type=int, default=2, help="DataLoader workers (0: the main process)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224, help="RandomResizedCrop's output side")
    ap.add_argument("--batches", type=int, default=0, help="batches timed (0: one epoch)")
    ap.add_argument("--rounds-warmup", type=int, default=1, help="untimed passes before the timed one")
    ap.add_argument("--seed", type=int, default=0, help="shuffle and augmentation seed")
    args = ap.parse_args(argv)
    if args.threads < 0 or args.batch < 1 or args.size < 1 or args.batches < 0 or args.rounds_warmup < 0:
        ap.error("--threads, --batches and --rounds-warmup must be >= 0, --batch and --size >= 1")

    torch.set_num_threads(1)  # the workers set theirs to 1 themselves
    torch.manual_seed(args.seed)
    root = os.path.join(args.dir, "train")
    loader = make_loader(root, args.size, args.batch, args.threads, args.seed)
    epoch = len(loader)
    if epoch < 2:
        print(f"torch_image_loader: {root} holds {len(loader.dataset)} images: fewer than two "
              f"batches of {args.batch}, nothing to time", file=sys.stderr)
        return 2
    batches = args.batches or epoch
    if batches > epoch:
        print(f"torch_image_loader: --batches {batches} is more than an epoch; timing {epoch}",
              file=sys.stderr)
        batches = epoch
    if batches < 2:
        ap.error("--batches must be >= 2: the first batch is not timed")

    for _ in range(args.rounds_warmup):
        one_pass(loader, batches)
    arrivals, sizes = one_pass(loader, batches)
    images, seconds = rate_after(arrivals, sizes, 1)
    # The workers start together, so the first `threads` batches arrive nearly together: timed from
    # the last of them, the rate is the steady one (needs more than `threads` batches).
    k = max(args.threads, 1)
    steady = None
    if batches > k:
        steady_images, steady_seconds = rate_after(arrivals, sizes, k)
        steady = round(steady_images / steady_seconds, 2)
    print(json.dumps({
        "loader": "torch", "images": images, "seconds": round(seconds, 4),
        "images_per_second": round(images / seconds, 2), "threads": args.threads,
        "batch": args.batch, "size": args.size, "batches": batches,
        "first_batch_seconds": round(arrivals[0], 4),
        "pass_images": sum(sizes), "pass_seconds": round(arrivals[-1], 4),
        "pass_images_per_second": round(sum(sizes) / arrivals[-1], 2),
        "steady_images_per_second": steady,
        "torch_version": torch.__version__, "torchvision_version": torchvision.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
