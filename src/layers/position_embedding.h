// layers/position_embedding.h — adds a learned vector per position to a sequence (GPT-2's wpe).
//
//   {"name": "wpe", "type": "position_embedding", "max_positions": 1024}
// Input [T, C], output [T, C]: y[t] = x[t] + weight[t] for t < T. Weight [max_positions, C]
// (PyTorch's nn.Embedding over positions 0..T-1), normal with std 0.02. T > max_positions is
// refused at shape inference. Backward reads neither x nor y (dx = dy, dweight[t] = sum over the
// batch of dy[t]), so it runs in place over its input as an add does.
//
//   LayerConfig cfg(nlohmann::json{{"max_positions", 64}}, "x.json: layer 'wpe'");
//   std::unique_ptr<Layer> wpe = PositionEmbeddingLayer::parse("wpe", cfg);
//   Shape out = wpe->infer_shape({Shape{32, 16}});   // 32x16
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"
#include "vdnn/error.h"

namespace vdnn {

class PositionEmbeddingLayer : public Layer {
 public:
  PositionEmbeddingLayer(std::string name, int64_t max_positions)
      : Layer(std::move(name), "position_embedding", LayerKind::kReshape), max_positions_(max_positions) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    return std::make_unique<PositionEmbeddingLayer>(name, cfg.positive_int("max_positions"));
  }
  int64_t max_positions() const { return max_positions_; }
  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (!in[0].is_sequence()) fail("needs a sequence [T, C], got " + in[0].to_string());
    if (in[0].dims[0] > max_positions_)
      fail(VDNN_MSG("its input has " << in[0].dims[0] << " positions but max_positions is " << max_positions_
                                     << " (the table has a row per position; raise max_positions or shorten T)"));
    return in[0];
  }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override {
    return {{"weight", {max_positions_, in[0].dims[1]}, ParamSpec::Init::kSmallNormal, in[0].dims[1], true, true}};
  }
  bool backward_reads_input() const override { return false; }
  bool can_run_in_place() const override { return true; }

 private:
  int64_t max_positions_;
};

}  // namespace vdnn
