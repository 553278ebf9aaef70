// interop/onnx_pads.h — the padding of an ONNX Conv or pooling node, from its pads or its auto_pad.
//
// Model: ONNX gives a window's padding either as pads [top, left, bottom, right] (auto_pad NOTSET,
// the default) or as auto_pad: VALID (none) or SAME_UPPER / SAME_LOWER, where the output is
// ceil(input / stride) and the padding that takes, max(0, (out - 1) * stride + span - input) with
// span = dilation * (kernel - 1) + 1, is split in two with the odd cell at the end (SAME_UPPER,
// TensorFlow's "SAME") or at the start (SAME_LOWER). vdnn plans fixed shapes, so the importer
// resolves auto_pad to explicit pads, asymmetric ones included (conv's and pooling's pad_end).
//
//   OnnxPads p = onnx_pads(node, Shape{3, 32, 32}, {2, 2}, {1, 1}, {1, 1});  // reads "pads", "auto_pad"
//   // MaxPool(kernel 2, stride 1, SAME_UPPER) on 32x32: p.begin = {0, 0}, p.end = {1, 1}
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/shape.h"
#include "interop/onnx_node_reader.h"

namespace vdnn {

struct OnnxPads {
  std::array<int64_t, 2> begin{0, 0}, end{0, 0};  // {top, left}, {bottom, right}
  bool same = false;                              // from auto_pad SAME_UPPER or SAME_LOWER
};

// The node's padding for an image input `in` [C, H, W] and the window's kernel, strides and
// dilations {h, w}; throws naming the node for an unknown auto_pad, pads beside an auto_pad other
// than NOTSET, a negative pad, or (for SAME) a kernel, stride or dilation outside [1, 2^31].
OnnxPads onnx_pads(OnnxNodeReader& node, const Shape& in, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations);

}  // namespace vdnn
