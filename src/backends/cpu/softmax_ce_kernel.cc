// Softmax cross-entropy: oneDNN softmax into saved probabilities; the loss and its gradient
// (p - onehot) / N are plain loops (no library call computes a cross-entropy).
#include <cmath>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/row_softmax.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

using dnnl::memory;

class SoftmaxCrossEntropyKernel : public CpuKernel {
 public:
  SoftmaxCrossEntropyKernel(const KernelSetup& s, const dnnl::engine& engine) {
    batch_ = s.batch;
    classes_ = s.in_shapes[0].elements();
    logits_md_ = plain_md({batch_, classes_});
    VDNN_CHECK(s.in_mds[0] == logits_md_, "loss '" << s.layer.name() << "' needs plain NC logits");
    softmax_ = RowSoftmax(logits_md_, engine);
    out_md = plain_md({1});
    saved_mds = {logits_md_};
    scratch_bytes = softmax_.scratch_bytes();
    implementation = softmax_.implementation();
  }

  void forward(dnnl::stream& stream, const KernelArgs& a) override {
    softmax_.run(stream, a.in[0], a.saved[0], a.scratch);
    const float* p = static_cast<const float*>(a.saved[0]);
    const int64_t valid = a.valid > 0 ? a.valid : batch_;
    double loss = 0;
    for (int64_t n = 0; n < valid; ++n) {
      const int32_t label = a.labels[n];
      VDNN_CHECK(label >= 0 && label < classes_, "label " << label << " out of range");
      loss -= std::log(std::max(p[n * classes_ + label], 1e-30f));
    }
    *static_cast<float*>(a.out) = static_cast<float>(loss / static_cast<double>(valid));
  }

  void backward(dnnl::stream& stream, const KernelArgs& a) override {
    float* dx = static_cast<float*>(a.d_in[0]);
    if (!dx) return;  // the logits are the graph input: no gradient to write
    const float* p = static_cast<const float*>(a.saved[0]);
    const int64_t valid = a.valid > 0 ? a.valid : batch_;
    const float inv = 1.0f / static_cast<float>(valid);
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t k = 0; k < classes_; ++k) {
        const int64_t i = n * classes_ + k;
        dx[i] = n < valid ? (p[i] - (k == a.labels[n] ? 1.0f : 0.0f)) * inv : 0.0f;
      }
  }

 private:
  int64_t batch_ = 0, classes_ = 0;
  memory::desc logits_md_;
  RowSoftmax softmax_;
};

}  // namespace

std::unique_ptr<CpuKernel> make_softmax_ce_kernel(const KernelSetup& s, const dnnl::engine& e) {
  return std::make_unique<SoftmaxCrossEntropyKernel>(s, e);
}

}  // namespace vdnn
