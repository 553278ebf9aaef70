"""The Python API against the second hostile probe (issue 42): it refuses what the CLI refuses,
through the same library rules, each refusal one line naming the keyword argument and what is
valid; a step whose loss or gradients are not finite leaves the Net as it was; an allocation the
host refuses is reported in the CLI's words."""
import math
import resource

import numpy as np
import pytest

import vdnn


def refused(call, *args, **kwargs):
    """The vdnn.Error `call` raises: one line in Python's words, never an internal check."""
    with pytest.raises(vdnn.Error) as e:
        call(*args, **kwargs)
    text = str(e.value)
    assert "\n" not in text and "--" not in text and "check failed" not in text, text
    return text


def test_a_batch_out_of_range_is_refused_before_any_kernel(mlp_path):
    for batch in (2**40, 10**15, 0):  # 2**40: SIGFPE in oneDNN; 10**15: "check failed"
        assert refused(vdnn.Net, "fmnist_cnn", batch=batch) == f"batch {batch}: expected 1 to 1048576"
        assert refused(vdnn.plan, "fmnist_cnn", batch=batch) == f"batch {batch}: expected 1 to 1048576"
    assert refused(vdnn.plan, mlp_path, batch=4, repeats=0) == "repeats 0: expected 1 to 1000 timed runs per kernel"


def test_every_integer_argument_past_64_bits_is_refused_naming_it(mlp_path):
    # Typed int64_t, these were pybind11's TypeError listing every signature ("incompatible function
    # arguments"); each is now read as a Python int and refused naming the keyword and its range.
    huge = 2**70
    dataset = vdnn.load_data(mlp_path, data="synthetic", synthetic_samples=8)
    net = vdnn.Net(mlp_path, batch=4)
    calls = {
        "batch": [lambda v: vdnn.Net(mlp_path, batch=v), lambda v: vdnn.plan(mlp_path, batch=v),
                  lambda v: vdnn.plan_devices(mlp_path, ["h100"], batch=v), lambda v: vdnn.batches(dataset, v),
                  lambda v: vdnn.train(mlp_path, data="synthetic", batch=v)],
        "seed": [lambda v: vdnn.Net(mlp_path, batch=4, seed=v), lambda v: vdnn.batches(dataset, 4, seed=v),
                 lambda v: vdnn.load_data(mlp_path, data="synthetic", seed=v)],
        "epoch": [lambda v: vdnn.batches(dataset, 4, epoch=v), lambda v: vdnn.lr_at(0, v)],
        "step": [lambda v: vdnn.lr_at(v, 0)],
        "total_steps": [lambda v: vdnn.lr_at(0, 0, total_steps=v)],
        "step_epochs": [lambda v: vdnn.lr_at(0, 0, step_epochs=v),
                        lambda v: vdnn.train(net, data="synthetic", iterations=1, step_epochs=v)],
        "warmup_steps": [lambda v: vdnn.lr_at(0, 0, warmup_steps=v),
                         lambda v: vdnn.train(net, data="synthetic", iterations=1, warmup_steps=v)],
        "iterations": [lambda v: vdnn.train(net, data="synthetic", iterations=v)],
        "epochs": [lambda v: vdnn.train(net, data="synthetic", epochs=v)],
        "synthetic_samples": [lambda v: vdnn.load_data(mlp_path, data="synthetic", synthetic_samples=v),
                              lambda v: vdnn.train(net, data="synthetic", iterations=1, synthetic_samples=v)],
        "repeats": [lambda v: vdnn.plan(mlp_path, batch=4, repeats=v)],
    }
    for name, uses in calls.items():
        for use in uses:
            for value in (huge, -huge):
                assert refused(use, value).startswith(f"{name} {value}: expected "), (name, value)
    assert refused(vdnn.Net, mlp_path, batch=4, seed=-1) == "seed -1: expected 0 to 18446744073709551615"
    assert refused(vdnn.Net, mlp_path, batch=4.0) == "batch: expected an int from 1 to 1048576, got float"
    assert refused(vdnn.Net, mlp_path, batch=True) == "batch: expected an int from 1 to 1048576, got bool"
    assert net.steps == 0
    # NumPy's integers are ints (their __index__), as pybind11 took them before, budgets included;
    # NumPy's bools are bools, refused as True is.
    assert vdnn.Net(mlp_path, batch=np.int64(4), seed=np.uint64(2**64 - 1)).batch == 4
    assert vdnn.Net(mlp_path, batch=4, device_memory=np.int64(10**7)).batch == 4
    assert refused(vdnn.Net, mlp_path, batch=np.bool_(True)) == "batch: expected an int from 1 to 1048576, got bool_"
    assert refused(vdnn.Net, mlp_path, batch=4, conv_algo=1) == (
        'conv_algo: expected None, "auto", "direct" or "winograd", got int')
    # Which convolutions a budget made direct (conv_algo None) is said, as train prints it.
    assert vdnn.Net("fmnist_dag", batch=8).convolutions_made_direct == []  # no budget: nothing to fit
    assert vdnn.lr_at(np.int32(0), np.int64(0), lr=1.0, total_steps=np.int16(10)) == pytest.approx(1.0)


def test_learning_rates_and_optimizer_settings_out_of_range_are_refused(mlp_path):
    net = vdnn.Net(mlp_path, batch=4)
    x = np.zeros((4, 1, 4, 4), np.float32)
    y = np.zeros(4, int)
    before = net.weights_sha256()
    for lr, text in ((math.nan, "nan"), (math.inf, "inf"), (-1.0, "-1"), (101.0, "101")):
        assert refused(net.train_step, x, y, lr) == f"lr {text}: expected 0 to 100"
        assert refused(vdnn.train, net, data="synthetic", iterations=1, lr=lr) == f"lr {text}: expected 0 to 100"
        assert refused(vdnn.lr_at, 0, 0, lr=lr) == f"lr {text}: expected 0 to 100"
    assert net.steps == 0 and net.weights_sha256() == before
    assert refused(vdnn.Net, mlp_path, momentum=math.nan) == "momentum nan: expected 0 to 0.999"
    assert refused(vdnn.Net, mlp_path, weight_decay=math.nan) == "weight_decay nan: expected 0 to 1"
    assert "count from 0" in refused(vdnn.lr_at, -1, 0)  # was: 0.0
    assert "count from 0" in refused(vdnn.lr_at, 0, -1)
    assert refused(vdnn.lr_at, 0, 0, total_steps=0) == "total_steps 0: expected >= 1"
    assert refused(vdnn.train, net, data="synthetic", schedule="step", step_epochs=0) == (
        "step_epochs 0: expected 1 to 100000")
    assert refused(vdnn.train, net, data="synthetic", gamma=math.nan) == "gamma nan: expected 0 to 1"
    assert refused(vdnn.train, net, data="synthetic", iterations=-1) == (
        "iterations -1: expected 0 (whole epochs) to 1099511627776")
    assert refused(vdnn.train, net, data="synthetic", epochs=0) == "epochs 0: expected 1 to 100000"
    assert refused(vdnn.train, net, data="synthetic", synthetic_samples=0) == (
        "synthetic_samples 0: expected 1 to 1073741824")
    # A Net's batch is fixed: another one is refused, not trained at the Net's silently.
    assert refused(vdnn.train, net, data="synthetic", batch=64).startswith("batch 64: this Net was made for batch 4")
    assert vdnn.train(net, data="synthetic", iterations=1, batch=4)["iterations"] == 1


def test_a_step_that_is_not_finite_leaves_the_net_as_it_was():
    net = vdnn.Net("fmnist_cnn", batch=8)  # batch norm: running statistics
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    before = net.weights()
    huge = np.full_like(x, 3e38)  # finite, but the convolutions overflow
    # No update has been made: the learning rate is not blamed.
    with pytest.raises(vdnn.Error, match=r"training stopped before the update \(no update has been made yet, so lr "
                                         "is not the cause"):
        net.train_step(huge, y, 0.1)
    with pytest.raises(vdnn.Error, match=r"NaN or Inf.*\(the running statistics are left as they were\)$"):
        net.forward_backward(huge, y)  # was: a finite loss
    after = net.weights()
    assert all(np.array_equal(before[k], after[k]) for k in before), "weights or running statistics changed"
    nan = x.copy()
    nan[3, 0, 5, 5] = np.nan
    message = "x[3] holds nan: inputs must be finite numbers (no NaN or Inf)"
    assert refused(net.train_step, nan, y, 0.1) == message
    assert refused(net.forward_backward, nan, y) == message
    assert refused(net.infer, nan) == message
    assert np.isfinite(net.train_step(x, y, 0.1))  # the Net still trains
    assert net.steps == 1


def test_an_allocation_the_host_refuses_is_reported_in_the_clis_words(mlp_path):
    model = vdnn.load_model(mlp_path, input=(1, 28, 28))
    # 2**21 samples of 1x28x28 floats (6.1 GiB) in a process held to 256 MiB more than it has mapped.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    mapped = int(next(l for l in open("/proc/self/status") if l.startswith("VmSize:")).split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (mapped + (256 << 20), hard))
    try:
        with pytest.raises(MemoryError, match=r"^out of host memory: an allocation failed with .* available "
                                              r"\(MemAvailable in /proc/meminfo\)"):
            vdnn.load_data(model, "synthetic", synthetic_samples=2**21)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def test_budgets_and_counts_out_of_any_range_are_refused_in_python_words(mlp_path, tmp_path):
    # Python's ints have no bound: 2**64 is "out of range", never pybind11's "Unable to cast".
    assert refused(vdnn.plan, mlp_path, batch=4, device_memory=0).startswith(
        "device_memory 0: expected a size above 0")
    assert refused(vdnn.plan, mlp_path, batch=4, device_memory=2**64).startswith(
        "device_memory 18446744073709551616: expected a size of at most")
    assert refused(vdnn.Net, mlp_path, batch=4, device_memory=2**64).startswith(
        "device_memory 18446744073709551616: expected a size of at most")
    assert refused(vdnn.load_model, "fmnist_cnn", classes=2**31) == "classes 2147483648: expected 2 to 1048576"
    assert refused(vdnn.load_model, "fmnist_cnn", classes=2**70) == (
        "classes 1180591620717411303424: expected 2 to 1048576")
    assert refused(vdnn.train, mlp_path, data="synthetic", batch=2**64) == "batch 18446744073709551616: expected 1 to 1048576"


def test_a_save_path_that_cannot_be_written_is_refused_before_training(mlp_path, tmp_path):
    net = vdnn.Net(mlp_path, batch=4)
    before = net.weights_sha256()
    text = refused(vdnn.train, net, data="synthetic", iterations=2, save=str(tmp_path))
    assert "is a folder" in text, text
    assert net.steps == 0 and net.weights_sha256() == before  # refused before the first step
