// Convolution on cuDNN: forward, backward data, backward filter and bias, grouped, dilated; the
// algorithm of each pass from cudnn_conv_algos.h, its workspace in the kernel's scratch. Padding
// is symmetric only (cuDNN's): cuda_kernel_sizes refuses pad_end != pad before a kernel is made.
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cudnn_conv_algos.h"
#include "layers/conv.h"

namespace vdnn {
namespace {

class CudnnConvKernel : public CudaKernel {
 public:
  CudnnConvKernel(const CudaKernelSetup& s, const CudaContext& ctx)
      : p_(static_cast<const ConvLayer&>(s.layer).p()),
        x_(tensor_of(s.batch, s.in_shapes[0])),
        y_(tensor_of(s.batch, s.out_shape)),
        w_(p_.channels, s.in_shapes[0].channels() / p_.groups, p_.kh, p_.kw),
        bias_(1, p_.channels, 1, 1),
        conv_(p_.ph, p_.pw, p_.sh, p_.sw, p_.dh, p_.dw, p_.groups) {  // symmetric: cuda_sizes.cc
    // scratch_bytes: the workspace the target reserves for s.conv_algo (cuda_sizes.h), not what
    // cuDNN happens to ask: the plan reserved exactly this, and no pass may use more. First, as
    // it refuses what cuDNN cannot run (asymmetric padding) by name.
    declare_sizes(s);
    int n = 0, c = 0, h = 0, w = 0;  // cuDNN's output shape must be the layer's
    VDNN_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w));
    if (c != p_.channels || h != s.out_shape.height() || w != s.out_shape.width())
      s.layer.fail(VDNN_MSG("cuDNN computes a " << c << "x" << h << "x" << w
                                                << " output, the layer "
                                                << s.out_shape.to_string()));
    algos_ = choose_conv_algos(ctx.cudnn, {x_, w_, conv_, y_}, s.conv_algo, s.needs_grad(0),
                               scratch_bytes, s.layer.name());
    implementation = "cudnn " + algos_.to_string();
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    VDNN_CUDA_CHECK(
        cudnnConvolutionForward(ctx.cudnn, &kOne, x_, a.in[0], w_, a.params[0], conv_,
                                static_cast<cudnnConvolutionFwdAlgo_t>(algos_.forward.algo),
                                a.scratch, scratch_bytes, &kZero, y_, a.out));
    if (p_.bias)
      VDNN_CUDA_CHECK(cudnnAddTensor(ctx.cudnn, &kOne, bias_, a.params[1], &kOne, y_, a.out));
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (a.d_params[0]) {
      VDNN_CUDA_CHECK(cudnnConvolutionBackwardFilter(
          ctx.cudnn, &kOne, x_, a.in[0], y_, a.d_out, conv_,
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algos_.backward_filter.algo), a.scratch,
          scratch_bytes, &kZero, w_, a.d_params[0]));
    }
    if (p_.bias && a.d_params[1])
      VDNN_CUDA_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &kOne, y_, a.d_out, &kZero, bias_,
                                                   a.d_params[1]));
    if (a.d_in[0]) {
      VDNN_CUDA_CHECK(cudnnConvolutionBackwardData(
          ctx.cudnn, &kOne, w_, a.params[0], y_, a.d_out, conv_,
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algos_.backward_data.algo), a.scratch,
          scratch_bytes, &kZero, x_, a.d_in[0]));
    }
  }

 private:
  ConvLayer::Params p_;
  TensorDesc x_, y_;
  FilterDesc w_;
  TensorDesc bias_;
  ConvDesc conv_;
  ConvAlgos algos_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cudnn_conv_kernel(const CudaKernelSetup& s,
                                                   const CudaContext& ctx) {
  return std::make_unique<CudnnConvKernel>(s, ctx);
}

}  // namespace vdnn
