// layers/gelu.h — the GELU activation, exact or by its tanh approximation (PyTorch's nn.GELU).
//
//   {"name": "act", "type": "gelu", "approximate": "none"}     "none": x * Phi(x) (erf); "tanh":
//                                                             0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3)))
// Any shape in, the same out. Its backward reads its input (gelu' is a function of x, not of y),
// so unlike ReLU it never runs in place.
//
//   LayerConfig cfg(nlohmann::json{{"approximate", "tanh"}}, "x.json: layer 'act'");
//   std::unique_ptr<Layer> act = GeluLayer::parse("act", cfg);
//   Shape out = act->infer_shape({Shape{32, 64}});   // 32x64
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class GeluLayer : public Layer {
 public:
  GeluLayer(std::string name, bool tanh) : Layer(std::move(name), "gelu", LayerKind::kActivation), tanh_(tanh) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    return std::make_unique<GeluLayer>(name, cfg.text("approximate", "none", {"none", "tanh"}) == "tanh");
  }
  bool tanh_approximation() const { return tanh_; }
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return 8.0 * static_cast<double>(out.elements());  // a polynomial and an erf or tanh per element
  }

 private:
  bool tanh_;
};

}  // namespace vdnn
