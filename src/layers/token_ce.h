// layers/token_ce.h — softmax cross-entropy per token of a sequence; the loss of a language model.
//
//   {"name": "loss", "type": "token_cross_entropy", "ignore_index": -100}
// Input: [T, V] logits per sample (V = the model's "classes", the vocabulary). Labels: T per sample
// (Graph::labels_per_sample). Output: the mean loss over the tokens whose label is not
// ignore_index, of the valid samples — PyTorch's F.cross_entropy(logits.view(-1, V), y.view(-1),
// ignore_index=...). A batch whose every label is ignored has loss 0 and zero gradients (PyTorch: NaN).
// A label outside [0, V) that is not ignore_index is a vdnn::Error naming this layer.
// Backward reads only the probabilities it saved (kernel-owned): (p - onehot(label)) / count.
//
//   LayerConfig cfg(nlohmann::json{{"ignore_index", -1}}, "x.json: layer 'loss'");
//   std::unique_ptr<Layer> loss = TokenCrossEntropyLayer::parse("loss", cfg);
//   Shape out = loss->infer_shape({Shape{32, 100}});   // 1: the batch mean
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class TokenCrossEntropyLayer : public Layer {
 public:
  TokenCrossEntropyLayer(std::string name, int64_t ignore_index)
      : Layer(std::move(name), "token_cross_entropy", LayerKind::kLoss), ignore_index_(ignore_index) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    return std::make_unique<TokenCrossEntropyLayer>(name, cfg.integer("ignore_index", -100, -kMaxLayerInteger));
  }
  int64_t ignore_index() const { return ignore_index_; }
  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (!in[0].is_sequence()) fail("needs logits [T, V] (one row per token), got " + in[0].to_string());
    return Shape{1};
  }
  bool backward_reads_input() const override { return false; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return 4.0 * static_cast<double>(in[0].elements());
  }

 private:
  int64_t ignore_index_;
};

}  // namespace vdnn
