"""Writes vdnn model dicts in the layout of the hand-written model files (one layer per line).

Shared by generate_resnet.py and generate_vgg_deep.py:
    from model_json import dump
    open("resnet50.json", "w").write(dump(model))
"""
import json


def dump(model):
    """One layer per line, as the hand-written model files."""
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}"
                      for k, v in model.items() if k != "layers")
    body = ",\n".join("    " + json.dumps(layer) for layer in model["layers"])
    return "{\n" + head + ",\n  \"layers\": [\n" + body + "\n  ]\n}\n"
