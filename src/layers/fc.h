// layers/fc.h — fully connected (inner product); takes CxHxW or K inputs without a flatten.
//
//   {"name": "fc1", "type": "fc", "units": 512, "bias": true}
// Weights are [units, C, H, W] (or [units, K]): the same bytes as [units, C*H*W] in NCHW order,
// the shape files hold (PyTorch's Linear after a flatten). Backward reads the input.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class FcLayer : public Layer {
 public:
  struct Params {
    int64_t units = 0;
    bool bias = true;
  };
  FcLayer(std::string name, Params p) : FcLayer(std::move(name), "fc", p) {}
  // "units" and "bias" (default true), which linear (layers/linear.h) reads too.
  static Params parse_params(LayerConfig& cfg) { return {cfg.positive_int("units"), cfg.boolean("bias", true)}; }
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    return std::make_unique<FcLayer>(name, parse_params(cfg));
  }
  const Params& p() const { return p_; }
  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (in[0].rank() != 1 && in[0].rank() != 3) fail("needs a CxHxW or K input, got " + in[0].to_string());
    return Shape{p_.units};
  }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override {
    ParamSpec w{"weight", {p_.units}, ParamSpec::Init::kLecunNormal, in[0].elements(), true, true};
    w.dims.insert(w.dims.end(), in[0].dims.begin(), in[0].dims.end());
    if (in[0].rank() != 1) w.file_shape = {p_.units, in[0].elements()};
    std::vector<ParamSpec> out{w};
    if (p_.bias) out.push_back({"bias", {p_.units}, ParamSpec::Init::kZero, 1, true, false});
    return out;
  }
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return 2.0 * static_cast<double>(in[0].elements()) * static_cast<double>(p_.units);
  }

 protected:
  FcLayer(std::string name, const char* type, Params p) : Layer(std::move(name), type, LayerKind::kFc), p_(p) {}

 private:
  Params p_;
};

}  // namespace vdnn
