"""The Python API under mpirun (issue 19): every process is a rank, vdnn.train shards the data and
all-reduces the gradients, and a NumPy loop over vdnn.batches with Net.train_step makes the same
steps; every rank ends on the same weights, and the CLI under mpirun on the same ones. Ranks made
with different settings refuse together before any step, and a rank that raises tells the others at
once (issue 42)."""
import os
import subprocess
import sys
import time

SCRIPT = r'''
import sys, vdnn
mode, out = sys.argv[1], sys.argv[2]
net = vdnn.Net("fmnist_cnn", batch=32, policy="all", seed=3)
if mode == "train":
    vdnn.train(net, data="synthetic", iterations=4, lr=0.05, schedule="constant")
else:  # the same steps by hand: this rank's share of each global batch
    data = vdnn.load_data("fmnist_cnn", data="synthetic", seed=3)
    for step, (x, y) in enumerate(vdnn.batches(data, batch=32, seed=3)):
        if step == 4:
            break
        net.train_step(x, y, lr=0.05)
with open(f"{out}.{vdnn.rank()}", "w") as f:  # one file per rank: their stdout lines may interleave
    f.write(f"{vdnn.rank()} {vdnn.ranks()} {net.weights_sha256()}")
'''


MPIRUN = ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none", "-x", "OMP_NUM_THREADS",
          "-x", "PYTHONPATH", "--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"]


def mpirun(*command):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(MPIRUN + list(command), capture_output=True, text=True, env=env, cwd="/tmp", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def ranks_hashes(prefix):
    lines = [open(f"{prefix}.{r}").read().split() for r in (0, 1)]
    assert [int(l[0]) for l in lines] == [0, 1] and all(l[1] == "2" for l in lines), lines
    return {l[2] for l in lines}


def test_every_rank_ends_on_the_same_weights_as_the_cli(tmp_path, cli):
    script = tmp_path / "dp.py"
    script.write_text(SCRIPT)
    mpirun(sys.executable, str(script), "train", str(tmp_path / "train"))
    trained = ranks_hashes(tmp_path / "train")
    assert len(trained) == 1, "the ranks' weights differ"
    mpirun(sys.executable, str(script), "loop", str(tmp_path / "loop"))
    by_hand = ranks_hashes(tmp_path / "loop")
    assert by_hand == trained, "vdnn.batches + train_step differ from vdnn.train"
    binary = os.environ.get("VDNN_BINARY", "vdnn")
    out = mpirun(binary, "train", "--data", "synthetic", "--iterations", "4", "--batch", "32", "--seed", "3",
                 "--policy", "all", "--lr-schedule", "constant", "--no-eval", "--progress", "none")
    assert f"weights_sha256 {trained.pop()}" in out, out


DISAGREEING = r'''
import ast, sys, vdnn
out, key, values = sys.argv[1], sys.argv[2], ast.literal_eval(sys.argv[3])
try:  # each rank its own value of one keyword: every rank refuses, naming it
    vdnn.Net("fmnist_cnn", **{"batch": 32, key: values[vdnn.rank()]})
    message = "built"
except vdnn.Error as e:
    message = str(e)
with open(f"{out}.{vdnn.rank()}", "w") as f:
    f.write(message)
'''


def test_ranks_made_with_another_batch_or_momentum_refuse_together_naming_it(tmp_path):
    script = tmp_path / "disagree.py"
    script.write_text(DISAGREEING)
    for key, values, expected in (("batch", (32, 16), "batch is 32 on rank 0 but 16 on rank 1"),
                                  ("momentum", (0.9, 0.5), "momentum is 0.9 on rank 0 but 0.5 on rank 1")):
        mpirun(sys.executable, str(script), str(tmp_path / key), key, repr(values))
        messages = {open(f"{tmp_path / key}.{r}").read() for r in (0, 1)}
        assert messages == {f"the ranks were started differently: {expected}"}, messages


LEAVING = r'''
import numpy as np, vdnn
net = vdnn.Net("fmnist_cnn", batch=8)
x, y = np.zeros((8, 1, 28, 28), np.float32), np.zeros(8, int)
for step in range(1000):
    if vdnn.rank() == 1 and step == 2:
        raise RuntimeError("rank 1 stops here")
    net.train_step(x, y, 0.01)
'''


def test_a_rank_that_raises_tells_the_others_at_once(tmp_path):
    script = tmp_path / "leaving.py"
    script.write_text(LEAVING)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    start = time.monotonic()
    p = subprocess.run(MPIRUN + [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd="/tmp",
                       timeout=120)  # the default collective timeout is 300 s
    out = p.stdout + p.stderr
    assert p.returncode != 0 and time.monotonic() - start < 60, out
    assert "RuntimeError: rank 1 stops here" in out and "rank 1 has left the run" in out, out
    assert "every rank is alive" not in out, out
