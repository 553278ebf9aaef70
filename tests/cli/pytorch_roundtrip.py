"""PyTorch state_dict -> `vdnn train --initial-weights` -> `--save-weights` -> torch load_state_dict(strict=True).

Run by tests/cli/test_cli_pytorch_roundtrip.cc with the test environment's python (scripts/python_env.sh:
Debian's torch, PyPI safetensors): python pytorch_roundtrip.py VDNN_BINARY WORK_DIR. Prints "ok" last;
any mismatch raises (exit status != 0) with what differed.
"""
import json
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

torch.set_num_threads(2)
torch.manual_seed(0)


class Net(torch.nn.Module):
    """Layers vdnn also has, under the names its JSON below gives them."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(2, 4, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(4)
        self.conv2 = torch.nn.Conv2d(4, 4, 3, padding=1, groups=2)  # grouped: [4, 2, 3, 3]
        self.fc = torch.nn.Linear(4 * 6 * 6, 3)  # after a flatten: [3, 144]

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        return self.fc(torch.flatten(self.conv2(x), 1))


VDNN_MODEL = {
    "name": "torch_roundtrip", "input": [2, 6, 6], "classes": 3,
    "layers": [
        {"name": "conv1", "type": "conv", "channels": 4, "kernel": 3, "pad": 1, "bias": False},
        {"name": "bn1", "type": "batch_norm"},
        {"name": "relu1", "type": "relu"},
        {"name": "conv2", "type": "conv", "channels": 4, "kernel": 3, "pad": 1, "groups": 2},
        {"name": "fc", "type": "fc", "units": "classes"},
        {"name": "loss", "type": "softmax_cross_entropy"},
    ],
}
STEPS = 3


def main(vdnn, work):
    model = Net()
    model.train()
    with torch.no_grad():  # two training-mode forwards: running statistics move, num_batches_tracked = 2
        for _ in range(2):
            model(torch.randn(8, 2, 6, 6))
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    assert initial["bn1.num_batches_tracked"].dtype == torch.int64
    save_file(initial, os.path.join(work, "initial.safetensors"))
    with open(os.path.join(work, "model.json"), "w") as f:
        json.dump(VDNN_MODEL, f)

    checkpoint = os.path.join(work, "trained.safetensors")
    weights = os.path.join(work, "weights.safetensors")
    run = subprocess.run(
        [vdnn, "train", "--model", os.path.join(work, "model.json"), "--data", "synthetic",
         "--synthetic-samples", "32", "--batch", "8", "--iterations", str(STEPS), "--no-eval",
         "--progress", "none", "--weight-decay", "0.01", "--weight-decay-on", "all",
         "--initial-weights", os.path.join(work, "initial.safetensors"), "--save", checkpoint,
         "--save-weights", weights],
        capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        raise SystemExit("vdnn train failed:\n" + run.stdout + run.stderr)
    assert "initial weights from" in run.stdout, run.stdout

    state = load_file(weights)
    trained = Net()
    trained.load_state_dict(state, strict=True)  # names, shapes and dtypes as PyTorch's own
    # The checkpoint is the same tensors plus the SGD momentum ("<param>:momentum", which PyTorch
    # keeps in its optimizer): without those it loads strictly too.
    saved = load_file(checkpoint)
    extra = sorted(k for k in saved if k not in state)
    assert extra and all(k.endswith(":momentum") for k in extra), f"tensors PyTorch does not know: {extra}"
    assert all(torch.equal(saved[k], v) for k, v in state.items()), "checkpoint and --save-weights differ"
    Net().load_state_dict({k: v for k, v in saved.items() if k not in extra}, strict=True)
    assert trained.bn1.num_batches_tracked.item() == 2 + STEPS, trained.bn1.num_batches_tracked
    for name, before in initial.items():
        after = trained.state_dict()[name]
        assert after.shape == before.shape and after.dtype == before.dtype, name
        if name != "bn1.num_batches_tracked":
            assert not torch.equal(after, before), f"{name} did not change in {STEPS} steps"
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
