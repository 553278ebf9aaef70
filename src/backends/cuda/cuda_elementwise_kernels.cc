// ReLU and ReLU6 on cuDNN (in place; backward from the output, as vDNN), dropout on the backend's own mask
// kernel, flatten as a copy (every layout here is plain NCHW, so flattening moves no element).
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_kernels.h"
#include "layers/elementwise.h"

namespace vdnn {
namespace {

// relu: CUDNN_ACTIVATION_RELU; relu6: CUDNN_ACTIVATION_CLIPPED_RELU with coef 6.
class CudnnReluKernel : public CudaKernel {
 public:
  explicit CudnnReluKernel(const CudaKernelSetup& s)
      : x_(tensor_of(s.batch, s.in_shapes[0])),
        relu_(s.layer.type() == "relu6" ? CUDNN_ACTIVATION_CLIPPED_RELU : CUDNN_ACTIVATION_RELU,
              s.layer.type() == "relu6" ? Relu6Layer::kCeiling : 0.0) {
    declare_sizes(s);
    implementation = s.layer.type() == "relu6" ? "cudnn activation_clipped_relu(6)" : "cudnn activation_relu";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    VDNN_CUDA_CHECK(cudnnActivationForward(ctx.cudnn, relu_, &kOne, x_, a.in[0], &kZero, x_, a.out));
  }

  // relu'(x) = [x > 0] = [y > 0]: the output stands in for the (possibly overwritten) input;
  // relu6'(x) = [0 < x < 6] = [0 < y < 6] likewise.
  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    VDNN_CUDA_CHECK(
        cudnnActivationBackward(ctx.cudnn, relu_, &kOne, x_, a.out, x_, a.d_out, x_, a.out, &kZero, x_, a.d_in[0]));
  }

 private:
  TensorDesc x_;
  ActivationDesc relu_;
};

// y = x * mask, mask in {0, 1/(1-rate)} drawn per step from (seed, step, element); backward
// dx = dy * mask; evaluation copies. The CPU backend draws its masks from a sequential generator,
// so the two backends drop different elements (same rate, same scale).
class CudaDropoutKernel : public CudaKernel {
 public:
  explicit CudaDropoutKernel(const CudaKernelSetup& s)
      : seed_(s.seed),
        keep_(static_cast<float>(1.0 - static_cast<const DropoutLayer&>(s.layer).rate())),
        count_(s.batch * s.in_shapes[0].elements()) {
    declare_sizes(s);  // saved: the mask
    implementation = "cuda dropout";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.training) {
      copy_on_stream(ctx, a.out, a.in[0], out_bytes);
      return;
    }
    launch_dropout_forward(static_cast<const float*>(a.in[0]), static_cast<float*>(a.saved[0]),
                           static_cast<float*>(a.out), count_, seed_, a.step, keep_, ctx.stream);
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (!a.d_in[0]) return;
    launch_multiply(static_cast<const float*>(a.d_out), static_cast<const float*>(a.saved[0]),
                    static_cast<float*>(a.d_in[0]), count_, ctx.stream);
  }

 private:
  uint64_t seed_;
  float keep_;
  int64_t count_;
};

class CudaFlattenKernel : public CudaKernel {
 public:
  explicit CudaFlattenKernel(const CudaKernelSetup& s) {
    declare_sizes(s);
    implementation = "copy";
  }
  void forward(const CudaContext& ctx, const KernelArgs& a) override { copy_on_stream(ctx, a.out, a.in[0], out_bytes); }
  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (a.d_in[0]) copy_on_stream(ctx, a.d_in[0], a.d_out, out_bytes);
  }
};

}  // namespace

std::unique_ptr<CudaKernel> make_cudnn_relu_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudnnReluKernel>(s);
}
std::unique_ptr<CudaKernel> make_cuda_dropout_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudaDropoutKernel>(s);
}
std::unique_ptr<CudaKernel> make_cuda_flatten_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CudaFlattenKernel>(s);
}

}  // namespace vdnn
