// LRN across channels on cuDNN. cuDNN's backward reads x, y and dy, so the kernel saves a copy of y
// (its saved state, as oneDNN's workspace on the CPU). cuDNN allows sizes 1..16, k >= 1e-5 and
// beta >= 0.01, and centres an even window differently from oneDNN: those are refused by name.
#include "backends/cuda/cuda_kernels.h"
#include "layers/lrn.h"

namespace vdnn {
namespace {

LrnLayer::Params checked(const CudaKernelSetup& s) {
  const LrnLayer::Params& p = static_cast<const LrnLayer&>(s.layer).p();
  if (p.size < CUDNN_LRN_MIN_N || p.size > CUDNN_LRN_MAX_N || p.size % 2 == 0)
    s.layer.fail(
        VDNN_MSG("the CUDA backend (cuDNN) needs an odd size in 1.." << CUDNN_LRN_MAX_N << ", got " << p.size));
  if (p.k < CUDNN_LRN_MIN_K || p.beta < CUDNN_LRN_MIN_BETA)
    s.layer.fail(VDNN_MSG("the CUDA backend (cuDNN) needs k >= " << CUDNN_LRN_MIN_K
                                                                 << " and beta >= " << CUDNN_LRN_MIN_BETA << ", got k "
                                                                 << p.k << ", beta " << p.beta));
  return p;
}

class CudnnLrnKernel : public CudaKernel {
 public:
  explicit CudnnLrnKernel(const CudaKernelSetup& s)
      : p_(checked(s)),
        x_(tensor_of(s.batch, s.in_shapes[0])),
        lrn_(static_cast<unsigned>(p_.size), p_.alpha, p_.beta, p_.k) {
    declare_sizes(s);  // saved: y, for backward
    implementation = "cudnn lrn_cross_channel";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    VDNN_CUDA_CHECK(cudnnLRNCrossChannelForward(ctx.cudnn, lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_, a.in[0],
                                                &kZero, x_, a.out));
    if (a.training) copy_on_stream(ctx, a.saved[0], a.out, out_bytes);
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    VDNN_CUDA_CHECK(cudnnLRNCrossChannelBackward(ctx.cudnn, lrn_, CUDNN_LRN_CROSS_CHANNEL_DIM1, &kOne, x_, a.saved[0],
                                                 x_, a.d_out, x_, a.in[0], &kZero, x_, a.d_in[0]));
  }

 private:
  LrnLayer::Params p_;
  TensorDesc x_;
  LrnDesc lrn_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cudnn_lrn_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudnnLrnKernel>(s);
}

}  // namespace vdnn
