"""How close vdnn's evaluation samples of a JPEG folder are to torchvision's: Resize(size) +
CenterCrop(size) + ToTensor + Normalize(ImageNet) of the first 8 images of FOLDER/val, in levels of
255, at 224 (no DCT scaling on photos of 300-640 pixels) and at 64 (decoded at 1/2 or 1/4 scale).
Not part of CI; tests/python/test_image_folder.py checks PNG files within 1 level.

  PYTHONPATH=build/python build/pyenv/bin/python bench/image_fidelity.py /tmp/vdnn-bench-images
"""
import sys

import numpy as np
import torch
import torchvision
from torchvision import transforms as T

import vdnn

torch.set_num_threads(2)
root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/vdnn-bench-images"
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
for size in (224, 64):
    model = vdnn.load_model("resnet18", input=(3, size, size))
    x, y = next(iter(vdnn.batches(vdnn.load_data(model, root, "test"), 8, shuffle=False)))
    reference = torchvision.datasets.ImageFolder(
        root + "/val", transform=T.Compose([T.Resize(size), T.CenterCrop(size), T.ToTensor(), T.Normalize(mean, std)]))
    want = np.stack([reference[i][0].numpy() for i in range(8)])
    assert list(y) == [reference[i][1] for i in range(8)]
    levels = np.abs(x - want) * np.array(std).reshape(1, 3, 1, 1) * 255
    print(f"{size}x{size}: at most {levels.max():.2f} levels of 255, mean {levels.mean():.3f}")
