// Batch normalization on cuDNN (spatial mode: per channel over N, H, W). Training uses batch
// statistics, saves the batch mean and inverse standard deviation for backward and folds them into
// the running averages (cuDNN's exponential average with factor `momentum`, unbiased variance, as
// PyTorch and the CPU backend); evaluation uses the running averages.
#include "backends/cuda/cuda_kernels.h"
#include "layers/batch_norm.h"

namespace vdnn {
namespace {

class CudnnBatchNormKernel : public CudaKernel {
 public:
  explicit CudnnBatchNormKernel(const CudaKernelSetup& s)
      : p_(static_cast<const BatchNormLayer&>(s.layer).p()),
        x_(tensor_of(s.batch, s.in_shapes[0])),
        channel_(1, s.in_shapes[0].channels(), 1, 1) {
    // params: scale, shift, running_mean, running_var; saved: batch mean, inverse std; scratch:
    // the data gradient when the input needs none (the scale/shift gradients need the backward).
    declare_sizes(s);
    implementation = "cudnn batchnorm_spatial";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.training) {
      VDNN_CUDA_CHECK(cudnnBatchNormalizationForwardInference(ctx.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_,
                                                              a.in[0], x_, a.out, channel_, a.params[0], a.params[1],
                                                              a.params[2], a.params[3], p_.eps));
      return;
    }
    VDNN_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
        ctx.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x_, a.in[0], x_, a.out, channel_, a.params[0], a.params[1],
        p_.momentum, a.params[2], a.params[3], p_.eps, a.saved[0], a.saved[1]));
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    void* dx = a.d_in[0] ? a.d_in[0] : a.scratch;
    VDNN_CUDA_CHECK(cudnnBatchNormalizationBackward(ctx.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, &kOne, &kZero,
                                                    x_, a.in[0], x_, a.d_out, x_, dx, channel_, a.params[0],
                                                    a.d_params[0], a.d_params[1], p_.eps, a.saved[0], a.saved[1]));
  }

 private:
  BatchNormLayer::Params p_;
  TensorDesc x_, channel_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cudnn_batch_norm_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudnnBatchNormKernel>(s);
}

}  // namespace vdnn
