#!/usr/bin/env python3
"""Writes GPT-style language models (Radford et al. 2019; nanoGPT's layout) as vdnn model files.

Tokens [T] -> embedding `transformer.wte` [vocab, C] -> + learned positions `transformer.wpe`
[T, C] -> n_layer pre-norm blocks -> layer_norm `transformer.ln_f` -> linear `lm_head` (no bias,
its weight tied to `transformer.wte`'s, as GPT-2 and nanoGPT tie them) -> token_cross_entropy. A block: x + c_proj(attention(c_attn(ln_1(x)))), then
x + mlp.c_proj(gelu(mlp.c_fc(ln_2(x)))), with c_attn C -> 3C (q|k|v), the attention causal over
`n_head` heads, the MLP 4C wide; GELU exact for gpt_char (nanoGPT's nn.GELU()), tanh for GPT-2
(its "gelu_new"). The vocabulary is the model's "classes" (the
embedding's rows and lm_head's units alike), so `--classes 73` fits a text of 73 characters. Layers are named as nanoGPT's GPT names its modules,
so a vdnn state_dict holds nanoGPT's keys ("transformer.h.0.attn.c_attn.weight", Linear's
[out, in] layout). No dropout layers: runs compare with PyTorch step by step (add "dropout"
layers after the attention, c_proj and the position embedding to regularise).

The GPT-2 sizes hold the published parameter counts (124,439,808 for gpt2, the tied head counted
once); gpt_char has biases (nanoGPT's shakespeare_char config turns them off).

    python3 models/generate_gpt.py          # rewrites the files next to this script
"""
import os

from model_json import dump

# name: (n_layer, n_head, n_embd, block_size, vocab, GELU approximation)
CONFIGS = {
    "gpt_char": (6, 6, 384, 256, 65, "none"),  # nanoGPT's shakespeare_char: characters, T = 256
    "gpt2": (12, 12, 768, 1024, 50257, "tanh"),  # GPT-2 small, 124M
    "gpt2-medium": (24, 16, 1024, 1024, 50257, "tanh"),
    "gpt2-large": (36, 20, 1280, 1024, 50257, "tanh"),
    "gpt2-xl": (48, 25, 1600, 1024, 50257, "tanh"),
}


def block(i, n_head, n_embd, x, implementation=None, gelu="none"):
    """One pre-norm transformer block reading value `x`; returns its layers and its output.
    `implementation`: the attention's ("materialized", vdnn's default, or "fused")."""
    p = f"transformer.h.{i}."
    layers = [
        {"name": p + "ln_1", "type": "layer_norm", "inputs": [x]},
        {"name": p + "attn.c_attn", "type": "linear", "units": 3 * n_embd},
        {"name": p + "attn.attention", "type": "attention", "heads": n_head, "causal": True},
        {"name": p + "attn.c_proj", "type": "linear", "units": n_embd},
        {"name": p + "attn.residual", "type": "add", "inputs": [x, p + "attn.c_proj"]},
        {"name": p + "ln_2", "type": "layer_norm"},
        {"name": p + "mlp.c_fc", "type": "linear", "units": 4 * n_embd},
        {"name": p + "mlp.gelu", "type": "gelu", "approximate": gelu},
        {"name": p + "mlp.c_proj", "type": "linear", "units": n_embd},
        {"name": p + "mlp.residual", "type": "add", "inputs": [p + "attn.residual", p + "mlp.c_proj"]},
    ]
    if implementation:
        layers[2]["implementation"] = implementation
    return layers, p + "mlp.residual"


def gpt(name, n_layer, n_head, n_embd, block_size, vocab, implementation=None, gelu="none"):
    """The model dict (tests/torch/test_gpt_parity.py builds its small GPT with it too)."""
    layers = [
        {"name": "transformer.wte", "type": "embedding", "vocab": "classes", "dim": n_embd},
        {"name": "transformer.wpe", "type": "position_embedding", "max_positions": block_size},
    ]
    x = "transformer.wpe"
    for i in range(n_layer):
        more, x = block(i, n_head, n_embd, x, implementation, gelu)
        layers += more
    layers += [
        {"name": "transformer.ln_f", "type": "layer_norm", "inputs": [x]},
        {"name": "lm_head", "type": "linear", "units": "classes", "bias": False, "tied_to": "transformer.wte"},
        {"name": "loss", "type": "token_cross_entropy"},
    ]
    return {"name": name, "input": [block_size], "input_type": "tokens", "classes": vocab, "layers": layers}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, (n_layer, n_head, n_embd, block_size, vocab, gelu) in CONFIGS.items():
        with open(os.path.join(here, name + ".json"), "w") as f:
            f.write(dump(gpt(name, n_layer, n_head, n_embd, block_size, vocab, gelu=gelu)))


if __name__ == "__main__":
    main()
