"""The Python API under mpirun (issue 19): every process is a rank, vdnn.train shards the data and
all-reduces the gradients, and a NumPy loop over vdnn.batches with Net.train_step makes the same
steps; every rank ends on the same weights, and the CLI under mpirun on the same ones."""
import os
import subprocess
import sys

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


def mpirun(*command):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", "--bind-to", "none",
                        "-x", "OMP_NUM_THREADS", "-x", "PYTHONPATH", "--mca", "btl", "self,vader",
                        "--mca", "btl_vader_single_copy_mechanism", "none", *command],
                       capture_output=True, text=True, env=env, cwd="/tmp", timeout=300)
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
