// Convolution on cuDNN: forward, backward data, backward filter and bias, grouped, dilated; the
// algorithm of each pass from cudnn_conv_algos.h, its workspace in the kernel's scratch. Padding
// is symmetric only (cuDNN's): cuda_kernel_sizes refuses pad_end != pad before a kernel is made.
// With s.sub_batches = k > 1 every pass runs k times on consecutive slices of the batch (NCHW:
// a slice is a pointer offset), its descriptors and workspace those of batch / k; the filter and
// bias gradients of slices after the first are accumulated by cuDNN itself (beta = 1).
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cudnn_conv_algos.h"
#include "layers/conv.h"

namespace vdnn {
namespace {

class CudnnConvKernel : public CudaKernel {
 public:
  CudnnConvKernel(const CudaKernelSetup& s, const CudaContext& ctx)
      : p_(static_cast<const ConvLayer&>(s.layer).p()),
        slices_(s.sub_batches),
        x_(tensor_of(s.batch / s.sub_batches, s.in_shapes[0])),
        y_(tensor_of(s.batch / s.sub_batches, s.out_shape)),
        x_slice_bytes_(float_bytes(s.batch / s.sub_batches, s.in_shapes[0])),
        y_slice_bytes_(float_bytes(s.batch / s.sub_batches, s.out_shape)),
        w_(p_.channels, s.in_shapes[0].channels() / p_.groups, p_.kh, p_.kw),
        bias_(1, p_.channels, 1, 1),
        conv_(p_.ph, p_.pw, p_.sh, p_.sw, p_.dh, p_.dw, p_.groups) {  // symmetric: cuda_sizes.cc
    // scratch_bytes: the workspace the target reserves for s.conv_algo (cuda_sizes.h), not what
    // cuDNN happens to ask: the plan reserved exactly this, and no pass may use more. First, as
    // it refuses what cuDNN cannot run (asymmetric padding) by name.
    declare_sizes(s);
    int n = 0, c = 0, h = 0, w = 0;  // cuDNN's output shape must be the layer's (per slice)
    VDNN_CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w));
    if (c != p_.channels || h != s.out_shape.height() || w != s.out_shape.width())
      s.layer.fail(VDNN_MSG("cuDNN computes a " << c << "x" << h << "x" << w << " output, the layer "
                                                << s.out_shape.to_string()));
    algos_ =
        choose_conv_algos(ctx.cudnn, {x_, w_, conv_, y_}, s.conv_algo, s.needs_grad(0), scratch_bytes, s.layer.name());
    implementation = "cudnn " + algos_.to_string() +
                     (slices_ > 1 ? VDNN_MSG(", " << slices_ << " sub-batches of " << s.batch / slices_) : "");
  }

  void forward(const CudaContext& ctx, const KernelArgs& args) override {
    for (int i = 0; i < slices_; ++i) forward_slice(ctx, slice(args, i));
  }

  void backward(const CudaContext& ctx, const KernelArgs& args) override {
    for (int i = 0; i < slices_; ++i) backward_slice(ctx, slice(args, i), i == 0 ? &kZero : &kOne);
  }

 private:
  KernelArgs slice(const KernelArgs& args, int i) const {
    return slices_ == 1 ? args : batch_slice(args, i, x_slice_bytes_, y_slice_bytes_);
  }

  void forward_slice(const CudaContext& ctx, const KernelArgs& a) {
    VDNN_CUDA_CHECK(cudnnConvolutionForward(ctx.cudnn, &kOne, x_, a.in[0], w_, a.params[0], conv_,
                                            static_cast<cudnnConvolutionFwdAlgo_t>(algos_.forward.algo), a.scratch,
                                            scratch_bytes, &kZero, y_, a.out));
    if (p_.bias) VDNN_CUDA_CHECK(cudnnAddTensor(ctx.cudnn, &kOne, bias_, a.params[1], &kOne, y_, a.out));
  }

  // weights_beta: 0 overwrites the filter and bias gradients (the first slice), 1 adds to them.
  void backward_slice(const CudaContext& ctx, const KernelArgs& a, const float* weights_beta) {
    if (a.d_params[0]) {
      VDNN_CUDA_CHECK(
          cudnnConvolutionBackwardFilter(ctx.cudnn, &kOne, x_, a.in[0], y_, a.d_out, conv_,
                                         static_cast<cudnnConvolutionBwdFilterAlgo_t>(algos_.backward_filter.algo),
                                         a.scratch, scratch_bytes, weights_beta, w_, a.d_params[0]));
    }
    if (p_.bias && a.d_params[1])
      VDNN_CUDA_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &kOne, y_, a.d_out, weights_beta, bias_, a.d_params[1]));
    if (a.d_in[0]) {
      VDNN_CUDA_CHECK(
          cudnnConvolutionBackwardData(ctx.cudnn, &kOne, w_, a.params[0], y_, a.d_out, conv_,
                                       static_cast<cudnnConvolutionBwdDataAlgo_t>(algos_.backward_data.algo), a.scratch,
                                       scratch_bytes, &kZero, x_, a.d_in[0]));
    }
  }

  ConvLayer::Params p_;
  int slices_;
  TensorDesc x_, y_;  // one slice's
  size_t x_slice_bytes_, y_slice_bytes_;
  FilterDesc w_;
  TensorDesc bias_;
  ConvDesc conv_;
  ConvAlgos algos_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cudnn_conv_kernel(const CudaKernelSetup& s, const CudaContext& ctx) {
  return std::make_unique<CudnnConvKernel>(s, ctx);
}

}  // namespace vdnn
