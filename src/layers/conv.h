// layers/conv.h — 2-D convolution with stride, dilation, padding, groups and optional bias.
//
//   {"name": "conv1", "type": "conv", "channels": 64, "kernel": 3, "stride": 1, "pad": 1,
//    "groups": 1, "bias": true}
//   optional: "dilation": 2 (or [h, w]; default 1), "pad_end": [1, 0] (bottom, right; default "pad")
// "kernel", "stride", "dilation", "pad" and "pad_end" are each an int or a pair [h, w]; "pad" is
// the top/left padding, "pad_end" the bottom/right (ONNX's pads = [pad..., pad_end...]). Output:
// floor((H + pad + pad_end - dilation*(kernel-1) - 1) / stride) + 1, as PyTorch and ONNX.
// Backward reads the input (vDNN offloads it). The CUDA backend (cuDNN) takes only pad_end == pad.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class ConvLayer : public Layer {
 public:
  struct Params {
    int64_t channels = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, groups = 1;
    bool bias = true;
    int64_t dh = 1, dw = 1;            // dilation: taps d apart (1: dense)
    int64_t ph_end = -1, pw_end = -1;  // bottom / right padding; -1: as ph / pw (symmetric)
    int64_t pb() const { return ph_end < 0 ? ph : ph_end; }
    int64_t pr() const { return pw_end < 0 ? pw : pw_end; }
    bool symmetric_padding() const { return pb() == ph && pr() == pw; }
    // The extent a kernel covers: dilation * (kernel - 1) + 1.
    int64_t span_h() const { return dh * (kh - 1) + 1; }
    int64_t span_w() const { return dw * (kw - 1) + 1; }
  };
  ConvLayer(std::string name, Params p) : Layer(std::move(name), "conv", LayerKind::kConv), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg);

  const Params& p() const { return p_; }
  Shape infer_shape(const std::vector<Shape>& in) const override;
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override;
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override;

 private:
  Params p_;
};

}  // namespace vdnn
