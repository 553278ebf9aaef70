#!/usr/bin/env python3
"""scripts/export_torchvision.py — torchvision classification networks as ONNX files.

By default the training-mode files vdnn's ONNX import is tested on (tests/interop): torch.onnx.export
with training=TrainingMode.TRAINING, opset 13, no constant folding, a fixed batch dimension, so batch
norm and dropout export in their training form and every parameter stays an initializer under its
state_dict name; written as OUT_DIR/<model>.onnx. Also prints each model's parameter count as PyTorch
reports it (JSON on stdout).

--eval writes inference-form files instead, OUT_DIR/<model>_eval_b<batch>.onnx, one per batch size
(the batch is fixed in the file; give --batch 1,32 for several): model.eval(),
training=TrainingMode.EVAL, do_constant_folding=True. In that mode torch (1.13) folds every batch
norm into the convolution before it whatever do_constant_folding says (its eval peephole pass), and
drops dropout, so the file holds Conv (with bias), Relu, pools, Add/Concat, Flatten and Gemm: the
graph ONNX Runtime would run after its own default optimisations, given to every engine alike.
--keep-batch-norm exports the eval model with TrainingMode.PRESERVE instead, which skips that pass:
BatchNormalization stays, in its inference form (one output), for an importer's own folding.
Before export, --eval gives every batch norm seeded non-trivial statistics and affine parameters
(running mean N(0, 0.1), running var U(0.5, 1.5), weight U(0.8, 1.2), bias N(0, 0.1)): torchvision
initialises them to the identity, under which folding them, right or wrong, changes nothing. It
also gives every convolution and linear bias N(0, 0.01) values instead of torchvision's zeros: in eval
mode the exporter merges initializers of equal value (VGG-16's zero biases) into Identity nodes,
which vdnn's import rejects ("reads the constant ... as data").
bench/inference_memory.py rebuilds the same PyTorch model with build_model().

  /usr/bin/python3 scripts/export_torchvision.py OUT_DIR [--models resnet18,googlenet]
      [--size 224] [--batch 2] [--classes 1000] [--seed 0] [--eval [--keep-batch-norm]]
  /usr/bin/python3 scripts/export_torchvision.py /tmp/onnx --eval --batch 1,32 --models resnet18

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


def build_model(name, classes=1000, seed=0, eval_form=False):
    """The torchvision model `name` with the weights its export under `seed` has (see the header)."""
    torch.manual_seed(seed)
    model = MODELS[name](classes)
    if not eval_form:
        return model.train()
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(c, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
                m.weight.copy_(0.8 + 0.4 * torch.rand(c, generator=gen))
                m.bias.copy_(0.1 * torch.randn(c, generator=gen))
            elif isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) and m.bias is not None:
                m.bias.copy_(0.01 * torch.randn(m.bias.shape, generator=gen))
    return model.eval()


def export_path(out_dir, name, batch, eval_form):
    return os.path.join(out_dir, f"{name}_eval_b{batch}.onnx" if eval_form else f"{name}.onnx")


def export(name, out_dir, size, batch, classes, seed, eval_form=False, keep_batch_norm=False):
    model = build_model(name, classes, seed, eval_form)
    x = torch.randn(batch, 3, size, size)
    path = export_path(out_dir, name, batch, eval_form)
    if not eval_form:
        mode, folding = torch.onnx.TrainingMode.TRAINING, False
    else:
        mode = torch.onnx.TrainingMode.PRESERVE if keep_batch_norm else torch.onnx.TrainingMode.EVAL
        folding = True
    torch.onnx.export(model, x, path, opset_version=13, do_constant_folding=folding, training=mode,
                      input_names=["input"], output_names=["logits"])
    params = sum(p.numel() for p in model.parameters())
    return {"model": name, "file": path, "parameters": params, "batch": batch,
            "form": "eval" if eval_form else "training"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", default="2", help="batch size(s), comma-separated with --eval")
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval", action="store_true", help="inference-form files, one per batch (see above)")
    parser.add_argument("--keep-batch-norm", action="store_true",
                        help="with --eval: keep BatchNormalization nodes (inference form) instead of folding them")
    args = parser.parse_args()
    try:
        batches = [int(b) for b in args.batch.split(",")]
    except ValueError:
        sys.exit(f"export_torchvision.py: --batch '{args.batch}' is not a comma-separated list of integers")
    if any(b < 1 for b in batches) or (len(batches) > 1 and not args.eval):
        sys.exit(f"export_torchvision.py: --batch '{args.batch}': give positive sizes, several only with --eval "
                 "(training-form files are named by model alone)")
    if args.keep_batch_norm and not args.eval:
        sys.exit("export_torchvision.py: --keep-batch-norm needs --eval (training-form files keep batch norm)")
    torch.set_num_threads(2)
    # torch.onnx warns once per batch norm that num_batches_tracked's increment is not exported.
    warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")
    os.makedirs(args.out_dir, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        if name not in MODELS:
            sys.exit(f"export_torchvision.py: unknown model '{name}' (known: {', '.join(MODELS)})")
        for batch in batches:
            rows.append(export(name, args.out_dir, args.size, batch, args.classes, args.seed, args.eval,
                               args.keep_batch_norm))
    json.dump(rows, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
