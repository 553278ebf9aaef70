// layers/linear.h — a linear map on the last axis of a sequence (PyTorch's nn.Linear on [N, T, C]).
//
//   {"name": "c_fc", "type": "linear", "units": 3072, "bias": true}
// Input [T, C], output [T, units]: y[t] = W x[t] + b for every token t (any rank: on the last
// axis, as PyTorch's; [C] -> [units]).
// Weight [units, C], bias [units] (PyTorch's Linear). Unlike `fc` (layers/fc.h), which flattens
// its input into one vector per sample, every token is mapped alone. Backward reads the input.
//
//   LayerConfig cfg(nlohmann::json{{"units", 64}}, "x.json: layer 'c_fc'");
//   std::unique_ptr<Layer> fc = LinearLayer::parse("c_fc", cfg);
//   Shape out = fc->infer_shape({Shape{32, 16}});   // 32x64
#pragma once

#include "layers/fc.h"

namespace vdnn {

// An fc's fields, FLOPs and backward; its own shapes and weight.
class LinearLayer : public FcLayer {
 public:
  LinearLayer(std::string name, Params p) : FcLayer(std::move(name), "linear", p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    return std::make_unique<LinearLayer>(name, FcLayer::parse_params(cfg));
  }
  Shape infer_shape(const std::vector<Shape>& in) const override {  // any rank: on the last axis
    Shape out = in[0];
    out.dims.back() = p().units;
    return out;
  }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override {
    const int64_t c = in[0].dims.back();
    std::vector<ParamSpec> out{{"weight", {p().units, c}, ParamSpec::Init::kLecunNormal, c, true, true}};
    if (p().bias) out.push_back({"bias", {p().units}, ParamSpec::Init::kZero, 1, true, false});
    return out;
  }
};

}  // namespace vdnn
