#include "interop/onnx_pads.h"

#include <algorithm>

#include "vdnn/error.h"

namespace vdnn {

OnnxPads onnx_pads(OnnxNodeReader& node, const Shape& in, const std::vector<int64_t>& kernel,
                   const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  const std::string auto_pad = node.text("auto_pad", "NOTSET");
  OnnxPads p;
  if (auto_pad == "NOTSET") {
    const std::vector<int64_t> pads = node.ints("pads", {0, 0, 0, 0}, 4);
    for (int64_t v : pads)
      if (v < 0) node.fail(VDNN_MSG("pads must be >= 0, got " << v));
    p.begin = {pads[0], pads[1]};
    p.end = {pads[2], pads[3]};
    return p;
  }
  if (auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    node.fail(VDNN_MSG("auto_pad '" << auto_pad << "' is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER"));
  if (node.has("pads")) node.fail(VDNN_MSG("has both pads and auto_pad " << auto_pad << "; ONNX allows one"));
  if (auto_pad == "VALID") return p;
  p.same = true;
  if (!in.is_image()) node.fail(VDNN_MSG("auto_pad " << auto_pad << " needs an image input, got " << in.to_string()));
  const std::array<int64_t, 2> size{in.height(), in.width()};
  constexpr int64_t kMax = int64_t{1} << 31;  // no product below overflows
  for (int d = 0; d < 2; ++d) {
    for (const auto* v : {&kernel, &strides, &dilations})
      if ((*v)[d] < 1 || (*v)[d] > kMax) node.fail("kernel_shape, strides and dilations must be in [1, 2^31]");
    const int64_t span = dilations[d] * (kernel[d] - 1) + 1;
    const int64_t out = size[d] / strides[d] + (size[d] % strides[d] != 0);  // ceil(size / stride)
    const int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + span - size[d]);
    p.begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    p.end[d] = total - p.begin[d];
  }
  return p;
}

}  // namespace vdnn
