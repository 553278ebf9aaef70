"""A token model from Python: x holds token ids as float32 (n, T), y a label per token (n, T),
infer gives (n, T, V) logits, and the loss is PyTorch's cross_entropy over the tokens not ignored
(design/sequences.md)."""
import json

import numpy as np
import pytest

import vdnn

T, V = 6, 10


@pytest.fixture(scope="module")
def lm_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "lm.json"
    path.write_text(json.dumps({
        "name": "lm", "input": [T], "input_type": "tokens", "classes": V,
        "layers": [{"name": "wte", "type": "embedding", "vocab": V, "dim": 8},
                   {"name": "wpe", "type": "position_embedding", "max_positions": T},
                   {"name": "ln", "type": "layer_norm"},
                   {"name": "head", "type": "linear", "units": V},
                   {"name": "loss", "type": "token_cross_entropy"}]}))
    return str(path)


def test_labels_per_token_and_logits_per_token(lm_path):
    net = vdnn.Net(lm_path, batch=4)
    rng = np.random.default_rng(0)
    x = rng.integers(0, V, (3, T)).astype(np.float32)
    y = rng.integers(0, V, (3, T))
    y[1, 2] = -100  # ignored, as PyTorch's default ignore_index
    z = net.infer(x).astype(np.float64)
    assert z.shape == (3, T, V)
    p = np.exp(z - z.max(2, keepdims=True))
    p /= p.sum(2, keepdims=True)
    kept = y != -100
    expected = -np.log(p[kept, y[kept]]).mean()
    assert net.forward_backward(x, y) == pytest.approx(expected, rel=1e-5)


def test_bad_labels_and_ids_are_vdnn_errors(lm_path):
    net = vdnn.Net(lm_path, batch=2)
    x = np.zeros((2, T), np.float32)
    with pytest.raises(vdnn.Error, match=r"one label per token"):
        net.forward_backward(x, np.zeros(2, np.int64))
    y = np.zeros((2, T), np.int64)
    y[1, 3] = V
    with pytest.raises(vdnn.Error, match=r"y\[1, 3\] = 10.*ignore_index -100"):
        net.forward_backward(x, y)
    x[0, 4] = V
    with pytest.raises(vdnn.Error, match=r"token id 10 at sample 0, position 4"):
        net.forward_backward(x, np.zeros((2, T), np.int64))
