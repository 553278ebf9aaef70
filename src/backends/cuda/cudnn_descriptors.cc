#include "backends/cuda/cudnn_descriptors.h"

#include <limits>

#include "vdnn/error.h"

namespace vdnn {

int to_int(int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int>::max())
    VDNN_THROW(what << " " << v << " does not fit the 32-bit sizes of cuDNN/cuBLAS");
  return static_cast<int>(v);
}

CudaLibraries::CudaLibraries(cudaStream_t compute) {
  context_.stream = compute;
  VDNN_CUDA_CHECK(cudnnCreate(&context_.cudnn));
  try {
    VDNN_CUDA_CHECK(cudnnSetStream(context_.cudnn, compute));
    VDNN_CUDA_CHECK(cublasCreate(&context_.cublas));
    VDNN_CUDA_CHECK(cublasSetStream(context_.cublas, compute));
    VDNN_CUDA_CHECK(cublasSetMathMode(context_.cublas, CUBLAS_DEFAULT_MATH));
  } catch (...) {
    if (context_.cublas) cublasDestroy(context_.cublas);
    cudnnDestroy(context_.cudnn);
    throw;
  }
}

CudaLibraries::~CudaLibraries() {
  cublasDestroy(context_.cublas);
  cudnnDestroy(context_.cudnn);
}

TensorDesc::TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w) {
  VDNN_CUDA_CHECK(cudnnSetTensor4dDescriptor(get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, to_int(n, "batch"),
                                             to_int(c, "channels"), to_int(h, "height"), to_int(w, "width")));
}

FilterDesc::FilterDesc(int64_t k, int64_t c, int64_t r, int64_t s) {
  VDNN_CUDA_CHECK(cudnnSetFilter4dDescriptor(get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, to_int(k, "filters"),
                                             to_int(c, "channels"), to_int(r, "kernel height"),
                                             to_int(s, "kernel width")));
}

ConvDesc::ConvDesc(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h,
                   int64_t dilation_w, int64_t groups) {
  VDNN_CUDA_CHECK(cudnnSetConvolution2dDescriptor(
      get(), to_int(pad_h, "pad"), to_int(pad_w, "pad"), to_int(stride_h, "stride"), to_int(stride_w, "stride"),
      to_int(dilation_h, "dilation"), to_int(dilation_w, "dilation"), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  VDNN_CUDA_CHECK(cudnnSetConvolutionGroupCount(get(), to_int(groups, "groups")));
  VDNN_CUDA_CHECK(cudnnSetConvolutionMathType(get(), CUDNN_FMA_MATH));
}

ActivationDesc::ActivationDesc(cudnnActivationMode_t mode, double coef) {
  VDNN_CUDA_CHECK(cudnnSetActivationDescriptor(get(), mode, CUDNN_PROPAGATE_NAN, coef));
}

LrnDesc::LrnDesc(unsigned size, double alpha, double beta, double k) {
  VDNN_CUDA_CHECK(cudnnSetLRNDescriptor(get(), size, alpha, beta, k));
}

}  // namespace vdnn
