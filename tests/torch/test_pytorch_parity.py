"""Parity with PyTorch (Debian's torch 1.13, 2 threads) for torchvision's ResNet-18 and a concat network
(two Inception blocks) at small inputs, imported from training-mode ONNX exports through the Python API:
- the same weights and batch give PyTorch's loss and every parameter gradient. The reference is float64
  PyTorch with the ReLU decisions vdnn took at inputs within fp32 rounding of zero replayed
  (relu_replay.py says why two fp32 runs cannot be compared element-wise, and how those decisions are
  found from the gradients);
- ten optimizer steps (SGD with momentum and weight decay on every parameter; AdamW after
  clip_grad_norm_ at nanoGPT's warm-up + cosine rates) give torch.optim's weights and running statistics
  when torch.optim is handed vdnn's gradients: the update, its state over ten steps and the running
  statistics of ten training forwards, checked apart from the gradients;
- the round trip: a PyTorch state_dict trains in vdnn under a device budget, its saved weights load into
  PyTorch strictly, and PyTorch's eval output equals `vdnn infer`'s.

Tolerances, each relative to the tensor's largest magnitude (an element-wise relative error is
undefined where a gradient is 0): loss 1e-5; every gradient 1e-4, with at most 3 replayed decisions;
weights after ten steps 1e-5; eval logits 1e-4."""
import warnings

import numpy as np
import pytest
import torch
import torchvision
import vdnn

from conftest import vdnn as vdnn_cli
from relu_replay import Float64Reference, explain, relative, worst

torch.set_num_threads(2)
warnings.filterwarnings("ignore", message="ONNX Preprocess - Removing mutation")  # num_batches_tracked

LR, MOMENTUM, WEIGHT_DECAY, STEPS = 1e-3, 0.9, 5e-4, 10


def resnet18():
    # 64x64, not 32x32: at 32x32 layer4's batch norm normalises 4 values per channel (1x1 maps, batch
    # 4), and that ill-conditioning alone grows float noise in the gradients to 1.1e-4 (7e-6 here).
    return torchvision.models.resnet18(num_classes=10), (3, 64, 64), 4


class Inception(torch.nn.Module):
    """GoogLeNet's block with a 3x3 average pool in the pooling branch (see concat_net)."""

    def __init__(self, cin, c1, c3r, c3, cp):
        super().__init__()
        unit = lambda i, o, k: torch.nn.Sequential(torch.nn.Conv2d(i, o, k, padding=k // 2, bias=False),
                                                   torch.nn.BatchNorm2d(o), torch.nn.ReLU())
        self.branch1 = unit(cin, c1, 1)
        self.branch2 = torch.nn.Sequential(unit(cin, c3r, 1), unit(c3r, c3, 3))
        self.branch3 = torch.nn.Sequential(torch.nn.AvgPool2d(3, 1, 1), unit(cin, cp, 1))

    def forward(self, x):
        return torch.cat([self.branch1(x), self.branch2(x), self.branch3(x)], 1)


def concat_net():
    """Two Inception blocks on a stride-2 stem: concat joins, branches of different depth, a pool
    branch. torchvision's GoogLeNet imports and trains (test_torchvision_import.py) but is no
    parity reference: its max pools over max pools make ties, which PyTorch itself breaks one way
    with oneDNN and another without (their gradients differ by up to 0.05 of a tensor's scale at
    64x64 and 0.23 at 80x80, measured), so gradients there depend on the implementation."""
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        Inception(16, 8, 8, 16, 8), Inception(32, 16, 8, 16, 8),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(40, 10))
    return model, (3, 32, 32), 4


def export(model, shape, batch, path):
    model.train()
    torch.onnx.export(model, torch.zeros(batch, *shape), path, opset_version=13, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING, input_names=["input"], output_names=["logits"])


def batch_of(shape, batch, step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(batch, *shape, generator=g), torch.randint(0, 10, (batch,), generator=g)


def torch_tensors(model):
    """Parameters and running statistics by state_dict name (num_batches_tracked left out)."""
    return {k: v.detach().numpy() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}


@pytest.fixture(params=[resnet18, concat_net], ids=["resnet18", "concat_net"])
def pair(request, tmp_path):
    """(torch model, vdnn Net with the same weights, input shape, batch)."""
    torch.manual_seed(0)
    model, shape, batch = request.param()
    path = tmp_path / "model.onnx"
    export(model, shape, batch, str(path))
    net = vdnn.Net(vdnn.load_model(str(path)), batch=batch, policy="none", momentum=MOMENTUM,
                   weight_decay=WEIGHT_DECAY, weight_decay_on="all")
    return model, net, shape, batch


def test_loss_and_every_gradient_match_pytorch(pair):
    model, net, shape, batch = pair
    x, y = batch_of(shape, batch, 0)
    model.train()
    ours = net.forward_backward(x.numpy(), y.numpy())
    found = explain(Float64Reference(model), net.gradients(), x, y, tolerance=1e-4)
    (distance, name), loss = found.distance, found.loss
    print(f"loss relative difference {abs(ours - loss) / abs(loss):.2e}; largest gradient difference "
          f"{distance:.2e} ({name}) with {len(found.flips)} ReLU decisions replayed {found.flips}, "
          f"{found.unreplayed[0]:.2e} with none")  # pytest -s shows them
    assert abs(ours - loss) <= 1e-5 * abs(loss), (ours, loss)
    assert distance <= 1e-4 and len(found.flips) <= 3, f"largest gradient difference {distance} ({name}), {found}"


def test_the_replay_does_not_explain_a_wrong_gradient(tmp_path):
    """The replayed decisions cannot hide an error: vdnn's ResNet-18 gradients with 0.1% added to one
    conv weight's, or 0.3 of the tensor's scale to one batch-norm bias element, stay that far from the
    reference."""
    torch.manual_seed(0)
    model, shape, batch = resnet18()
    path = str(tmp_path / "model.onnx")
    export(model, shape, batch, path)
    net = vdnn.Net(vdnn.load_model(path), batch=batch, policy="none")
    x, y = batch_of(shape, batch, 0)
    net.forward_backward(x.numpy(), y.numpy())
    reference = Float64Reference(model)
    for name, error in [("layer3.0.conv1.weight", 1e-3), ("layer1.0.bn1.bias", 0.3)]:
        wrong = net.gradients()
        g = wrong[name].reshape(-1)
        if name.endswith("bias"):
            g[7] += error * np.abs(g).max()
        else:
            g *= 1 + error
        found = explain(reference, wrong, x, y, tolerance=1e-4)
        print(f"{name} off by {error:g}: {found.distance[0]:.2e} with {len(found.flips)} decisions replayed")
        assert found.distance[1] == name and found.distance[0] >= 0.9 * error, found


def torch_steps(model, optimizer, net, x, y, lr_of_step, clip=None):
    """STEPS steps of vdnn's train_step beside torch.optim given vdnn's gradients of the same step (and
    model's own training forward, for its running statistics). Returns the gradient norms as
    (vdnn's, clip_grad_norm_'s) per step where clip is set."""
    norms = []
    model.train()
    for step in range(STEPS):
        lr = lr_of_step(step)
        net.train_step(x.numpy(), y.numpy(), lr)
        with torch.no_grad():
            model(x)  # training mode: the running statistics advance as vdnn's did
        grads = net.gradients()
        for name, p in model.named_parameters():
            p.grad = torch.from_numpy(grads[name].copy())
        if clip is not None:
            norms.append((net.grad_norm, torch.nn.utils.clip_grad_norm_(model.parameters(), clip).item()))
        for g in optimizer.param_groups:
            g["lr"] = lr
        optimizer.step()
    return norms


def assert_same_weights(net, model, label):
    ours, theirs = net.weights(), torch_tensors(model)
    assert set(ours) == set(theirs)
    distance = worst(ours, theirs)
    print(f"largest weight difference after {STEPS} {label} steps {distance[0]:.2e} ({distance[1]})")
    assert distance[0] <= 1e-5, f"largest weight difference after {STEPS} {label} steps: {distance}"


def test_ten_sgd_steps_match_pytorch(pair):
    """One batch, ten steps of SGD with momentum and weight decay on every parameter."""
    model, net, shape, batch = pair
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WEIGHT_DECAY)
    torch_steps(model, opt, net, *batch_of(shape, batch, 0), lambda step: LR)
    assert_same_weights(net, model, "SGD")


def test_state_dict_round_trip_through_a_budget(tmp_path):
    """PyTorch weights -> vdnn trains under `all` in a budget below what `none` needs -> saved
    weights -> PyTorch load_state_dict(strict=True) -> PyTorch eval == vdnn infer."""
    torch.manual_seed(1)
    model, shape, batch = resnet18()
    path = str(tmp_path / "resnet18.onnx")
    export(model, shape, batch, path)
    m = vdnn.load_model(path)
    train_batch = 16

    def net(policy, device_memory=None):  # direct convolutions: the same workspace every time
        return vdnn.Net(m, batch=train_batch, policy=policy, device_memory=device_memory, conv_algo="direct",
                        momentum=MOMENTUM, weight_decay=WEIGHT_DECAY, weight_decay_on="all")

    budget = net("all").arena_bytes
    assert budget < net("none").arena_bytes  # the budget is one `none` does not fit
    net = net("all", budget)
    for step in range(3):
        x, y = batch_of(shape, train_batch, step)
        net.train_step(x.numpy(), y.numpy(), LR)
    saved = str(tmp_path / "trained.safetensors")
    net.save(saved)

    from safetensors.torch import load_file
    state = load_file(saved)
    fresh = torchvision.models.resnet18(num_classes=10)
    # Every tensor of PyTorch's state_dict, its batch-norm counters too (strict=True alone would not
    # tell: BatchNorm fills in a missing num_batches_tracked), counting the 3 training forwards.
    assert sorted(state) == sorted(fresh.state_dict())
    counters = {k: int(v) for k, v in state.items() if k.endswith("num_batches_tracked")}
    assert len(counters) == 20 and set(counters.values()) == {3}, counters
    fresh.load_state_dict(state, strict=True)
    fresh.eval()
    x, _ = batch_of(shape, 8, 99)
    with torch.no_grad():
        expected = fresh(x).numpy()
    images, logits = str(tmp_path / "x.npy"), str(tmp_path / "logits.npy")
    np.save(images, x.numpy())
    vdnn_cli("infer", "--model", path, "--weights", saved, "--images", images, "--logits", logits,
             "--batch", 4)
    got = np.load(logits)
    assert got.shape == expected.shape
    print(f"vdnn infer against PyTorch eval {relative(got, expected):.2e}")
    assert relative(got, expected) <= 1e-4, relative(got, expected)


ADAMW_LR, ADAMW_MIN_LR, ADAMW_WARMUP, ADAMW_DECAY, ADAMW_BETAS, ADAMW_EPS, CLIP = 2e-3, 2e-4, 3, 0.1, (0.9, 0.95), 1e-8, 0.5


def mlp():
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(48, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)), (3, 4, 4), 8


def nanogpt_lr(it):
    """nanoGPT's get_lr with lr_decay_iters = STEPS: what vdnn.lr_at gives for the same settings."""
    if it < ADAMW_WARMUP:
        return ADAMW_LR * (it + 1) / (ADAMW_WARMUP + 1)
    ratio = (it - ADAMW_WARMUP) / (STEPS - ADAMW_WARMUP)
    return ADAMW_MIN_LR + 0.5 * (1.0 + np.cos(np.pi * ratio)) * (ADAMW_LR - ADAMW_MIN_LR)


@pytest.mark.parametrize("network,decay_on", [(mlp, "weights"), (concat_net, "all")], ids=["mlp", "concat_net"])
def test_ten_adamw_steps_with_clipping_and_warmup_match_pytorch(tmp_path, network, decay_on):
    """torch.optim.AdamW (foreach=False) after clip_grad_norm_, at nanoGPT's warm-up + cosine rates,
    against vdnn's AdamW with clip_grad_norm: 10 steps on one batch. decay_on 'weights' is vdnn's rule
    (conv and fc weights decay, biases and batch-norm parameters not: two PyTorch parameter groups),
    'all' PyTorch's default."""
    torch.manual_seed(0)
    model, shape, batch = network()
    path = tmp_path / "model.onnx"
    export(model, shape, batch, str(path))
    net = vdnn.Net(vdnn.load_model(str(path)), batch=batch, policy="none", optimizer="adamw",
                   beta1=ADAMW_BETAS[0], beta2=ADAMW_BETAS[1], eps=ADAMW_EPS, weight_decay=ADAMW_DECAY,
                   weight_decay_on=decay_on, clip_grad_norm=CLIP)
    if decay_on == "all":
        groups = [{"params": list(model.parameters())}]
    else:  # conv and fc weights: the parameters of more than one dimension
        groups = [{"params": [p for p in model.parameters() if p.dim() > 1]},
                  {"params": [p for p in model.parameters() if p.dim() <= 1], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=ADAMW_LR, betas=ADAMW_BETAS, eps=ADAMW_EPS, weight_decay=ADAMW_DECAY,
                            foreach=False)

    def lr_of_step(step):
        lr = vdnn.lr_at(step, 0, lr=ADAMW_LR, schedule="cosine", total_steps=STEPS, warmup_steps=ADAMW_WARMUP,
                        min_lr=ADAMW_MIN_LR)
        assert abs(lr - nanogpt_lr(step)) <= 1e-15, (step, lr, nanogpt_lr(step))
        return lr

    norms = torch_steps(model, opt, net, *batch_of(shape, batch, 0), lr_of_step, clip=CLIP)
    for step, (ours, theirs) in enumerate(norms):
        assert abs(ours - theirs) <= 1e-5 * theirs, (step, ours, theirs)
    assert any(theirs > CLIP for _, theirs in norms), "the limit must clip some steps for the test to check clipping"
    assert net.optimizer_steps == STEPS
    assert_same_weights(net, model, "AdamW")
