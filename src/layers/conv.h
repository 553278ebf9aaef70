// layers/conv.h — 2-D convolution with stride, symmetric padding, groups and optional bias.
//
//   {"name": "conv1", "type": "conv", "channels": 64, "kernel": 3, "stride": 1, "pad": 1,
//    "groups": 1, "bias": true}
// Output: floor((H + 2*pad - kernel) / stride) + 1. Backward reads the input (vDNN offloads it).
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class ConvLayer : public Layer {
 public:
  struct Params {
    int64_t channels = 0, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, groups = 1;
    bool bias = true;
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
