"""torchvision's AlexNet, VGG-16, ResNet-18, ResNet-50 and GoogLeNet (no auxiliary heads), exported
by scripts/export_torchvision.py in training mode, import into vdnn with PyTorch's parameter counts,
plan at 224x224, and train under `none` and `all` to identical weights."""
import json

import pytest

from conftest import vdnn

MODELS = ["alexnet", "vgg16", "resnet18", "resnet50", "googlenet"]


@pytest.mark.parametrize("name", MODELS)
def test_imports_with_pytorchs_parameter_count(torchvision_exports, name):
    row = torchvision_exports[name]
    lines = vdnn("models", "--model", row["file"]).splitlines()
    params = int(lines[1].split()[2])  # model, layers, params, ...
    assert params == row["parameters"], f"{name}: vdnn counts {params}, PyTorch {row['parameters']}"
    assert lines[1].split()[-1] == "3x224x224"


@pytest.mark.parametrize("name", MODELS)
def test_plans_at_224_on_the_titan_x(torchvision_exports, name):
    plan = json.loads(vdnn("plan", "--model", torchvision_exports[name]["file"], "--batch", 64,
                           "--device", "titan-x-maxwell", "--json"))
    assert plan["batch"] == 64
    assert plan["configurations"], plan
    assert any(c["fits"] for c in plan["configurations"]), f"{name}: nothing fits 12 GB at batch 64"


@pytest.mark.parametrize("name", MODELS)
def test_trains_to_identical_weights_under_none_and_all(torchvision_exports, name):
    hashes = {}
    for policy in ("none", "all"):
        out = vdnn("train", "--model", torchvision_exports[name]["file"], "--data", "synthetic",
                   "--synthetic-samples", 8, "--batch", 2, "--iterations", 2, "--no-eval",
                   "--progress", "none", "--policy", policy)
        hashes[policy] = [l.split()[1] for l in out.splitlines() if l.startswith("weights_sha256")][0]
        assert "final loss nan" not in out
    assert hashes["none"] == hashes["all"], f"{name}: {hashes}"
