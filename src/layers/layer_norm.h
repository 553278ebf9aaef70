// layers/layer_norm.h — layer normalization over the last axis (PyTorch's nn.LayerNorm(C)).
//
//   {"name": "ln1", "type": "layer_norm", "eps": 1e-5, "affine": true}
// Input [T, C] (or any shape: over its last axis C), output the same: y = (x - mean) /
// sqrt(var + eps) * weight + bias, the mean and (biased) variance over the C values of each token. Weight (ones) and
// bias (zeros) are [C], PyTorch's names; "affine": false has neither. Backward reads the input and the per-token mean
// and variance the kernel saves.
//
//   LayerConfig cfg(nlohmann::json{{"eps", 1e-5}}, "x.json: layer 'ln1'");
//   std::unique_ptr<Layer> ln = LayerNormLayer::parse("ln1", cfg);
//   Shape out = ln->infer_shape({Shape{32, 16}});   // 32x16
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class LayerNormLayer : public Layer {
 public:
  struct Params {
    double eps = 1e-5;
    bool affine = true;
  };
  LayerNormLayer(std::string name, Params p) : Layer(std::move(name), "layer_norm", LayerKind::kNorm), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    Params p;
    p.eps = cfg.number("eps", 1e-5, 1e-12, 1.0);
    p.affine = cfg.boolean("affine", true);
    return std::make_unique<LayerNormLayer>(name, p);
  }
  const Params& p() const { return p_; }
  Shape infer_shape(const std::vector<Shape>& in) const override {
    return in[0];  // any rank: over its last axis, as PyTorch's LayerNorm(C)
  }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override {
    if (!p_.affine) return {};
    const int64_t c = in[0].dims.back();
    return {{"weight", {c}, ParamSpec::Init::kOne, 1, true, false},
            {"bias", {c}, ParamSpec::Init::kZero, 1, true, false}};
  }
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return 8.0 * static_cast<double>(out.elements());  // mean, variance, normalize, scale and shift
  }

 private:
  Params p_;
};

}  // namespace vdnn
