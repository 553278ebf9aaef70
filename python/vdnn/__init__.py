"""vdnn: train networks larger than device memory — the C++ runtime's Python API.

    import numpy as np, vdnn
    vdnn.__version__                                    # "0.16.0", as `vdnn --version`
    model = vdnn.load_model("fmnist_cnn")               # a shipped name, a JSON or an ONNX file
    vdnn.plan(model, batch=128, device="titan-x-maxwell")["configurations"]
    vdnn.plan_devices("gpt2", ["rtx-4090", "h100"], batch=8, optimizer="adamw", precision="bf16")["devices"]
    net = vdnn.Net(model, batch=32, policy="all", device_memory="32MiB")
    loss = net.train_step(x, y, lr=0.05)                # x float32 (n, C, H, W), y int labels
    logits = net.infer(x)
    vdnn.train(net, data="synthetic", iterations=100, callback=print)
    # mpirun -np 2 python script.py: each process is a rank (vdnn.rank(), vdnn.ranks()); Nets train
    # data-parallel, vdnn.batches and vdnn.train give each rank its share of every global batch.

Every error vdnn reports is a vdnn.Error carrying vdnn's one-line message. See docs/interop.md,
"Python API".
"""
import atexit as _atexit
import os as _os

from ._vdnn import (Batches, Dataset, Error, Model, Net, batches, load_data, load_model, lr_at, models,
                    plan, plan_devices, rank, ranks, set_data_dir, train)
from ._vdnn import _end_ranks
from ._vdnn import __version__

__all__ = ["Batches", "Dataset", "Error", "Model", "Net", "batches", "load_data", "load_model", "lr_at",
           "models", "plan", "plan_devices", "rank", "ranks", "set_data_dir", "train"]

_atexit.register(_end_ranks)  # under mpirun: every rank leaves the run together (MPI_Finalize)


def _find_data_dir():
    """The shipped models/ and profiles/: in the installed package (pip copies them into vdnn/data),
    else the source tree this module was built from; $VDNN_DATA_DIR wins over both."""
    if _os.environ.get("VDNN_DATA_DIR"):
        return None
    packaged = _os.path.join(_os.path.dirname(__file__), "data")
    if _os.path.isdir(_os.path.join(packaged, "models")):
        return packaged
    from . import _vdnn
    source = getattr(_vdnn, "_source_data_dir", "")
    if source and _os.path.isdir(_os.path.join(source, "models")):
        return source
    return None


_data_dir = _find_data_dir()
if _data_dir:
    set_data_dir(_data_dir)
