"""vdnn.Net from NumPy: inference shapes, gradients, weights in and out, and errors as vdnn.Error."""
import json

import numpy as np
import pytest

import vdnn


def batch(rng, n, shape=(1, 4, 4), classes=3):
    return rng.standard_normal((n, *shape)).astype(np.float32), rng.integers(0, classes, n)


def test_infer_shapes_and_chunks(mlp_path):
    net = vdnn.Net(vdnn.load_model(mlp_path), batch=4)
    x, _ = batch(np.random.default_rng(0), 10)
    logits = net.infer(x)  # more samples than the batch: run in batches of 4
    assert logits.shape == (10, 3) and logits.dtype == np.float32
    assert np.array_equal(net.infer(x[:3]), logits[:3])
    assert np.array_equal(net.infer(x[4:8]), logits[4:8])


def test_infer_refuses_logits_that_are_not_finite_as_evaluation_does(mlp_path):
    """The re-probe: finite inputs whose forward pass overflows float32 (3e38 through two layers) gave
    inf and NaN logits; weights set that large too. Both raise, naming the first sample."""
    net = vdnn.Net(mlp_path, batch=4)
    x = np.ones((2, 1, 4, 4), np.float32)
    x[1] = 3e38
    with pytest.raises(vdnn.Error, match=r"infer: x\[1\] gave a logit of .*overflow float32"):
        net.infer(x)
    huge = {k: np.full_like(v, 3e38) for k, v in net.weights().items() if k == "fc2.weight"}
    net.set_weights(huge)
    with pytest.raises(vdnn.Error, match=r"x\[0\] gave a logit"):
        net.infer(np.ones((2, 1, 4, 4), np.float32))


def test_forward_backward_gives_the_loss_gradient_without_an_update(mlp_path):
    net = vdnn.Net(mlp_path, batch=8)
    x, y = batch(np.random.default_rng(1), 6)
    before = net.weights()
    loss = net.forward_backward(x, y)
    z = net.infer(x).astype(np.float64)  # no batch norm or dropout: the training-mode logits
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert loss == pytest.approx(-np.log(p[np.arange(6), y]).mean(), rel=1e-5)
    onehot = np.eye(3)[y]
    grads = net.gradients()
    assert sorted(grads) == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    np.testing.assert_allclose(grads["fc2.bias"], (p - onehot).mean(0), rtol=1e-4, atol=1e-6)
    assert all(grads[k].shape == before[k].shape for k in grads)
    assert all(np.array_equal(v, net.weights()[k]) for k, v in before.items())


def test_set_weights_round_trip_and_save_for_vdnn_infer(mlp_path, tmp_path, cli):
    net = vdnn.Net(mlp_path, batch=8, seed=5)
    other = vdnn.Net(mlp_path, batch=8, seed=6)
    assert other.weights_sha256() != net.weights_sha256()
    other.set_weights(net.weights())
    assert other.weights_sha256() == net.weights_sha256()
    w = net.weights()["fc2.bias"] + 1
    other.set_weights({"fc2.bias": w, "bn9.num_batches_tracked": np.array(3)})  # a subset; PyTorch's counter skipped
    assert np.array_equal(other.weights()["fc2.bias"], w)
    assert np.array_equal(other.weights()["fc1.weight"], net.weights()["fc1.weight"])
    path = tmp_path / "w.safetensors"
    other.save(str(path))
    out = json.loads(cli("infer", "--model", mlp_path, "--weights", path, "--data", "synthetic", "--json"))
    assert out["weights_sha256"] == other.weights_sha256()


def test_errors_arrive_as_vdnn_error(mlp_path):
    with pytest.raises(vdnn.Error, match="nope"):
        vdnn.load_model("nope")
    net = vdnn.Net(mlp_path, batch=4)
    x, y = batch(np.random.default_rng(2), 4)
    with pytest.raises(vdnn.Error, match="float64, expected float32"):
        net.train_step(x.astype(np.float64), y, 0.1)
    with pytest.raises(vdnn.Error, match=r"x: shape \[4, 1, 5, 4\], model 'mlp' expects NCHW batches \[n, 1, 4, 4\]"):
        net.train_step(np.zeros((4, 1, 5, 4), np.float32), y, 0.1)
    with pytest.raises(vdnn.Error, match="n <= batch 4"):
        net.forward_backward(np.zeros((5, 1, 4, 4), np.float32), np.zeros(5, int))
    with pytest.raises(vdnn.Error, match=r"y\[1\] = 3: model 'mlp' has classes 0..2"):
        net.train_step(x, np.array([0, 3, 1, 1]), 0.1)
    with pytest.raises(vdnn.Error, match="integer class labels"):
        net.train_step(x, y.astype(np.float32), 0.1)
    with pytest.raises(vdnn.Error, match="has no tensor 'fc3.weight'"):
        net.set_weights({"fc3.weight": np.zeros((3, 8), np.float32)})
    with pytest.raises(vdnn.Error, match=r"'fc2.bias' has shape \[4\], the model's is \[3\]"):
        net.set_weights({"fc2.bias": np.zeros(4, np.float32)})
    with pytest.raises(vdnn.Error, match="fc2.bias"):
        net.set_weights({"fc2.bias": np.array([0, np.nan, 0], np.float32)})
    with pytest.raises(vdnn.Error, match="device_memory"):
        vdnn.Net(mlp_path, batch=4, device_memory="lots")
    with pytest.raises(vdnn.Error, match="too small|smallest"):
        vdnn.Net("fmnist_cnn", batch=32, policy="all", device_memory="1MiB")
    with pytest.raises(vdnn.Error, match="policy 'sometimes'"):
        vdnn.plan(mlp_path, batch=4, device="titan-x-maxwell", policy="sometimes")
    assert issubclass(vdnn.Error, Exception)


def test_planned_policy_picks_and_trains_the_same_weights(mlp_path):
    rng = np.random.default_rng(3)
    planned = vdnn.Net(mlp_path, batch=8, policy="auto", device_memory="1MiB")  # costs measured now
    plain = vdnn.Net(mlp_path, batch=8)
    assert planned.policy_summary.startswith("auto picks") and plain.policy_summary == ""
    for _ in range(3):
        x, y = batch(rng, 8)
        assert planned.train_step(x, y, 0.1) == plain.train_step(x, y, 0.1)
    assert planned.weights_sha256() == plain.weights_sha256()
    with pytest.raises(vdnn.Error, match="^policy dyn needs device_memory: it picks what fits a budget$"):
        vdnn.Net(mlp_path, batch=8, policy="dyn")


def test_host_memory_is_taken_once_and_a_budget_below_it_is_refused_naming_it():
    net = vdnn.Net("fmnist_cnn", batch=32, policy="all")
    host = net.memory["host_bytes"]
    assert host > 0
    assert vdnn.Net("fmnist_cnn", batch=32, policy="none").memory["host_bytes"] == 0
    with pytest.raises(vdnn.Error, match=rf"^host_memory .* is too small .*\({host} bytes\), the smallest host_memory "
                                         r"that works for this plan; .*within host_memory\)$") as refused:
        vdnn.Net("fmnist_cnn", batch=32, policy="all", host_memory=host - 1)
    assert "\n" not in str(refused.value) and "--" not in str(refused.value)  # one line, in Python's words
    assert vdnn.Net("fmnist_cnn", batch=32, policy="all", host_memory=host).memory["host_bytes"] == host


def test_the_cli_rules_on_a_nets_options_refuse_in_python_naming_the_keywords(mlp_path):
    """`vdnn train`'s rules on the Net's options are the library's (runtime/net_settings.h), so the
    Python API keeps them too, each refusal one line naming the keyword argument."""
    def refused(**kwargs):
        with pytest.raises(vdnn.Error) as e:
            vdnn.Net(mlp_path, **kwargs)
        assert "\n" not in str(e.value) and "--" not in str(e.value), str(e.value)
        return str(e.value)

    # Before any bf16 kernel is made, so on every CPU.
    assert refused(batch=8, precision="bf16", conv_algo="winograd") == (
        "conv_algo winograd: oneDNN 2.6 has no bf16 Winograd; with precision bf16 use auto or direct")
    # The cpu backend takes its budget from host memory at once (was: the allocation failed, or swapped).
    assert refused(batch=8, device_memory="1TiB").startswith(
        "device_memory 1.00 TiB: the cpu backend takes the budget from host memory at once, and only ")
    assert refused(batch=8, conv_algo="fft") == (
        "conv_algo: 'fft' is not a convolution algorithm; valid: auto, direct, winograd")
    assert refused(batch=8, precision="fp16") == "precision: 'fp16' is not a precision; valid: fp32, bf16"
    assert refused(batch=8, policy="sometimes") == (
        "policy: 'sometimes' is not a policy; valid: none, conv, all, dyn, auto")
    assert refused(batch=8, momentum=1.0) == "momentum 1: expected 0 to 0.999"
    assert refused(batch=8, sync="barrier") == "sync: expected event or layer, got 'barrier'"
    assert refused(batch=8, weight_decay_on="biases").startswith("weight_decay_on 'biases': expected weights")


def test_a_bf16_net_follows_the_fp32_one_in_half_the_activation_memory(mlp_path):
    try:
        bf16 = vdnn.Net(mlp_path, batch=8, precision="bf16")
    except vdnn.Error as e:  # a CPU without native bf16 is refused (tested in tests/cli)
        assert "native bfloat16" in str(e)
        pytest.skip(str(e))
    f32 = vdnn.Net(mlp_path, batch=8)
    assert (bf16.precision, f32.precision) == ("bf16", "fp32")
    bf16.set_weights(f32.weights())
    x, y = batch(np.random.default_rng(3), 8)
    np.testing.assert_allclose(bf16.infer(x), f32.infer(x), rtol=3e-2, atol=3e-2)  # logits: f32 in both
    assert bf16.forward_backward(x, y) == pytest.approx(f32.forward_backward(x, y), rel=2e-2)
    assert all(v.dtype == np.float32 for v in bf16.weights().values())  # fp32 master weights
    maps = lambda n: n.memory["peak_by_class"]["feature_maps"]
    assert maps(bf16) < maps(f32)
    with pytest.raises(vdnn.Error, match="valid: fp32, bf16"):
        vdnn.Net(mlp_path, batch=8, precision="fp16")


def test_optimizer_state_in_host_memory_trains_the_same_weights(mlp_path):
    nets = {place: vdnn.Net(mlp_path, batch=8, optimizer="adamw", clip_grad_norm=0.5, optimizer_state=place)
            for place in ("device", "host")}
    assert nets["host"].optimizer_state == "host"
    by_class = lambda n: n.memory["peak_by_class"]
    assert by_class(nets["host"])["optimizer_state"] == 0 < by_class(nets["device"])["optimizer_state"]
    x, y = batch(np.random.default_rng(3), 8)
    for step in range(3):
        for net in nets.values():
            net.train_step(x, y, 1e-3)
    assert nets["host"].weights_sha256() == nets["device"].weights_sha256()
    with pytest.raises(vdnn.Error, match="^optimizer_state 'disk': expected device"):
        vdnn.Net(mlp_path, batch=8, optimizer_state="disk")
    plan = vdnn.plan(mlp_path, batch=8, device="titan-x-maxwell", policy="none", optimizer="adamw",
                     optimizer_state="host")
    assert plan["optimizer_state"] == "host"
    chosen = vdnn.plan(mlp_path, batch=8, device="titan-x-maxwell", policy="none", optimizer="adamw",
                       optimizer_state="auto")
    assert chosen["optimizer_state"] in ("device", "host")
    assert chosen["optimizer_state_choice"].startswith("optimizer state ")


def test_adamw_keywords_state_in_memory_clipping_and_refusals(mlp_path):
    sgd = vdnn.Net(mlp_path, batch=8)
    adamw = vdnn.Net(mlp_path, batch=8, optimizer="adamw", beta2=0.95, clip_grad_norm=0.1)
    assert (sgd.optimizer, adamw.optimizer) == ("sgd", "adamw")
    by_class = lambda n: n.memory["peak_by_class"]
    assert by_class(sgd)["optimizer_state"] == by_class(sgd)["weight_grads"]
    assert by_class(adamw)["optimizer_state"] == 2 * by_class(adamw)["weight_grads"]
    x, y = batch(np.random.default_rng(3), 8)
    adamw.train_step(x, y, 1e-3)
    assert adamw.grad_norm > 0.1 and adamw.optimizer_steps == 1  # the limit clipped this step
    sgd.train_step(x, y, 0.05)
    assert sgd.grad_norm == 0.0  # no clipping asked: no norm computed
    for kwargs, message in [({"optimizer": "adam"}, "^optimizer 'adam': expected sgd"),
                            ({"optimizer": "adamw", "beta1": 1.0}, "^beta1 1: expected 0 <= beta1 < 1$"),
                            ({"optimizer": "adamw", "eps": 0.0}, "^eps 0: expected 1.17549e-38 "),
                            # The re-probe: 0 in float32, so the update divided 0 by 0 into NaN weights.
                            ({"optimizer": "adamw", "eps": 1e-320}, "^eps 1e-320: expected 1.17549e-38 "),
                            ({"clip_grad_norm": 1e-320}, "^clip_grad_norm 1e-320: expected 0 "),
                            ({"clip_grad_norm": -1.0}, "^clip_grad_norm -1: expected 0"),
                            ({"weight_decay": 1.0000001}, "^weight_decay 1.0000001: expected 0 to 1$")]:
        with pytest.raises(vdnn.Error, match=message):
            vdnn.Net(mlp_path, batch=8, **kwargs)
    assert vdnn.lr_at(0, 0, lr=1.0, total_steps=10, warmup_steps=4) == pytest.approx(0.2)
    with pytest.raises(vdnn.Error, match="^min_lr 2: expected 0 to the learning rate"):
        vdnn.lr_at(5, 0, lr=1.0, total_steps=10, min_lr=2.0)
    seen = []
    r = vdnn.train(adamw, data="synthetic", iterations=3, synthetic_samples=32, lr=1e-3, warmup_steps=2,
                   min_lr=1e-4, callback=seen.append)
    assert r["iterations"] == 3 and all(s["grad_norm"] > 0 for s in seen)
    assert [s["lr"] for s in seen][:2] == pytest.approx([1e-3 / 3, 2e-3 / 3])


def test_trains_default_learning_rate_is_the_nets_optimizers_as_the_clis(mlp_path):
    # Was: 0.05 for both, twenty times torch.optim.AdamW's 1e-3.
    for optimizer, lr in [("sgd", 0.05), ("adamw", 1e-3)]:
        seen = []
        vdnn.train(vdnn.Net(mlp_path, batch=8, optimizer=optimizer), data="synthetic", iterations=1,
                   synthetic_samples=8, schedule="constant", callback=seen.append)
        assert seen[0]["lr"] == pytest.approx(lr), optimizer
    seen = []
    vdnn.train(vdnn.Net(mlp_path, batch=8, optimizer="adamw"), data="synthetic", iterations=1, synthetic_samples=8,
               schedule="constant", lr=0.01, callback=seen.append)
    assert seen[0]["lr"] == pytest.approx(0.01)


TIED_LM = {
    "name": "tied_lm", "input": [6], "input_type": "tokens", "classes": 11,
    "layers": [
        {"name": "wte", "type": "embedding", "vocab": 11, "dim": 8},
        {"name": "ln", "type": "layer_norm"},
        {"name": "lm_head", "type": "linear", "units": "classes", "bias": False, "tied_to": "wte"},
        {"name": "loss", "type": "token_cross_entropy"}]}


def test_a_tied_pair_is_one_tensor_either_name_sets_both_and_unequal_copies_are_refused(tmp_path):
    """PyTorch's state_dict of a tied model holds the weight as wte.weight and lm_head.weight."""
    path = tmp_path / "tied_lm.json"
    path.write_text(json.dumps(TIED_LM))
    net = vdnn.Net(str(path), batch=2)
    table = np.random.default_rng(3).standard_normal((11, 8)).astype(np.float32)
    net.set_weights({"lm_head.weight": table})
    np.testing.assert_array_equal(net.weights()["wte.weight"], table)
    net.set_weights({"wte.weight": 2 * table})
    np.testing.assert_array_equal(net.weights()["wte.weight"], 2 * table)
    net.set_weights({"wte.weight": table, "lm_head.weight": table})
    np.testing.assert_array_equal(net.weights()["wte.weight"], table)
    with pytest.raises(vdnn.Error, match="'lm_head.weight' differs from 'wte.weight'"):
        net.set_weights({"wte.weight": table, "lm_head.weight": table + 1})
    np.testing.assert_array_equal(net.weights()["wte.weight"], table)
