// layers/elementwise.h — the shape-preserving, parameter-free layers: relu, relu6, dropout, flatten.
//
//   {"name": "relu1", "type": "relu"}              runs in place when its input allows (vDNN)
//   {"name": "act1",  "type": "relu6"}             y = min(max(x, 0), 6) (PyTorch's ReLU6,
//                                                  ONNX Clip(0, 6)); in place like relu
//   {"name": "drop1", "type": "dropout", "rate": 0.5}
//   {"name": "flat",  "type": "flatten"}           CxHxW -> C*H*W (NCHW order)
// ReLU's backward reads its output (relu'(x) = [y > 0]), so in place costs no extra feature map.
// So does ReLU6's: the gradient passes where 0 < x < 6, i.e. where 0 < y < 6, and is 0 at exactly
// 0 and 6 (PyTorch's hardtanh_backward; oneDNN's eltwise_clip_v2_use_dst_for_bwd).
// Dropout's backward reads only its mask (kernel-owned); flatten's reads nothing.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class ReluLayer : public Layer {
 public:
  explicit ReluLayer(std::string name) : ReluLayer(std::move(name), "relu") {}
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  bool backward_reads_input() const override { return false; }
  bool backward_reads_output() const override { return true; }
  bool can_run_in_place() const override { return true; }

 protected:
  ReluLayer(std::string name, const char* type) : Layer(std::move(name), type, LayerKind::kActivation) {}
};

// ReLU with a ceiling of 6: the same memory behaviour as ReLU (in place, backward reads y).
class Relu6Layer : public ReluLayer {
 public:
  static constexpr float kCeiling = 6.0f;
  explicit Relu6Layer(std::string name) : ReluLayer(std::move(name), "relu6") {}
};

class DropoutLayer : public Layer {
 public:
  DropoutLayer(std::string name, double rate) : Layer(std::move(name), "dropout", LayerKind::kDropout), rate_(rate) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    return std::make_unique<DropoutLayer>(name, cfg.number("rate", 0.5, 0.0, 0.99));
  }
  double rate() const { return rate_; }
  Shape infer_shape(const std::vector<Shape>& in) const override { return in[0]; }
  bool backward_reads_input() const override { return false; }

 private:
  double rate_;
};

class FlattenLayer : public Layer {
 public:
  explicit FlattenLayer(std::string name) : Layer(std::move(name), "flatten", LayerKind::kReshape) {}
  Shape infer_shape(const std::vector<Shape>& in) const override { return Shape{in[0].elements()}; }
  bool backward_reads_input() const override { return false; }
};

}  // namespace vdnn
