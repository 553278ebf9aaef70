#!/usr/bin/env python3
"""fuzz/make_onnx_seeds.py — writes the seeds of fuzz/corpus/onnx_import: small ONNX models built
with the onnx package's helpers (Debian's python3-onnx), one per family of operators the importer
translates, so the fuzzer starts from inputs that reach every handler, and two a hostile probe found
(issue 42): names that are not UTF-8, and float attributes that are NaN.

  /usr/bin/python3 fuzz/make_onnx_seeds.py fuzz/corpus/onnx_import
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def tensor(name, shape, offset=0.0):
    values = offset + 0.1 * np.sin(np.arange(int(np.prod(shape)), dtype=np.float32))
    return numpy_helper.from_array(values.reshape(shape).astype(np.float32), name)


def model(nodes, inits, shape, output="logits", opset=13):
    graph = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def conv_bn_classifier():
    return model([
        helper.make_node("Conv", ["x", "c.weight", "c.bias"], ["c"], "conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["b", "m", "v"], "bn", epsilon=1e-5, momentum=0.9),
        helper.make_node("Relu", ["b"], ["r"], "relu"),
        helper.make_node("MaxPool", ["r"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], "gap"),
        helper.make_node("Flatten", ["g"], ["f"], "flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["logits"], "fc", transB=1),
    ], [tensor("c.weight", [4, 3, 3, 3]), tensor("c.bias", [4]), tensor("bn.weight", [4], 1.0),
        tensor("bn.bias", [4]), tensor("bn.running_mean", [4]), tensor("bn.running_var", [4], 1.0),
        tensor("fc.weight", [10, 4]), tensor("fc.bias", [10])], [2, 3, 8, 8])


def branches():
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], dtype=np.int64), "pads")
    ratio = numpy_helper.from_array(np.array(0.5, dtype=np.float32), "ratio")
    training = numpy_helper.from_array(np.array(True), "training")
    lo = numpy_helper.from_array(np.array(0, dtype=np.float32), "lo")
    hi = numpy_helper.from_array(np.array(6, dtype=np.float32), "hi")
    shape = numpy_helper.from_array(np.array([2, -1], dtype=np.int64), "shape")
    return model([
        helper.make_node("Pad", ["x", "pads"], ["xp"], "pad"),
        helper.make_node("Conv", ["xp", "a.weight"], ["a"], "a", group=2),
        helper.make_node("Conv", ["x", "b.weight"], ["b"], "b", dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Concat", ["a", "b"], ["cat"], "cat", axis=1),
        helper.make_node("Clip", ["cat", "lo", "hi"], ["six"], "relu6"),
        helper.make_node("LRN", ["six"], ["n"], "lrn", size=3, alpha=1e-4, beta=0.75, bias=2.0),
        helper.make_node("AveragePool", ["n"], ["ap"], "avg", kernel_shape=[3, 3], strides=[1, 1],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("Add", ["ap", "n"], ["sum"], "add"),
        helper.make_node("Identity", ["sum"], ["id"], "id"),
        helper.make_node("Reshape", ["id", "shape"], ["flat"], "reshape"),
        helper.make_node("Dropout", ["flat", "ratio", "training"], ["d", "mask"], "drop"),
        helper.make_node("MatMul", ["d", "w"], ["mm"], "matmul"),
        helper.make_node("Add", ["mm", "bias"], ["logits"], "bias"),
    ], [pads, ratio, training, lo, hi, shape, tensor("a.weight", [4, 1, 3, 3]), tensor("b.weight", [4, 2, 3, 3]),
        tensor("w", [8 * 6 * 6, 3]), tensor("bias", [3])], [2, 2, 6, 6])


def old_opset():
    """Opset 9, which the importer converts with libonnx's version converter: Pad's and Clip's
    attributes become inputs, Softmax's axis gets opset 13's meaning (after shape inference)."""
    return model([
        helper.make_node("Conv", ["x", "c.weight", "c.bias"], ["c"], "conv", kernel_shape=[3, 3], auto_pad="SAME_UPPER",
                         strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"], "relu"),
        helper.make_node("Pad", ["r"], ["rp"], "pad", pads=[0, 0, 0, 1, 0, 0, 1, 0], mode="constant", value=0.0),
        helper.make_node("MaxPool", ["rp"], ["p"], "pool", kernel_shape=[2, 2], strides=[1, 1]),
        helper.make_node("Clip", ["p"], ["six"], "relu6", min=0.0, max=6.0),
        helper.make_node("Dropout", ["six"], ["d"], "drop", ratio=0.3),
        helper.make_node("Flatten", ["d"], ["f"], "flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["g"], "fc", transB=1, alpha=0.5, beta=2.0),
        helper.make_node("Softmax", ["g"], ["logits"], "softmax", axis=1),
    ], [tensor("c.weight", [4, 3, 3, 3]), tensor("c.bias", [4]), tensor("fc.weight", [10, 4 * 5 * 5]),
        tensor("fc.bias", [1])], [2, 3, 9, 9], opset=9)


def same_pads():
    """auto_pad SAME_UPPER / SAME_LOWER on a Conv and both pools (asymmetric pads), Clip without
    bounds, Concat on the last axis of [N, K] values, Flatten on axis -3."""
    return model([
        helper.make_node("Conv", ["x", "c.weight"], ["c"], "conv", kernel_shape=[3, 3], auto_pad="SAME_LOWER",
                         strides=[2, 2]),
        helper.make_node("MaxPool", ["c"], ["m"], "max", kernel_shape=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("AveragePool", ["m"], ["a"], "avg", kernel_shape=[3, 3], strides=[2, 2],
                         auto_pad="SAME_LOWER", count_include_pad=1),
        helper.make_node("Clip", ["a"], ["id"], "clip"),
        helper.make_node("Flatten", ["id"], ["f"], "flatten", axis=-3),
        helper.make_node("Gemm", ["f", "u.weight"], ["u"], "u", transB=1),
        helper.make_node("Gemm", ["f", "v.weight"], ["v"], "v", transB=1),
        helper.make_node("Concat", ["u", "v"], ["logits"], "cat", axis=-1),
    ], [tensor("c.weight", [4, 3, 3, 3]), tensor("u.weight", [3, 16]), tensor("v.weight", [2, 16])], [2, 3, 8, 7])


def names_not_utf8():
    """conv_bn_classifier with a node and an initializer prefix named with bytes that are not UTF-8
    (protobuf's Python API takes only str: same-length placeholders are replaced in the bytes)."""
    m = conv_bn_classifier()
    m.graph.node[2].name = "RELU_NAME"
    for t in m.graph.initializer:
        t.name = t.name.replace("c.", "CONV_NAME.", 1) if t.name.startswith("c.") else t.name
    m.graph.node[0].input[1] = "CONV_NAME.weight"
    m.graph.node[0].input[2] = "CONV_NAME.bias"
    data = m.SerializeToString()
    data = data.replace(b"RELU_NAME", b"r\xffelu\xc3\xa9\xed\xa0")  # same lengths: 9 bytes each
    return data.replace(b"CONV_NAME", b"c\xfe\x80conv\xc0\xaf")


def nan_attributes():
    """branches with NaN where floats are read: LRN's alpha and the Dropout ratio input (issue 42:
    NaN passed every range check)."""
    m = branches()
    for node in m.graph.node:
        for a in node.attribute:
            if a.name == "alpha":
                a.f = float("nan")
    for t in m.graph.initializer:
        if t.name == "ratio":
            t.CopyFrom(numpy_helper.from_array(np.array(np.nan, dtype=np.float32), "ratio"))
    return m.SerializeToString()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = [("conv_bn_classifier", conv_bn_classifier().SerializeToString()),
             ("branches", branches().SerializeToString()), ("names_not_utf8", names_not_utf8()),
             ("nan_attributes", nan_attributes()),
             ("old_opset", old_opset().SerializeToString()), ("same_pads", same_pads().SerializeToString())]
    for name, data in seeds:
        with open(os.path.join(out, f"{name}.onnx"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
