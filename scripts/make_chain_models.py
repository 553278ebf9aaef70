#!/usr/bin/env python3
"""scripts/make_chain_models.py — the long chains docs/reliability.md times (issue 42): an ONNX chain
of N ReLUs (x [1, 4] -> N x Relu -> Gemm to 2 classes), an ONNX chain of min(N, 16000) Pad+Conv 3x3
pairs (x [1, 1, 4, 4] -> ... -> Flatten -> Gemm), and CliPlanScale's JSON chain of N ReLUs
(input [3, 8, 8], 10 classes). Needs the onnx package (Debian's python3-onnx).

  /usr/bin/python3 scripts/make_chain_models.py 100000 /tmp/chains
  time build/vdnn models --model /tmp/chains/relu_chain_100000.onnx
  time build/vdnn plan --model /tmp/chains/chain100000.json --batch 4 --device h200
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def zeros(name, shape):
    return numpy_helper.from_array(np.zeros(shape, np.float32), name)


def save(path, nodes, inits, input_shape):
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def relu_chain(n, path):
    nodes, x = [], "x"
    for i in range(n):
        nodes.append(helper.make_node("Relu", [x], [f"r{i}"], name=f"/relu{i}"))
        x = f"r{i}"
    nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"], ["logits"], name="/fc", transB=1))
    save(path, nodes, [zeros("fc.weight", (2, 4)), zeros("fc.bias", (2,))], [1, 4])


def pad_conv_chain(n, path):
    nodes, inits, x = [], [], "x"
    for i in range(n):
        inits.append(zeros(f"c{i}.weight", (1, 1, 3, 3)))
        nodes.append(helper.make_node("Pad", [x], [f"p{i}"], name=f"/pad{i}", pads=[0, 0, 1, 1, 0, 0, 1, 1]))
        nodes.append(helper.make_node("Conv", [f"p{i}", f"c{i}.weight"], [f"c{i}"], name=f"/conv{i}",
                                      kernel_shape=[3, 3]))
        x = f"c{i}"
    nodes.append(helper.make_node("Flatten", [x], ["f"], name="/flatten", axis=1))
    nodes.append(helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], name="/fc", transB=1))
    save(path, nodes, inits + [zeros("fc.weight", (2, 16)), zeros("fc.bias", (2,))], [1, 1, 4, 4])


def json_chain(n, path):
    layers = [{"type": "relu", "name": f"relu{i}"} for i in range(n)]
    layers += [{"type": "fc", "name": "fc", "units": "classes"}, {"type": "softmax_cross_entropy", "name": "loss"}]
    with open(path, "w") as f:
        json.dump({"name": f"chain{n}", "input": [3, 8, 8], "classes": 10, "layers": layers}, f)


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    relu_chain(n, os.path.join(out, f"relu_chain_{n}.onnx"))
    pad_conv_chain(min(n, 16000), os.path.join(out, f"pad_conv_{min(n, 16000)}.onnx"))
    json_chain(n, os.path.join(out, f"chain{n}.json"))


if __name__ == "__main__":
    main()
