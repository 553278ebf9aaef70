// layers/pool.h — max and average pooling, including global pooling and Caffe's ceil mode.
//
//   {"name": "pool1", "type": "max_pool", "kernel": 2, "stride": 2}
//   {"name": "gap",   "type": "avg_pool", "global": true}
//   {"name": "p3",    "type": "max_pool", "kernel": 3, "stride": 2, "ceil": true}
//   {"name": "same",  "type": "max_pool", "kernel": 2, "stride": 1, "pad": 0, "pad_end": 1}
// "pad" is the top/left padding, "pad_end" (optional, an int or [bottom, right]; default "pad") the
// bottom/right, as ONNX's pads = [pad..., pad_end...] (auto_pad SAME_UPPER / SAME_LOWER); each is
// less than the kernel. Padded cells never win a max.
// Average pooling excludes padded cells from the divisor unless "exclude_padding": false; then it
// divides by the window's cells inside the padded input (rows -pad .. H+pad_end-1), as Caffe and
// PyTorch (count_include_pad): kh*kw, except where a ceil-mode window runs past the padding.
// Output size (ceil mode as PyTorch and Caffe): ceil((H + pad + pad_end - kernel) / stride) + 1,
// less one if the last window would start at or past H + pad. The CUDA backend takes only
// pad_end == pad.
// Backward of max pooling reads only its saved indices (a kernel-owned buffer), not the input;
// average pooling reads nothing: neither is an offload candidate for its input.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class PoolLayer : public Layer {
 public:
  struct Params {
    bool max = true, global = false, ceil = false, exclude_padding = true;
    int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
    int64_t ph_end = -1, pw_end = -1;  // bottom / right padding; -1: as ph / pw (symmetric)
    int64_t pb() const { return ph_end < 0 ? ph : ph_end; }
    int64_t pr() const { return pw_end < 0 ? pw : pw_end; }
    bool symmetric_padding() const { return pb() == ph && pr() == pw; }
  };
  // Resolved for a concrete input. pb/pr: the bottom/right padding oneDNN is given, up to where
  // the last window ends (beyond pad_end in ceil mode); eh/ew: pad_end, where the padded input
  // ends for the divisor of an average that counts padding.
  struct Window {
    int64_t kh, kw, sh, sw, pt, pl, pb, pr, oh, ow, eh, ew;
  };
  PoolLayer(std::string name, std::string type, Params p)
      : Layer(std::move(name), std::move(type), LayerKind::kPool), p_(p) {}
  static std::unique_ptr<Layer> parse(const std::string& name, const std::string& type, LayerConfig& cfg);

  const Params& p() const { return p_; }
  Window window(const Shape& in) const;
  Shape infer_shape(const std::vector<Shape>& in) const override;
  bool backward_reads_input() const override { return false; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override;

 private:
  Params p_;
};

}  // namespace vdnn
