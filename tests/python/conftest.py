"""Fixtures for the Python API tests (tests/python): the vdnn CLI they compare against, and a small
network without batch norm or dropout whose training-mode logits equal its evaluation-mode ones.

Run by ctest (python_api) as build/pyenv/bin/python -m pytest tests/python with PYTHONPATH=build/python
and VDNN_BINARY set; by hand the same, after `bash scripts/python_env.sh` and a build."""
import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def cli():
    """Runs `vdnn ARGS...` and returns its stdout; a failure fails the test with its stderr."""
    binary = os.environ.get("VDNN_BINARY", os.path.join(ROOT, "build", "vdnn"))
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no vdnn CLI at {binary} (build it, or set VDNN_BINARY)")

    def run(*args):
        env = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
        p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, env=env, cwd="/tmp")
        assert p.returncode == 0, f"vdnn {' '.join(map(str, args))} failed: {p.stderr}"
        return p.stdout

    return run


@pytest.fixture(scope="session")
def mlp_path(tmp_path_factory):
    """An MLP on 1x4x4 samples, 3 classes: fc, relu, fc, loss."""
    path = tmp_path_factory.mktemp("models") / "mlp.json"
    path.write_text(json.dumps({
        "name": "mlp", "input": [1, 4, 4], "classes": 3,
        "layers": [{"name": "fc1", "type": "fc", "units": 8}, {"name": "relu1", "type": "relu"},
                   {"name": "fc2", "type": "fc", "units": "classes"},
                   {"name": "loss", "type": "softmax_cross_entropy"}]}))
    return str(path)
