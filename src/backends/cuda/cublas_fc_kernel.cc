// Fully connected layer on cuBLAS. Row-major X (N x K), W (U x K), Y (N x U) are, to column-major
// cuBLAS, X^T (K x N), W^T (K x U) and Y^T (U x N), so
//   forward      Y^T = W   X^T  -> gemm(T, N): U x N = (K x U)^T (K x N)
//   d weights    dW^T = X^T dY  -> gemm(N, T): K x U = (K x N) (U x N)^T
//   d input      dX^T = W^T dY^T-> gemm(N, N): K x N = (K x U) (U x N)
// The bias is broadcast with cudnnAddTensor and its gradient is cudnnConvolutionBackwardBias
// (a sum over the batch), both on N x U x 1 x 1.
#include "backends/cuda/cuda_kernels.h"
#include "layers/fc.h"

namespace vdnn {
namespace {

class CublasFcKernel : public CudaKernel {
 public:
  explicit CublasFcKernel(const CudaKernelSetup& s)
      : has_bias_(static_cast<const FcLayer&>(s.layer).p().bias),
        n_(to_int(s.batch, "batch")),
        k_(to_int(s.in_shapes[0].elements(), "fc inputs")),
        u_(to_int(static_cast<const FcLayer&>(s.layer).p().units, "fc units")),
        y_(s.batch, u_, 1, 1),
        bias_(1, u_, 1, 1) {
    to_int(int64_t{n_} * k_, "fc input elements");
    to_int(int64_t{u_} * k_, "fc weight elements");
    declare_sizes(s);
    implementation = "cublas sgemm";
  }

  void forward(const CudaContext& ctx, const KernelArgs& a) override {
    VDNN_CUDA_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, u_, n_, k_, &kOne, f(a.params[0]), k_, f(a.in[0]),
                                k_, &kZero, f(a.out), u_));
    if (has_bias_) VDNN_CUDA_CHECK(cudnnAddTensor(ctx.cudnn, &kOne, bias_, a.params[1], &kOne, y_, a.out));
  }

  void backward(const CudaContext& ctx, const KernelArgs& a) override {
    if (a.d_params[0])
      VDNN_CUDA_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_T, k_, u_, n_, &kOne, f(a.in[0]), k_, f(a.d_out),
                                  u_, &kZero, f(a.d_params[0]), k_));
    if (has_bias_ && a.d_params[1])
      VDNN_CUDA_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &kOne, y_, a.d_out, &kZero, bias_, a.d_params[1]));
    if (a.d_in[0])
      VDNN_CUDA_CHECK(cublasSgemm(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, k_, n_, u_, &kOne, f(a.params[0]), k_,
                                  f(a.d_out), u_, &kZero, f(a.d_in[0]), k_));
  }

 private:
  static float* f(void* p) { return static_cast<float*>(p); }

  bool has_bias_;
  int n_, k_, u_;
  TensorDesc y_, bias_;
};

}  // namespace

std::unique_ptr<CudaKernel> make_cublas_fc_kernel(const CudaKernelSetup& s, const CudaContext&) {
  return std::make_unique<CublasFcKernel>(s);
}

}  // namespace vdnn
