// Softmax cross-entropy: cuDNN softmax (accurate: max subtracted) into the saved probabilities; the
// loss and its gradient (p - onehot) / N on the backend's own kernels. Labels arrive in host memory
// and are checked there, then copied (stream-ordered) into the kernel's scratch in each pass.
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_kernels.h"

namespace vdnn {
namespace {

class CudaSoftmaxCeKernel : public CudaKernel {
 public:
  explicit CudaSoftmaxCeKernel(const CudaKernelSetup& s)
      : batch_(s.batch), classes_(s.in_shapes[0].elements()), logits_(s.batch, classes_, 1, 1) {
    declare_sizes(s);  // out: the batch-mean loss; saved: probabilities; scratch: labels
    implementation = "cudnn softmax_accurate + cuda cross_entropy";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    VDNN_CUDA_CHECK(cudnnSoftmaxForward(ctx.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &kOne, logits_,
                                        a.in[0], &kZero, logits_, a.saved[0]));
    const int64_t valid = upload_labels(ctx, a);
    launch_cross_entropy_loss(static_cast<const float*>(a.saved[0]), static_cast<const int32_t*>(a.scratch), valid,
                              classes_, static_cast<float*>(a.out), ctx.stream);
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    const int64_t valid = upload_labels(ctx, a);
    launch_cross_entropy_backward(static_cast<const float*>(a.saved[0]), static_cast<const int32_t*>(a.scratch), batch_,
                                  valid, classes_, static_cast<float*>(a.d_in[0]), ctx.stream);
  }

 private:
  // Copies the valid labels into scratch, stream-ordered; returns how many. The host labels must
  // not change until the stream has passed the copy (pinned memory is read asynchronously): Net
  // only changes them between steps, after the streams are synchronized.
  int64_t upload_labels(const CudaContext& ctx, const KernelArgs& a) const {
    const int64_t valid = a.valid > 0 ? a.valid : batch_;
    for (int64_t n = 0; n < valid; ++n)
      VDNN_CHECK(a.labels[n] >= 0 && a.labels[n] < classes_, "label " << a.labels[n] << " out of range");
    VDNN_CUDA_CHECK(cudaMemcpyAsync(a.scratch, a.labels, static_cast<size_t>(valid) * sizeof(int32_t),
                                    cudaMemcpyHostToDevice, ctx.stream));
    return valid;
  }

  int64_t batch_, classes_;
  TensorDesc logits_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cuda_softmax_ce_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudaSoftmaxCeKernel>(s);
}

}  // namespace vdnn
