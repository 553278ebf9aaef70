// backends/cuda/cudnn_descriptors.h — RAII owners of the cuDNN and cuBLAS objects the kernels use.
//
// Model: every handle and descriptor is created in a constructor and destroyed in the destructor
// (non-copyable, like every resource class here); the kernels hold them as members and pass them
// with get() / implicit conversion. All tensors are fp32 NCHW (cuDNN's dims are ints: a dimension
// beyond 2^31 - 1 throws vdnn::Error). CudaContext is what a kernel needs at run time: the two
// library handles, both bound to the compute stream, and that stream for its own launches/copies.
//
//   CudaLibraries libs(device.stream(StreamKind::kCompute));
//   TensorDesc x(n, c, h, w);
//   ConvDesc conv(/*pad*/ 1, 1, /*stride*/ 1, 1, /*groups*/ 1);
//   cudnnConvolutionForward(libs.context().cudnn, &one, x, ..., conv, ...);
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdint>

#include "backends/cuda/cuda_check.h"

namespace vdnn {

struct CudaContext {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaStream_t stream = nullptr;  // the compute stream
};

// A cuDNN object with its create/destroy pair.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnObject {
 public:
  CudnnObject() { VDNN_CUDA_CHECK(Create(&object_)); }
  ~CudnnObject() { Destroy(object_); }
  CudnnObject(const CudnnObject&) = delete;
  CudnnObject& operator=(const CudnnObject&) = delete;
  T get() const { return object_; }
  operator T() const { return object_; }

 private:
  T object_{};
};

// The cuDNN and cuBLAS handles of one device, bound to its compute stream; cuBLAS in its default
// (full fp32, no TF32) math mode.
class CudaLibraries {
 public:
  explicit CudaLibraries(cudaStream_t compute);
  ~CudaLibraries();
  CudaLibraries(const CudaLibraries&) = delete;
  CudaLibraries& operator=(const CudaLibraries&) = delete;
  const CudaContext& context() const { return context_; }

 private:
  CudaContext context_;
};

// fp32 NCHW tensor n x c x h x w (fully packed).
class TensorDesc
    : public CudnnObject<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor> {
 public:
  TensorDesc(int64_t n, int64_t c, int64_t h, int64_t w);
};

// fp32 KCRS filter: k output channels, c input channels per group, r x s.
class FilterDesc
    : public CudnnObject<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor> {
 public:
  FilterDesc(int64_t k, int64_t c, int64_t r, int64_t s);
};

// 2-D cross-correlation (as every framework's "convolution") in fp32 with FMA math only (no TF32
// tensor cores: results stay comparable with the CPU backend), `groups` groups, dilation as the
// layer's (1: dense). The padding is symmetric: cuDNN has no other.
class ConvDesc : public CudnnObject<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                    cudnnDestroyConvolutionDescriptor> {
 public:
  ConvDesc(int64_t pad_h, int64_t pad_w, int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
           int64_t groups);
};

// `coef`: the ceiling of CUDNN_ACTIVATION_CLIPPED_RELU (6 for ReLU6); unused by the other modes.
class ActivationDesc : public CudnnObject<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
                                          cudnnDestroyActivationDescriptor> {
 public:
  explicit ActivationDesc(cudnnActivationMode_t mode, double coef = 0.0);
};

class LrnDesc : public CudnnObject<cudnnLRNDescriptor_t, cudnnCreateLRNDescriptor, cudnnDestroyLRNDescriptor> {
 public:
  LrnDesc(unsigned size, double alpha, double beta, double k);
};

// An int for cuDNN/cuBLAS; throws vdnn::Error when `v` does not fit.
int to_int(int64_t v, const char* what);

}  // namespace vdnn
