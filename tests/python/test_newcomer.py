"""What a PyTorch user brings to the Python API (issue 41): vdnn.__version__ (CMakeLists.txt's project
version, as `vdnn --version`), torch tensors where NumPy arrays go (CPU tensors as their values,
detached; anything else with __array__ or the buffer protocol through numpy.asarray), and one clear
error for a tensor on another device, of another dtype, or something that is no array at all."""
import os
import re

import numpy as np
import pytest
import torch

import vdnn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_version():
    with open(os.path.join(os.environ.get("VDNN_SOURCE_DIR", ROOT), "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(vdnn VERSION ([0-9.]+)", f.read()).group(1)


def test_version_is_the_projects_as_the_cli_prints_it(cli):
    assert vdnn.__version__ == project_version()
    assert cli("--version") == f"vdnn {vdnn.__version__}\n"


def batch(rng, n):
    return rng.standard_normal((n, 1, 4, 4)).astype(np.float32), rng.integers(0, 3, n)


def test_torch_tensors_train_infer_and_load_as_numpy_does(mlp_path):
    x, y = batch(np.random.default_rng(4), 8)
    a, b = vdnn.Net(mlp_path, batch=8, seed=3), vdnn.Net(mlp_path, batch=8, seed=3)
    tx = torch.from_numpy(x).requires_grad_(True)  # a leaf of an autograd graph: read, never written
    for step in range(3):
        assert a.train_step(x, y, 0.1) == b.train_step(tx, torch.from_numpy(y), 0.1), step
    assert a.weights_sha256() == b.weights_sha256()
    assert np.array_equal(a.infer(x), b.infer(tx))
    state_dict = {k: torch.from_numpy(v) for k, v in a.weights().items()}  # what torch.nn.Module.state_dict() holds
    c = vdnn.Net(mlp_path, batch=8, seed=9)
    c.set_weights(state_dict)
    assert c.weights_sha256() == a.weights_sha256()
    # Anything else NumPy reads: the buffer protocol (a memoryview), and __array__.
    class Wrapped:
        def __init__(self, array):
            self.array = array

        def __array__(self, dtype=None):
            return self.array

    assert np.array_equal(a.infer(memoryview(x)), a.infer(x))
    assert np.array_equal(a.infer(Wrapped(x)), a.infer(x))


def test_tensors_vdnn_cannot_read_are_refused_naming_the_conversion(mlp_path):
    net = vdnn.Net(mlp_path, batch=4)
    x, y = batch(np.random.default_rng(5), 4)
    with pytest.raises(vdnn.Error, match=r"^x: dtype torch.float64, expected torch.float32 \(convert with \.float\(\)\)$"):
        net.train_step(torch.from_numpy(x).double(), y, 0.1)
    # A tensor off the CPU (a CUDA one, here PyTorch's "meta" device, which any build has).
    with pytest.raises(vdnn.Error, match=r"^x: a torch.Tensor on meta; vdnn reads host memory: pass x.cpu\(\)"):
        net.infer(torch.empty((4, 1, 4, 4), device="meta"))
    with pytest.raises(vdnn.Error, match="integer class labels"):
        net.train_step(x, torch.from_numpy(y).float(), 0.1)
    with pytest.raises(vdnn.Error, match=r"^x: expected an array \(a NumPy array, a torch.Tensor on the CPU, or anything "
                                         r"with __array__ or the buffer protocol\), got a list"):
        net.infer(x.tolist())
