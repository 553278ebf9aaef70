#!/usr/bin/env python3
"""Writes a synthetic ImageNet-like JPEG folder for the image-loader benchmark
(bench/image_loader.sh): OUT/train/class_NN/<i>.jpg and OUT/val/class_NN/<i>.jpg, the layout of
torchvision's ImageFolder and of `vdnn load --data OUT`.

The images are shaped like ImageNet photos (a long side of 400..640 pixels, mostly 4:3 and 3:2, a
quarter of them portrait: 500x375, 375x500, ... never under 300 on the short side) and their
content is smooth but detailed, so that JPEG coding and decoding cost what they cost on photos: a
smooth background (coarse random fields, mostly luminance, and a lighting gradient), hard-edged
shapes on it, and texture over everything (finer octaves of bicubically upscaled random fields,
a 1/f-like spectrum, a few sinusoids and mild noise). Everything follows from --seed (each image
from (seed, split, class, index)), so a folder is the same wherever it is made. With the defaults
a q90 image is 50-100 KB (ImageNet's average is about 110 KB) and 1,200 take about 20 s.

Skips the work when OUT already holds a folder made with the same arguments (OUT/.image_folder.json
and the file counts). Refuses a non-empty OUT that this script did not make. Needs numpy and PIL.

  /usr/bin/python3 bench/make_image_folder.py /tmp/vdnn-bench-images     # 10 x (100 + 20) images
  /usr/bin/python3 bench/make_image_folder.py /tmp/small --classes 3 --per-class 10 --val-per-class 2
"""
import argparse
import json
import os
import shutil
import sys
import time

import numpy as np
from PIL import Image, ImageDraw

MARKER = ".image_folder.json"
# (aspect ratio long/short, weight): 500x375 (4:3) dominates ImageNet, then 3:2, then squares.
ASPECTS = ((4 / 3, 0.6), (3 / 2, 0.25), (1.0, 0.15))
NOISE_SIGMA = 6.0  # per-pixel noise, in 8-bit levels


def class_name(c: int) -> str:
    return f"class_{c:02d}"


def image_size(rng: np.random.Generator):
    """(width, height) like an ImageNet photo."""
    aspect = rng.choice([a for a, _ in ASPECTS], p=[w for _, w in ASPECTS])
    long_side = int(rng.integers(400, 641))
    short_side = max(300, int(round(long_side / aspect)))
    return (long_side, short_side) if rng.random() < 0.75 else (short_side, long_side)


_NOISE = None


def noise_pool() -> np.ndarray:
    """Unit Gaussian noise, drawn once (fixed seed): each image adds a slice of it at an offset
    drawn from its own generator, much faster than drawing fresh noise for every pixel."""
    global _NOISE
    if _NOISE is None:
        _NOISE = np.random.default_rng(0).normal(0, 1, size=4 << 20).astype(np.float32)
    return _NOISE


def field(rng: np.random.Generator, cells: int, w: int, h: int, channels: int) -> np.ndarray:
    """A random field of about `cells` cells along the long side, bicubically upscaled to w x h,
    as float32 in [-1, 1], H x W x channels (1: luminance, 3: colour)."""
    gw = max(2, int(round(cells * w / max(w, h))))
    gh = max(2, int(round(cells * h / max(w, h))))
    shape = (gh, gw, 3) if channels == 3 else (gh, gw)
    small = Image.fromarray(rng.integers(0, 256, size=shape, dtype=np.uint8), "RGB" if channels == 3 else "L")
    big = np.asarray(small if (gw, gh) == (w, h) else small.resize((w, h), Image.BICUBIC), dtype=np.float32)
    big = big * (2 / 255) - 1
    return big if channels == 3 else big[:, :, None]


def draw_shapes(rng: np.random.Generator, image: Image.Image, count: int) -> None:
    """Flat ellipses and polygons: hard edges, like objects in a photo."""
    w, h = image.size
    draw = ImageDraw.Draw(image)
    for _ in range(count):
        colour = tuple(int(v) for v in rng.integers(20, 236, size=3))
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        r = rng.uniform(0.05, 0.35) * max(w, h)
        if rng.random() < 0.5:
            draw.ellipse([cx - r, cy - r * rng.uniform(0.4, 1), cx + r, cy + r * rng.uniform(0.4, 1)],
                         fill=colour)
        else:
            k = int(rng.integers(3, 7))
            angles = np.sort(rng.uniform(0, 2 * np.pi, size=k))
            radii = r * rng.uniform(0.5, 1, size=k)
            draw.polygon([(float(cx + a * np.cos(t)), float(cy + a * np.sin(t)))
                          for a, t in zip(radii, angles)], fill=colour)


def make_image(rng: np.random.Generator, label: int) -> Image.Image:
    """One photo-like image: a smooth background (two coarse octaves of mostly-luminance fields,
    a lighting gradient), hard-edged shapes on it, then texture over everything (three finer
    octaves and a few sinusoids) and mild noise. The octaves are summed at half resolution and
    upscaled once (bicubic), which keeps 2-pixel detail and makes an image cost ~15 ms."""
    w, h = image_size(rng)
    hw, hh = (w + 1) // 2, (h + 1) // 2
    chroma = 0.35  # colour fields' weight against the luminance ones: photos are mostly luminance
    # A class tint, so that the classes differ a little on average (not needed by the loaders).
    tint = np.array([(label * 37) % 256, (label * 91 + 60) % 256, (label * 53 + 120) % 256],
                    dtype=np.float32)
    base = np.empty((hh, hw, 3), dtype=np.float32)
    base[:] = 0.3 * tint + 0.7 * rng.uniform(60, 190, size=3).astype(np.float32)
    for cells, amplitude in ((3, 60.0), (10, 40.0)):
        colour = rng.uniform(0.8, 1.2, size=3).astype(np.float32)
        base += amplitude * rng.uniform(0.6, 1.2) * (
            field(rng, cells, hw, hh, 1) * colour + chroma * field(rng, cells, hw, hh, 3))
    ys = np.linspace(-1, 1, hh, dtype=np.float32)[:, None]
    xs = np.linspace(-1, 1, hw, dtype=np.float32)[None, :]
    gx, gy = rng.uniform(-30, 30, size=2)
    base += (gx * xs + gy * ys)[:, :, None]
    image = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8), "RGB").resize((w, h), Image.BICUBIC)
    draw_shapes(rng, image, int(rng.integers(4, 12)))

    texture = np.full((hh, hw, 3), 128, dtype=np.float32)
    for cells, amplitude in ((30, 26.0), (100, 26.0), (300, 26.0)):
        texture += amplitude * (field(rng, cells, hw, hh, 1) + chroma * field(rng, cells, hw, hh, 3))
    for _ in range(int(rng.integers(1, 4))):
        fx, fy = rng.uniform(-20, 20, size=2)
        phase = rng.uniform(0, 2 * np.pi)
        colour = rng.uniform(-12, 12, size=3).astype(np.float32)
        texture += np.sin(np.pi * (fx * xs + fy * ys) + phase)[:, :, None] * colour
    texture = Image.fromarray(np.clip(texture, 0, 255).astype(np.uint8), "RGB").resize((w, h), Image.BICUBIC)

    pixels = np.asarray(image, dtype=np.float32) + np.asarray(texture, dtype=np.float32)
    pool = noise_pool()
    offset = int(rng.integers(0, pool.size - pixels.size))
    pixels += NOISE_SIGMA * pool[offset:offset + pixels.size].reshape(pixels.shape) - 128
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")


def counts_of(out: str):
    """{split: {class: number of .jpg}} of an existing folder."""
    result = {}
    for split in ("train", "val"):
        d = os.path.join(out, split)
        if not os.path.isdir(d):
            continue
        result[split] = {c: sum(1 for f in os.listdir(os.path.join(d, c)) if f.endswith(".jpg"))
                         for c in sorted(os.listdir(d)) if os.path.isdir(os.path.join(d, c))}
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", metavar="OUT")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=100, help="training images per class")
    ap.add_argument("--val-per-class", type=int, default=20, help="validation images per class")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality (PIL)")
    args = ap.parse_args(argv)
    if args.classes < 1 or args.per_class < 1 or args.val_per_class < 0:
        ap.error("--classes and --per-class must be >= 1, --val-per-class >= 0")
    if not 1 <= args.quality <= 100:
        ap.error("--quality must be in 1..100")

    params = {"classes": args.classes, "per_class": args.per_class,
              "val_per_class": args.val_per_class, "seed": args.seed, "quality": args.quality}
    splits = {"train": args.per_class, "val": args.val_per_class}
    want = {s: {class_name(c): n for c in range(args.classes)} for s, n in splits.items() if n > 0}
    marker = os.path.join(args.out, MARKER)
    if os.path.isdir(args.out) and os.listdir(args.out):
        made = None
        if os.path.isfile(marker):
            with open(marker) as f:
                made = json.load(f)
        if made is None:
            print(f"make_image_folder: {args.out} is not empty and was not made by this script; "
                  "give another OUT", file=sys.stderr)
            return 2
        if made == params and counts_of(args.out) == want:
            total = sum(sum(v.values()) for v in want.values())
            print(f"make_image_folder: {args.out} already holds these {total} images "
                  f"({json.dumps(params)}): nothing to do")
            return 0
        # Made by this script with other arguments (or interrupted): make it again.
        for split in ("train", "val"):
            shutil.rmtree(os.path.join(args.out, split), ignore_errors=True)
        os.remove(marker)

    start = time.perf_counter()
    total_bytes = 0
    for split_index, (split, per_class) in enumerate(splits.items()):
        if per_class == 0:
            continue
        for c in range(args.classes):
            d = os.path.join(args.out, split, class_name(c))
            os.makedirs(d, exist_ok=True)
            for i in range(per_class):
                rng = np.random.default_rng([args.seed, split_index, c, i])
                path = os.path.join(d, f"{i}.jpg")
                make_image(rng, c).save(path, "JPEG", quality=args.quality)
                total_bytes += os.path.getsize(path)
    with open(marker, "w") as f:  # last: a folder without it was interrupted
        json.dump(params, f)
        f.write("\n")
    seconds = time.perf_counter() - start
    n = args.classes * (args.per_class + args.val_per_class)
    print(f"make_image_folder: wrote {n} JPEGs to {args.out} "
          f"(train: {args.classes} classes x {args.per_class}, val: {args.classes} x "
          f"{args.val_per_class}; seed {args.seed}, quality {args.quality}): "
          f"{total_bytes / 2**20:.1f} MiB, {total_bytes / max(n, 1) / 1024:.0f} KiB per image, "
          f"{seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
