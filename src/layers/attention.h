// layers/attention.h — multi-head scaled dot-product self-attention over a packed q|k|v sequence.
//
//   {"name": "attn1", "type": "attention", "heads": 12, "causal": true, "dropout": 0.0,
//    "implementation": "materialized"}
// Input: ONE sequence [T, 3C], q, k and v packed along the last axis in that order (GPT-2's c_attn
// output); head h of q is columns [h*D, (h+1)*D), D = C / heads. Output [T, C], heads merged
// (column h*D + d): softmax(q k^T / sqrt(D) + mask) v per head, what PyTorch's
// scaled_dot_product_attention returns after transpose(1, 2).reshape(N, T, C). `causal`: token i
// attends to tokens j <= i. `dropout`: on the probabilities, in training. No parameters.
//
// Two implementations ("algorithms") of the same function (docs/design/attention.md):
//   materialized  saves the probabilities, N*H*T*T floats (+ a byte mask with dropout)
//   fused         FlashAttention: saves only the per-row log-sum-exp, N*H*T floats, and
//                 recomputes the scores tile by tile in backward, which therefore reads O too
//
//   LayerConfig cfg(json, "gpt.json: layer 'attn1'");
//   std::unique_ptr<Layer> attn = AttentionLayer::parse("attn1", cfg);
//   Shape out = attn->infer_shape({Shape{1024, 3 * 768}});   // 1024x768
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class AttentionLayer : public Layer {
 public:
  enum class Implementation { kMaterialized, kFused };
  struct Params {
    int64_t heads = 1;
    bool causal = true;
    double dropout = 0.0;  // on the probabilities, training only
    Implementation implementation = Implementation::kMaterialized;
  };
  AttentionLayer(std::string name, Params p) : Layer(std::move(name), "attention", LayerKind::kAttention), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    Params p;
    p.heads = cfg.positive_int("heads");
    p.causal = cfg.boolean("causal", true);
    p.dropout = cfg.number("dropout", 0.0, 0.0, 0.99);
    p.implementation = cfg.text("implementation", "materialized", {"materialized", "fused"}) == "fused"
                           ? Implementation::kFused
                           : Implementation::kMaterialized;
    return std::make_unique<AttentionLayer>(name, p);
  }
  const Params& p() const { return p_; }
  bool fused() const { return p_.implementation == Implementation::kFused; }

  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (in[0].rank() != 2 || in[0].dims[1] % 3 != 0)
      fail("needs one [T, 3C] sequence input (q, k, v packed along the last axis), got " + in[0].to_string());
    const int64_t c = in[0].dims[1] / 3;
    if (c % p_.heads != 0)
      fail("heads = " + std::to_string(p_.heads) + " must divide the channels C = " + std::to_string(c) +
           " (the input is " + in[0].to_string() + ", i.e. [T, 3C])");
    return Shape{in[0].dims[0], c};
  }
  bool backward_reads_input() const override { return true; }
  // FlashAttention's backward needs O for D = rowsum(dO * O).
  bool backward_reads_output() const override { return fused(); }
  // QK^T and PV: 2*T*T*C each. The fused kernel skips the key tiles wholly above the diagonal, so
  // a causal fused layer does about half; the materialized one multiplies the full matrices.
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    const double t = static_cast<double>(out.dims[0]), c = static_cast<double>(out.dims[1]);
    return (p_.causal && fused() ? 0.5 : 1.0) * 4.0 * t * t * c;
  }
  // dV, dP, dQ, dK: twice the forward; the fused backward recomputes QK^T too (half a forward more).
  double backward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return (fused() ? 2.5 : 2.0) * forward_flops(in, out);
  }

 private:
  Params p_;
};

}  // namespace vdnn
