// layers/softmax_ce.h — softmax followed by cross-entropy against integer labels; the loss.
//
//   {"name": "loss", "type": "softmax_cross_entropy"}
// Input: K logits per sample (K = the model's "classes"). Output: the batch-mean loss (a scalar).
// Backward reads only the probabilities it saved (kernel-owned): (p - onehot(label)) / N.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class SoftmaxCrossEntropyLayer : public Layer {
 public:
  explicit SoftmaxCrossEntropyLayer(std::string name)
      : Layer(std::move(name), "softmax_cross_entropy", LayerKind::kLoss) {}
  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (in[0].rank() != 1) fail("needs a vector of logits, got " + in[0].to_string());
    return Shape{1};
  }
  bool backward_reads_input() const override { return false; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return 4.0 * static_cast<double>(in[0].elements());
  }
};

}  // namespace vdnn
