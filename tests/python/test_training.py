"""A NumPy loop over vdnn.batches with vdnn.lr_at's rates and Net.train_step makes the steps
`vdnn train` makes: the same weights_sha256. vdnn.train does too, reporting every step."""
import re

import numpy as np

import vdnn

# Enough steps to cross an epoch boundary (256 samples / batch 32 = 8 per epoch).
MODEL, BATCH, SAMPLES, SEED, STEPS, LR = "fmnist_cnn", 32, 256, 3, 11, 0.07


def cli_hash(cli, *extra):
    out = cli("train", "--model", MODEL, "--data", "synthetic", "--synthetic-samples", SAMPLES, "--seed", SEED,
              "--batch", BATCH, "--iterations", STEPS, "--lr", LR, "--no-eval", "--progress", "none", *extra)
    return re.search(r"weights_sha256 ([0-9a-f]{64})", out).group(1)


def numpy_loop(net, augment="none"):
    data = vdnn.load_data(net.model, "synthetic", "train", synthetic_samples=SAMPLES, seed=SEED)
    step, epoch, losses = 0, 0, []
    while step < STEPS:
        for x, y in vdnn.batches(data, BATCH, seed=SEED, epoch=epoch, augment=augment):
            if step == STEPS:
                break
            assert x.dtype == np.float32 and x.shape == (BATCH, 1, 28, 28) and y.shape == (BATCH,)
            losses.append(net.train_step(x, y, vdnn.lr_at(step, epoch, lr=LR, schedule="cosine", total_steps=STEPS)))
            step += 1
        epoch += 1
    return losses



def test_numpy_loop_weights_sha256_equals_cli(cli):
    net = vdnn.Net(MODEL, batch=BATCH, seed=SEED)
    before = net.weights_sha256()
    losses = numpy_loop(net)
    assert all(np.isfinite(losses))
    assert net.weights_sha256() != before
    assert net.weights_sha256() == cli_hash(cli)


def test_save_writes_the_file_vdnn_train_save_weights_writes(cli, tmp_path):
    """One state_dict writer: the same steps saved by Net.save and by `vdnn train --save-weights` are
    the same bytes, batch-norm counters (PyTorch's num_batches_tracked) and metadata included."""
    net = vdnn.Net(MODEL, batch=BATCH, seed=SEED)
    numpy_loop(net)
    ours, theirs = tmp_path / "net_save.safetensors", tmp_path / "save_weights.safetensors"
    net.save(str(ours))
    assert net.weights_sha256() == cli_hash(cli, "--save-weights", theirs)
    from safetensors.numpy import load_file  # PyPI's reader (scripts/python_env.sh)
    counters = {k: v for k, v in load_file(str(ours)).items() if k.endswith(".num_batches_tracked")}
    assert counters == {"bn1.num_batches_tracked": STEPS, "bn2.num_batches_tracked": STEPS}
    assert ours.read_bytes() == theirs.read_bytes()


def test_numpy_loop_under_policy_all_gives_the_same_weights(cli):
    net = vdnn.Net(MODEL, batch=BATCH, seed=SEED, policy="all", device_memory="48MiB")  # all needs 28.31 MiB on a Xeon (conv2 Winograd)
    numpy_loop(net)
    assert net.weights_sha256() == cli_hash(cli, "--policy", "all", "--device-memory", "48MiB")


def test_augmented_numpy_loop_and_train_end_on_the_cli_weights(cli):
    net = vdnn.Net(MODEL, batch=BATCH, seed=SEED)
    numpy_loop(net, augment="cifar")
    augmented = cli_hash(cli, "--augment", "cifar")
    assert net.weights_sha256() == augmented != cli_hash(cli)
    other = vdnn.Net(MODEL, batch=BATCH, seed=SEED)
    r = vdnn.train(other, data="synthetic", iterations=STEPS, lr=LR, synthetic_samples=SAMPLES, augment="cifar")
    assert r["weights_sha256"] == augmented
    try:
        vdnn.train(other, data="synthetic", iterations=1, synthetic_samples=SAMPLES, augment="mixup")
        raise AssertionError("augment='mixup' was taken")
    except vdnn.Error as e:
        assert "augment 'mixup': expected none, flip" in str(e)


def test_train_reports_every_step_and_ends_on_the_cli_weights(cli):
    net = vdnn.Net(MODEL, batch=BATCH, seed=SEED)
    seen = []
    r = vdnn.train(net, data="synthetic", iterations=STEPS, lr=LR, synthetic_samples=SAMPLES, callback=seen.append)
    assert [s["step"] for s in seen] == list(range(1, STEPS + 1))
    assert all(s["total_steps"] == STEPS and np.isfinite(s["loss"]) for s in seen)
    assert [s["epoch"] for s in seen] == [1] * 8 + [2] * 3
    assert r["iterations"] == STEPS and r["net"] is net and net.steps == STEPS
    assert r["weights_sha256"] == net.weights_sha256() == cli_hash(cli)


def test_an_exception_in_the_callback_stops_training():
    net = vdnn.Net(MODEL, batch=BATCH, seed=SEED)

    def stop(step):
        if step["step"] == 2:
            raise KeyError("enough")

    try:
        vdnn.train(net, data="synthetic", iterations=STEPS, synthetic_samples=SAMPLES, callback=stop)
        raise AssertionError("train went on")
    except KeyError as e:
        assert "enough" in str(e)
    # The steps the callback was shown happened: net.steps counts them, the raising one's too (issue 42).
    assert net.steps == 2, net.steps
