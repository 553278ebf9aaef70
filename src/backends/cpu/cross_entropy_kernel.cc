// Softmax cross-entropy over the rows of plain [rows, V] logits, for both losses: one row per sample
// (softmax_cross_entropy, K logits) or one per token (token_cross_entropy, [T, V] logits, rows whose
// label is ignore_index left out). oneDNN softmax into saved probabilities; the loss and its
// gradient (p - onehot) / count over the rows counted are plain loops (no library call computes a
// cross-entropy).
#include <cmath>
#include <optional>

#include "backends/cpu/kernels.h"
#include "backends/cpu/row_softmax.h"
#include "backends/cpu/sequence_kernel.h"
#include "layers/token_ce.h"

namespace vdnn {
namespace {

using dnnl::memory;

class CrossEntropyKernel : public CpuKernel {
 public:
  // `per_sample` rows of `classes` logits per sample; a row labelled `ignore` is not counted.
  CrossEntropyKernel(const KernelSetup& s, const dnnl::engine& engine, int64_t per_sample, int64_t classes,
                     std::optional<int64_t> ignore)
      : layer_(s.layer), ignore_(ignore), per_sample_(per_sample), classes_(classes), rows_(s.batch * per_sample) {
    logits_md_ = plain_md({rows_, classes_});  // the same bytes as the plain [N, K] or [N, T, V] logits
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
    const int64_t count = counted_rows(a);
    for (int64_t r = 0; r < valid_rows(a); ++r)
      if (counts(a.labels[r])) loss -= std::log(std::max(p[r * classes_ + a.labels[r]], 1e-30f));
    *static_cast<float*>(a.out) = count ? static_cast<float>(loss / static_cast<double>(count)) : 0.0f;
  }

  void backward(dnnl::stream&, const KernelArgs& a) override {
    float* dx = static_cast<float*>(a.d_in[0]);
    if (!dx) return;  // the logits are the graph input: no gradient to write
    const float* p = static_cast<const float*>(a.saved[0]);
    const int64_t count = counted_rows(a), valid = valid_rows(a), rows = rows_;
    const float inv = count ? 1.0f / static_cast<float>(count) : 0.0f;
#pragma omp parallel for if (rows * classes_ > 65536)
    for (int64_t r = 0; r < rows; ++r) {
      const bool counted = r < valid && counts(a.labels[r]);
      for (int64_t k = 0; k < classes_; ++k) {
        const int64_t i = r * classes_ + k;
        dx[i] = counted ? (p[i] - (k == a.labels[r] ? 1.0f : 0.0f)) * inv : 0.0f;
      }
    }
  }

 private:
  bool counts(int32_t label) const { return !ignore_ || label != *ignore_; }

  // The rows of the valid samples (the rest of the batch is padding).
  int64_t valid_rows(const KernelArgs& a) const { return a.valid > 0 ? std::min(rows_, a.valid * per_sample_) : rows_; }

  // The rows the mean runs over; every label checked (in [0, V), or ignore_index).
  int64_t counted_rows(const KernelArgs& a) const {
    int64_t count = 0;
    for (int64_t r = 0; r < valid_rows(a); ++r) {
      const int32_t label = a.labels[r];
      if (!counts(label)) continue;
      if (label < 0 || label >= classes_)
        layer_.fail(VDNN_MSG("label " << label << " at sample " << r / per_sample_
                                      << (per_sample_ > 1 ? VDNN_MSG(", position " << r % per_sample_) : "")
                                      << " is outside [0, " << classes_ << ")"
                                      << (ignore_ ? VDNN_MSG(" and is not ignore_index (" << *ignore_ << ")") : "")));
      ++count;
    }
    return count;
  }

  const Layer& layer_;
  std::optional<int64_t> ignore_;
  int64_t per_sample_ = 1, classes_ = 0, rows_ = 0;
  memory::desc logits_md_;
  RowSoftmax softmax_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_softmax_ce_kernel(const KernelSetup& s, const dnnl::engine& e) {
  const int64_t classes = s.in_shapes[0].elements();
  VDNN_CHECK(s.in_mds[0] == plain_md({s.batch, classes}), "loss '" << s.layer.name() << "' needs plain NC logits");
  return std::make_unique<CrossEntropyKernel>(s, e, 1, classes, std::nullopt);
}

std::unique_ptr<CpuKernel> make_token_ce_kernel(const KernelSetup& s, const dnnl::engine& e) {
  require_plain_f32(s);
  return std::make_unique<CrossEntropyKernel>(s, e, s.in_shapes[0].dims[0], s.in_shapes[0].dims[1],
                                              static_cast<const TokenCrossEntropyLayer&>(s.layer).ignore_index());
}

}  // namespace vdnn
