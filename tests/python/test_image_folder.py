"""An image folder through the Python API: vdnn.load_data reads DIR/train and DIR/val as torchvision's
ImageFolder does (classes sorted by name), vdnn.batches decodes it batch by batch, and evaluation's
Resize + CenterCrop + Normalize gives torchvision's samples within one level of 255."""
import os

import numpy as np
import pytest
from PIL import Image
from torchvision import datasets, transforms  # Debian's python3-torchvision (scripts/setup.sh)

import vdnn


def make_folder(root, per_class=5):
    rng = np.random.default_rng(4)
    for split in ("train", "val"):
        for c, name in enumerate(["tulip", "daisy", "rose"]):
            os.makedirs(os.path.join(root, split, name))
            for i in range(per_class):
                w, h = 40 + 7 * i, 30 + 5 * c  # landscape and portrait, odd offsets
                if i % 2:
                    w, h = h, w
                yy, xx = np.mgrid[0:h, 0:w]
                img = np.stack([(xx * 5 + 40 * c) % 256, (yy * 7) % 256, ((xx + yy) * 3) % 256], axis=2)
                img = (img + rng.integers(0, 20, img.shape)).clip(0, 255).astype(np.uint8)
                Image.fromarray(img).save(os.path.join(root, split, name, f"{i}.png"))


def test_an_image_folder_decodes_as_torchvision_does(tmp_path, monkeypatch):
    monkeypatch.setenv("VDNN_CACHE_DIR", str(tmp_path / "cache"))
    root = str(tmp_path / "flowers")
    make_folder(root)
    model = vdnn.load_model("fmnist_cnn", input=(3, 24, 24))
    val = vdnn.load_data(model, root, "test")
    assert len(val) == 15 and val.classes == 3
    with pytest.raises(vdnn.Error, match="is an image folder, read batch by batch"):
        val.images
    x, y = next(iter(vdnn.batches(val, 15, shuffle=False)))
    reference = datasets.ImageFolder(os.path.join(root, "val"), transform=transforms.Compose([
        transforms.Resize(24), transforms.CenterCrop(24), transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]))
    assert reference.classes == ["daisy", "rose", "tulip"]
    want = np.stack([reference[i][0].numpy() for i in range(15)])
    assert list(y) == [reference[i][1] for i in range(15)]
    levels = np.abs(x - want) * np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1) * 255
    assert levels.max() <= 1.01, f"{levels.max():.2f} levels of 255"
    train = vdnn.load_data(model, root, "train")
    batches = [b for b in vdnn.batches(train, 4, seed=2, augment="imagenet")]
    assert len(batches) == 3 and all(b[0].shape == (4, 3, 24, 24) for b in batches)
    again = [b for b in vdnn.batches(train, 4, seed=2, augment="imagenet")]
    assert all((a[0] == b[0]).all() for a, b in zip(batches, again))
