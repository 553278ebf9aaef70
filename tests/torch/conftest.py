"""Shared fixtures of the PyTorch interop tests (tests/torch): the vdnn CLI under test, Debian's
PyTorch pinned to two threads, and the torchvision exports of scripts/export_torchvision.py."""
import json
import os
import subprocess
import sys

import pytest
import torch

SOURCE_DIR = os.environ.get("VDNN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
torch.set_num_threads(2)


def vdnn(*args, check=True):
    """Runs the vdnn CLI (VDNN_BINARY); returns its stdout, or the completed process if check=False."""
    binary = os.environ["VDNN_BINARY"]
    p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, "VDNN_DATA_DIR": SOURCE_DIR})
    if not check:
        return p
    assert p.returncode == 0, f"vdnn {' '.join(map(str, args))} failed:\n{p.stdout}\n{p.stderr}"
    return p.stdout


@pytest.fixture(scope="session")
def torchvision_exports(tmp_path_factory):
    """name -> {"file": path, "parameters": PyTorch's count}: the five networks at 224x224, batch 2."""
    out = tmp_path_factory.mktemp("torchvision")
    p = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "export_torchvision.py"), out],
                       capture_output=True, text=True, check=True)
    return {row["model"]: row for row in json.loads(p.stdout)}
