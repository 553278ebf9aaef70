// layers/batch_norm.h — batch normalization over N, H, W per channel, with running averages.
//
//   {"name": "bn1", "type": "batch_norm", "eps": 1e-5, "momentum": 0.1}
// Training uses batch statistics and updates running_mean/var (unbiased variance, as PyTorch);
// evaluation uses the running averages. Backward reads the input and the saved batch mean/variance.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class BatchNormLayer : public Layer {
 public:
  struct Params {
    double eps = 1e-5, momentum = 0.1;
  };
  BatchNormLayer(std::string name, Params p) : Layer(std::move(name), "batch_norm", LayerKind::kNorm), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    Params p;
    p.eps = cfg.number("eps", 1e-5, 1e-12, 1.0);
    p.momentum = cfg.number("momentum", 0.1, 0.0, 1.0);
    return std::make_unique<BatchNormLayer>(name, p);
  }
  const Params& p() const { return p_; }
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override {
    const int64_t c = in[0].channels();
    return {{"weight", {c}, ParamSpec::Init::kOne, 1, true, false},  // PyTorch's names for scale, shift
            {"bias", {c}, ParamSpec::Init::kZero, 1, true, false},
            {"running_mean", {c}, ParamSpec::Init::kZero, 1, false, false},
            {"running_var", {c}, ParamSpec::Init::kOne, 1, false, false}};
  }
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return 5.0 * static_cast<double>(out.elements());
  }

 private:
  Params p_;
};

}  // namespace vdnn
