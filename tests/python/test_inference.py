"""vdnn.Net(..., inference=True): a Net that only infers (issue 20) gives the training Net's
evaluation logits exactly, holds no training state, is bounded by device_memory (a smaller budget
is refused naming the smallest), and refuses to train."""
import numpy as np
import pytest

import vdnn


def test_an_inference_net_gives_the_training_nets_logits_in_less_memory():
    rng = np.random.default_rng(0)
    trained = vdnn.Net("fmnist_cnn", batch=8, seed=3)
    x = rng.standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 8)
    for _ in range(2):  # batch norm's running statistics move away from their initial values
        trained.train_step(x, y, 0.05)
    edge = vdnn.Net("fmnist_cnn", batch=8, inference=True)
    edge.set_weights(trained.weights())
    assert np.array_equal(edge.infer(x), trained.infer(x))
    m = edge.memory
    assert m["peak_by_class"]["weights"] > 0
    assert m["peak_by_class"]["weight_grads"] == 0 and m["peak_by_class"]["optimizer_state"] == 0
    assert m["peak_by_class"]["gradient_maps"] == 0
    assert edge.arena_bytes == m["smallest_budget_bytes"] < trained.arena_bytes
    assert trained.memory["peak_by_class"]["weight_grads"] > 0


def test_the_budget_bounds_it_streaming_weights_below_them_and_training_is_refused():
    resident = vdnn.Net("fmnist_cnn", batch=4, inference=True)
    smallest = resident.memory["smallest_budget_bytes"]
    streamed_smallest = resident.memory["smallest_streamed_budget_bytes"]
    assert resident.memory["streamed_bytes_per_batch"] == 0
    assert vdnn.Net("fmnist_cnn", batch=4, inference=True, device_memory=smallest).arena_bytes == smallest
    # Below it the largest layers' weights are streamed from host memory: the same logits.
    streamed = vdnn.Net("fmnist_cnn", batch=4, inference=True, device_memory=streamed_smallest)
    assert streamed.memory["streamed_bytes_per_batch"] > 0
    weights = vdnn.Net("fmnist_cnn", batch=4, seed=5).weights()
    resident.set_weights(weights)
    streamed.set_weights(weights)
    x = np.random.default_rng(1).standard_normal((4, 1, 28, 28)).astype(np.float32)
    assert np.array_equal(streamed.infer(x), resident.infer(x))
    with pytest.raises(vdnn.Error, match=f"needs at least .*\\({streamed_smallest} bytes\\)"):
        vdnn.Net("fmnist_cnn", batch=4, inference=True, device_memory=streamed_smallest - 1)
    net = vdnn.Net("fmnist_cnn", batch=4, inference=True)
    x = np.zeros((4, 1, 28, 28), np.float32)
    with pytest.raises(vdnn.Error, match="built for inference only"):
        net.train_step(x, np.zeros(4, np.int64), 0.1)
    with pytest.raises(vdnn.Error, match="^policy all: an inference Net runs the forward pass alone"):
        vdnn.Net("fmnist_cnn", batch=4, inference=True, policy="all")
