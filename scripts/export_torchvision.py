#!/usr/bin/env python3
"""scripts/export_torchvision.py — torchvision classification networks as training-mode ONNX files.

The files vdnn's ONNX import is tested on (tests/interop): torch.onnx.export with
training=TrainingMode.TRAINING, opset 13, no constant folding, a fixed batch dimension, so batch
norm and dropout export in their training form and every parameter stays an initializer under its
state_dict name. Also prints each model's parameter count as PyTorch reports it (JSON on stdout).

  /usr/bin/python3 scripts/export_torchvision.py OUT_DIR [--models resnet18,googlenet]
      [--size 224] [--batch 2] [--classes 1000] [--seed 0]

GoogLeNet is exported without its auxiliary heads (aux_logits=False) and with transform_input off;
its dropout and AlexNet's/VGG's stay (vdnn imports them as dropout layers).
"""
import argparse
import json
import os
import sys
import warnings

import torch
import torchvision

MODELS = {
    "alexnet": lambda c: torchvision.models.alexnet(num_classes=c),
    "vgg16": lambda c: torchvision.models.vgg16(num_classes=c),
    "resnet18": lambda c: torchvision.models.resnet18(num_classes=c),
    "resnet50": lambda c: torchvision.models.resnet50(num_classes=c),
    "googlenet": lambda c: torchvision.models.googlenet(num_classes=c, aux_logits=False,
                                                        transform_input=False, init_weights=True),
}


def export(name, out_dir, size, batch, classes, seed):
    torch.manual_seed(seed)
    model = MODELS[name](classes)
    model.train()
    x = torch.randn(batch, 3, size, size)
    path = os.path.join(out_dir, f"{name}.onnx")
    torch.onnx.export(model, x, path, opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, input_names=["input"],
                      output_names=["logits"])
    params = sum(p.numel() for p in model.parameters())
    return {"model": name, "file": path, "parameters": params}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(2)
    # torch.onnx warns once per batch norm that num_batches_tracked's increment is not exported.
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    os.makedirs(args.out_dir, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit(f"export_torchvision.py: unknown model '{name}' (known: {', '.join(MODELS)})")
        rows.append(export(name, args.out_dir, args.size, args.batch, args.classes, args.seed))
    json.dump(rows, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
