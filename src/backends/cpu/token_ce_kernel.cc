// Token cross-entropy: oneDNN softmax over the last axis of the [N·T, V] logits into saved
// probabilities; the loss and its gradient (p - onehot) / count over the tokens not ignored are
// plain loops (no library call computes a cross-entropy), as softmax_ce_kernel.cc's.
#include <cmath>

#include "backends/cpu/kernels.h"
#include "backends/cpu/row_softmax.h"
#include "backends/cpu/sequence_kernel.h"
#include "layers/token_ce.h"

namespace vdnn {
namespace {

using dnnl::memory;

class TokenCrossEntropyKernel : public CpuKernel {
 public:
  TokenCrossEntropyKernel(const KernelSetup& s, const dnnl::engine& engine) : layer_(s.layer) {
    require_plain_f32(s);
    ignore_ = static_cast<const TokenCrossEntropyLayer&>(s.layer).ignore_index();
    positions_ = s.in_shapes[0].dims[0];
    classes_ = s.in_shapes[0].dims[1];
    rows_ = token_rows(s);
    logits_md_ = rows_md(s, classes_);
    softmax_ = RowSoftmax(logits_md_, engine);
    out_md = plain_md({1});
    saved_mds = {logits_md_};
    scratch_bytes = softmax_.scratch_bytes();
    implementation = softmax_.implementation();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    softmax_.run(stream, a.in[0], a.saved[0], a.scratch);
    const float* p = static_cast<const float*>(a.saved[0]);
    double loss = 0;
    const int64_t count = counted_tokens(a);
    for (int64_t r = 0; r < valid_rows(a); ++r)
      if (a.labels[r] != ignore_) loss -= std::log(std::max(p[r * classes_ + a.labels[r]], 1e-30f));
    *static_cast<float*>(a.out) = count ? static_cast<float>(loss / static_cast<double>(count)) : 0.0f;
  }

  void backward(dnnl::stream&, const KernelArgs& a) override {
    float* dx = static_cast<float*>(a.d_in[0]);
    if (!dx) return;
    const float* p = static_cast<const float*>(a.saved[0]);
    const int64_t count = counted_tokens(a), valid = valid_rows(a), rows = rows_;
    const float inv = count ? 1.0f / static_cast<float>(count) : 0.0f;
#pragma omp parallel for if (rows * classes_ > 65536)
    for (int64_t r = 0; r < rows; ++r) {
      const bool counted = r < valid && a.labels[r] != ignore_;
      for (int64_t k = 0; k < classes_; ++k) {
        const int64_t i = r * classes_ + k;
        dx[i] = counted ? (p[i] - (k == a.labels[r] ? 1.0f : 0.0f)) * inv : 0.0f;
      }
    }
  }

 private:
  // The rows of the valid samples (the rest of the batch is padding).
  int64_t valid_rows(const KernelArgs& a) const {
    return a.valid > 0 ? std::min(rows_, a.valid * positions_) : rows_;
  }

  // The tokens the mean runs over; every label checked (in [0, V) or ignore_index).
  int64_t counted_tokens(const KernelArgs& a) const {
    int64_t count = 0;
    for (int64_t r = 0; r < valid_rows(a); ++r) {
      const int32_t label = a.labels[r];
      if (label == ignore_) continue;
      if (label < 0 || label >= classes_)
        layer_.fail(VDNN_MSG("label " << label << " at sample " << r / positions_ << ", position " << r % positions_
                                      << " is outside [0, " << classes_ << ") and is not ignore_index (" << ignore_
                                      << ")"));
      ++count;
    }
    return count;
  }

  const Layer& layer_;
  int64_t ignore_ = -100, positions_ = 0, classes_ = 0, rows_ = 0;
  memory::desc logits_md_;
  RowSoftmax softmax_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_token_ce_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<TokenCrossEntropyKernel>(s, e);
}

}  // namespace vdnn
