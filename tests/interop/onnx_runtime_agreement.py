"""ONNX Runtime's side of tests/interop/test_onnx_export.cc: runs each ONNX file that
`vdnn export --onnx` wrote on the inputs `vdnn infer --images` read, and reports how far its outputs
are from the logits `vdnn infer --logits` wrote.

Usage: python onnx_runtime_agreement.py MODEL.onnx IMAGES.npy LOGITS.npy [MODEL.onnx IMAGES.npy LOGITS.npy ...]
Prints one JSON object: {"MODEL.onnx": {"max_abs_diff": d, "max_abs_logit": m, "shape": [n, k]}, ...}.
CPU execution provider, two intra-op threads (the test machine has two cores). The exported batch
is fixed, so the images are run in chunks of it (the last one padded with zeros and cut off).
"""
import json
import sys

import numpy as np
import onnxruntime as ort


def run(model_path, images):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    (inp,) = session.get_inputs()
    (out,) = session.get_outputs()
    assert inp.name == "input" and out.name == "logits", (inp.name, out.name)
    n = inp.shape[0]
    chunks = []
    for start in range(0, len(images), n):
        chunk = images[start:start + n]
        pad = n - len(chunk)
        if pad:
            chunk = np.concatenate([chunk, np.zeros((pad,) + chunk.shape[1:], np.float32)])
        chunks.append(session.run(["logits"], {"input": chunk})[0][:n - pad])
    return np.concatenate(chunks)


def main(args):
    if len(args) % 3 or not args:
        sys.exit(__doc__)
    report = {}
    for model_path, images_path, logits_path in zip(args[0::3], args[1::3], args[2::3]):
        images = np.load(images_path)
        vdnn_logits = np.load(logits_path)
        ours = run(model_path, images)
        if ours.shape != vdnn_logits.shape:
            sys.exit(f"{model_path}: ONNX Runtime gives {ours.shape}, vdnn infer {vdnn_logits.shape}")
        report[model_path] = {
            "max_abs_diff": float(np.abs(ours - vdnn_logits).max()),
            "max_abs_logit": float(np.abs(vdnn_logits).max()),
            "shape": list(ours.shape),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
