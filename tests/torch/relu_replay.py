"""A float64 reference for gradients, with ReLU decisions replayed: what "the same gradient" means for a
network with kinks.

The model. A ReLU network's gradient is piecewise smooth: inside one piece (one on/off pattern of every
ReLU) it is a smooth function of the weights and the input, and two fp32 implementations agree to float
rounding; across a piece's edge it jumps. A ReLU whose input lies within fp32 rounding of zero can be
decided either way by two correct fp32 implementations, and a ResNet-18 at 64x64, batch 4, has
hundreds of thousands of ReLU inputs; on an AVX2 machine vdnn decided one of them (float64 value -1.7e-6)
the other way from PyTorch, and that one decision moved the gradients of the layers before it by 0.10 of
a tensor's scale (test_pytorch_parity.py prints both figures under pytest -s). Comparing two fp32 runs
element-wise therefore tests luck, not correctness.

So the reference is float64 PyTorch (exact to ~1e-15 against fp32's 1e-6), and where the implementation
under test decided a near-zero ReLU the other way, the reference takes the same decision. Those
decisions are found from the gradients alone: a decision flipped at element e of the ReLU after batch
norm B, channel c, changes d loss / d B.bias[c] by exactly +-(d loss / d relu_output[e]); `explain`
walks the ReLUs from the loss down, and at each adopts the near-zero element whose flip accounts for
the residual in its batch norm's bias gradient, then reruns the reference. Only elements whose float64
input is within `margin` of zero (relative to that ReLU input's largest magnitude) may be flipped, and
only a few, so no genuine error can be explained away: the result is a statement one can check —
"these gradients are float64 backprop's, to 1e-4, with these ReLU inputs of magnitude <= 1e-6 decided
the other way".

    ref = Float64Reference(torch_model)            # every nn.ReLU child after a BatchNorm2d
    found = explain(ref, vdnn_gradients, x, y, tolerance=1e-4)
    assert found.distance[0] <= 1e-4 and len(found.flips) <= 3
"""
import copy
from collections import namedtuple

import numpy as np
import torch


def relative(a, b):
    """max |a - b| / max |b|: the error relative to the tensor's scale."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def worst(ours, theirs):
    """(largest relative difference over the tensors, its name)."""
    return max((relative(ours[k], theirs[k]), k) for k in theirs)


class _Record:
    """One forward's ReLU calls: inputs, the gradients at their outputs, the batch norm before each."""

    def __init__(self, flips):
        self.flips, self.inputs, self.output_grads, self.norm_before, self.last_norm = flips, [], [], [], None


class _ReplayedReLU(torch.nn.Module):
    """x * mask with mask = x > 0, inverted at the flat indices record.flips[call] names."""

    def __init__(self, record):
        super().__init__()
        self.record = record

    def forward(self, x):
        r = self.record
        call = len(r.inputs)
        r.inputs.append(x.detach())
        r.norm_before.append(r.last_norm)
        r.output_grads.append(None)
        mask = (x > 0).flatten()
        if call in r.flips:
            index = torch.tensor(sorted(r.flips[call]))
            mask[index] = ~mask[index]
        out = x * mask.view_as(x)
        out.register_hook(lambda g: r.output_grads.__setitem__(call, g.detach()))
        return out


class Float64Reference:
    """A float64 copy of a model whose every nn.ReLU child (a module may call one several times, as
    torchvision's BasicBlock does) can replay decisions."""

    def __init__(self, model):
        self.model = model

    def gradients(self, x, y, flips):
        """(loss, {name: d loss / d parameter}, the forward's _Record) in float64, with flips:
        {ReLU call: set of flat element indices decided the other way}."""
        copy64 = copy.deepcopy(self.model).double()
        record = _Record(flips)
        for name, module in list(copy64.named_modules()):
            if isinstance(module, torch.nn.BatchNorm2d):
                module.register_forward_hook(lambda m, i, o, name=name: setattr(record, "last_norm", name))
            for child_name, child in list(module.named_children()):
                if isinstance(child, torch.nn.ReLU):
                    setattr(module, child_name, _ReplayedReLU(record))
        copy64.zero_grad()
        loss = torch.nn.functional.cross_entropy(copy64(x.double()), y)
        loss.backward()
        return loss.item(), {k: p.grad.numpy().copy() for k, p in copy64.named_parameters()}, record


def _flip_explaining(ours, theirs, record, call, margin, candidates_per_channel=20):
    """The near-zero element of ReLU `call` whose flipped decision best accounts for the residual of
    its batch norm's bias gradient (at least half of it, in one of the 3 channels with the largest
    residual), or None."""
    bias = f"{record.norm_before[call]}.bias"
    residual = ours[bias] - theirs[bias]
    x, upstream = record.inputs[call], record.output_grads[call]
    if upstream is None:
        return None
    near_zero = margin * float(x.abs().max())
    flat_index = torch.arange(x.numel()).view_as(x)
    best = None
    for channel in np.argsort(-np.abs(residual))[:3]:
        r = float(residual[channel])
        if abs(r) <= 1e-6 * max(float(np.abs(theirs[bias]).max()), 1e-30):
            break
        values, indices = x[:, channel].flatten(), flat_index[:, channel].flatten()
        for j in torch.argsort(values.abs())[:candidates_per_channel].tolist():
            if abs(float(values[j])) > near_zero:
                break
            e = int(indices[j])
            on = bool(x.flatten()[e] > 0)
            change = (-1.0 if on else 1.0) * float(upstream.flatten()[e])  # what the flip adds to d bias[c]
            gain = abs(r) - abs(r - change)
            if gain > 0.5 * abs(r) and (best is None or gain > best[0]):
                best = (gain, e)
    return None if best is None else best[1]


Explanation = namedtuple("Explanation", "flips distance loss unreplayed")
Explanation.__doc__ = """flips: [(ReLU call, flat element, float64 input)] replayed; distance: (largest relative
difference, tensor) with them; loss: the reference's; unreplayed: the distance with none replayed."""


def explain(reference, ours, x, y, tolerance, margin=3e-5, max_flips=8):
    """Replays, from the loss down, the near-zero ReLU decisions `ours` (gradients by parameter name)
    took the other way, until it matches the float64 reference within `tolerance` or no decision
    explains the rest. margin: how near zero (relative to the ReLU input's largest magnitude) a decision
    may be replayed: 3e-5, some 30 times float32's rounding of one value (6e-8 relative), for the error
    a deep block's input gathers through the layers before it. Returns
    an Explanation."""
    flips, found, unreplayed = {}, [], None
    while True:
        loss, theirs, record = reference.gradients(x, y, flips)
        distance = worst(ours, theirs)
        unreplayed = unreplayed or distance
        if distance[0] <= tolerance or len(found) >= max_flips:
            return Explanation(found, distance, loss, unreplayed)
        for call in reversed(range(len(record.inputs))):
            e = _flip_explaining(ours, theirs, record, call, margin)
            if e is not None:
                flips.setdefault(call, set()).add(e)
                found.append((call, e, float(record.inputs[call].flatten()[e])))
                break
        else:
            return Explanation(found, distance, loss, unreplayed)
