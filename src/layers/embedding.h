// layers/embedding.h — token ids [T] to vectors [T, C] by a learned table (PyTorch's nn.Embedding).
//
//   {"name": "wte", "type": "embedding", "vocab": 50257, "dim": 768}    ("num_embeddings" = "vocab")
// Input: the model's token input (Graph::token_input: int32 ids on the device). Output [T, dim].
// Weight [vocab, dim], PyTorch's layout, initialized normal with std 0.02 (GPT-2's). Forward is a
// gather (row id of the table per token); backward scatter-adds dy into the rows the ids chose, so
// it reads its input (the ids). An id outside [0, vocab) is a vdnn::Error naming this layer.
//
//   LayerConfig cfg(nlohmann::json{{"vocab", 100}, {"dim", 16}}, "x.json: layer 'wte'");
//   std::unique_ptr<Layer> wte = EmbeddingLayer::parse("wte", cfg);
//   Shape out = wte->infer_shape({Shape{32}});   // 32x16
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class EmbeddingLayer : public Layer {
 public:
  struct Params {
    int64_t vocab = 0;
    int64_t dim = 0;
  };
  EmbeddingLayer(std::string name, Params p) : Layer(std::move(name), "embedding", LayerKind::kReshape), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    Params p;
    if (cfg.has("vocab") && cfg.has("num_embeddings"))
      cfg.fail("num_embeddings", "one of 'vocab' and 'num_embeddings' (the same field), not both");
    p.vocab = cfg.positive_int(cfg.has("num_embeddings") ? "num_embeddings" : "vocab");
    p.dim = cfg.positive_int("dim");
    return std::make_unique<EmbeddingLayer>(name, p);
  }
  const Params& p() const { return p_; }
  bool takes_tokens() const override { return true; }
  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (in[0].rank() != 1) fail("needs token ids [T], got " + in[0].to_string());
    return Shape{in[0].dims[0], p_.dim};
  }
  std::vector<ParamSpec> params(const std::vector<Shape>&) const override {
    return {{"weight", {p_.vocab, p_.dim}, ParamSpec::Init::kSmallNormal, p_.dim, true, true}};
  }
  bool backward_reads_input() const override { return true; }  // the ids choose the rows to add into
  double forward_flops(const std::vector<Shape>&, const Shape& out) const override {
    return static_cast<double>(out.elements());  // a copy per element
  }
  double backward_flops(const std::vector<Shape>&, const Shape& out) const override {
    return static_cast<double>(out.elements());  // an add per element
  }

 private:
  Params p_;
};

}  // namespace vdnn
