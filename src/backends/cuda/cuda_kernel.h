// backends/cuda/cuda_kernel.h — a layer's computation on cuDNN/cuBLAS, with every buffer handed in.
//
// Model: the CUDA twin of backends/cpu/kernel.h, described by the same Layer. Every value and
// parameter is fp32 in its plain layout (NCHW feature maps, [units, C, H, W] FC weights, OIHW /
// GOIHW filters), so sizes are elements x 4 and parameters cross the host edge without reordering.
// A kernel is created once per layer (cuDNN descriptors, convolution algorithms chosen) and then
// declares what the executor must provide: output bytes, parameter bytes, saved state (max-pool
// argmax, a copy of LRN's output, BN's batch mean and inverse std, dropout mask, softmax
// probabilities) and scratch (cuDNN workspace, the loss's device copy of the labels). forward /
// backward only enqueue work onto ctx.stream and never allocate or synchronize.
//
//   CudaKernelSetup s{layer, /*batch=*/32, in_shapes, out_shape};
//   std::unique_ptr<CudaKernel> k = make_cuda_kernel(s, libs.context());
//   k->forward(libs.context(), args);     // args hold device pointers (labels: host)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend_api/kernel_args.h"
#include "backends/cuda/cudnn_descriptors.h"
#include "backends/cuda_target/cuda_sizes.h"
#include "core/conv_algo.h"
#include "core/layer.h"

namespace vdnn {

class CudaKernel {
 public:
  virtual ~CudaKernel() = default;
  virtual void forward(const CudaContext& ctx, const KernelArgs& args) = 0;
  virtual void backward(const CudaContext& ctx, const KernelArgs& args) = 0;

  size_t out_bytes = 0;
  std::vector<size_t> param_bytes;
  std::vector<size_t> saved_bytes;
  size_t scratch_bytes = 0;
  std::vector<bool> saved_regenerated;  // CudaSizes::saved_regenerated
  std::string implementation;

 protected:
  // Sets the four sizes above to the shape-only ones (backends/cuda_target/cuda_sizes.h), the
  // figures the device-free CUDA target predicts; every kernel's constructor calls it.
  void declare_sizes(const CudaKernelSetup& s);  // e.g. "cudnn fwd implicit_gemm, bwd data algo_1, bwd filter algo_1"
};

// Throws vdnn::Error naming the layer when this backend cannot implement it.
std::unique_ptr<CudaKernel> make_cuda_kernel(const CudaKernelSetup& setup, const CudaContext& ctx);

// An NCHW descriptor for `batch` samples of a per-sample shape (a K vector is K x 1 x 1).
inline TensorDesc tensor_of(int64_t batch, const Shape& s) {
  return TensorDesc(batch, s.channels(), s.height(), s.width());
}

}  // namespace vdnn
