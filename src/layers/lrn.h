// layers/lrn.h — local response normalization across channels (AlexNet).
//
//   {"name": "norm1", "type": "lrn", "size": 5, "alpha": 1e-4, "beta": 0.75, "k": 2}
//   y[n,c,h,w] = x[n,c,h,w] * (k + alpha/size * sum_{c'=c-(size-1)/2}^{c+(size-1)/2} x[n,c',h,w]^2)^(-beta)
// with channels outside [0, C) counting as zero (the divisor stays `size` at the borders): the
// window of `size` channels centred on c, as AlexNet, Caffe and PyTorch's LocalResponseNorm.
// `size` must be odd: PyTorch centres an even window off-centre (c-size/2 .. c+size/2-1), which
// neither oneDNN (it would sum size-1 channels) nor cuDNN (c-size/2+1 .. c+size/2) computes, so an
// even size is refused when the model is read rather than computed differently from PyTorch.
// Backward reads the input and a kernel-owned workspace.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class LrnLayer : public Layer {
 public:
  struct Params {
    int64_t size = 5;
    double alpha = 1e-4, beta = 0.75, k = 1.0;
  };
  LrnLayer(std::string name, Params p) : Layer(std::move(name), "lrn", LayerKind::kNorm), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, LayerConfig& cfg) {
    Params p;
    p.size = cfg.integer("size", 5, 1);
    if (p.size % 2 == 0)
      cfg.fail("size",
               "an odd integer >= 1 (the window is centred on the channel; oneDNN and "
               "cuDNN have no window that matches PyTorch's for an even size)");
    p.alpha = cfg.number("alpha", 1e-4, 0.0, 1e3);
    p.beta = cfg.number("beta", 0.75, 0.0, 1e3);
    p.k = cfg.number("k", 1.0, 1e-6, 1e6);
    return std::make_unique<LrnLayer>(name, p);
  }
  const Params& p() const { return p_; }
  Shape infer_shape(const std::vector<Shape>& in) const override {
    if (!in[0].is_image()) fail("needs an image input CxHxW, got " + in[0].to_string());
    return in[0];
  }
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return static_cast<double>(out.elements()) * (2.0 * p_.size + 4.0);
  }

 private:
  Params p_;
};

}  // namespace vdnn
