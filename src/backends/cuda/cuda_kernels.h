// backends/cuda/cuda_kernels.h — one factory per CUDA kernel; make_cuda_kernel dispatches on type.
#pragma once

#include "backends/cuda/cuda_kernel.h"
#include "vdnn/error.h"

namespace vdnn {

// cuDNN's blending factors (output = alpha * result + beta * output), addressable.
inline constexpr float kOne = 1.0f;
inline constexpr float kZero = 0.0f;

std::unique_ptr<CudaKernel> make_cudnn_conv_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cuda_pool_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cudnn_lrn_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cudnn_batch_norm_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cublas_fc_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cudnn_relu_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cuda_dropout_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cuda_flatten_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cuda_concat_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cuda_add_kernel(const CudaKernelSetup& s, const CudaContext& ctx);
std::unique_ptr<CudaKernel> make_cuda_softmax_ce_kernel(const CudaKernelSetup& s, const CudaContext& ctx);

// Device-to-device copy of `bytes` on the compute stream.
inline void copy_on_stream(const CudaContext& ctx, void* dst, const void* src, size_t bytes) {
  VDNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream));
}

}  // namespace vdnn
