// backends/cuda/cuda_check.h — every CUDA runtime, cuDNN and cuBLAS call wrapped once.
//
// Model: VDNN_CUDA_CHECK(call) evaluates a runtime, cuDNN or cuBLAS call (one overload per status
// type) and, unless it succeeded, throws vdnn::Error naming the statement, file, line and the
// library's own description — a device problem the user can act on, not a bug in vdnn:
//   "CUDA call failed: cudaMalloc(&data, bytes) (src/backends/cuda/cuda_memory.cc:20):
//    out of memory (cudaErrorMemoryAllocation, error 2)"
//
//   VDNN_CUDA_CHECK(cudaStreamSynchronize(stream));
//   VDNN_CUDA_CHECK(cudnnSetStream(handle, stream));
//   VDNN_CUDA_CHECK(cublasSaxpy(blas, n, &one, x, 1, y, 1));
//   std::string why = describe(cudaGetDeviceCount(&n));   // "... (cudaErrorInsufficientDriver,
//   error 35)"
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

namespace vdnn {

// The library's text for a status, with its name and number.
std::string describe(cudaError_t status);
std::string describe(cudnnStatus_t status);
std::string describe(cublasStatus_t status);

namespace cuda_detail {

[[noreturn]] void fail(const std::string& what, const char* statement, const char* file, int line);

template <typename Status>
inline void check(Status status, Status success, const char* statement, const char* file, int line) {
  if (status != success) fail(describe(status), statement, file, line);
}
inline void check(cudaError_t s, const char* stmt, const char* file, int line) {
  check(s, cudaSuccess, stmt, file, line);
}
inline void check(cudnnStatus_t s, const char* stmt, const char* file, int line) {
  check(s, CUDNN_STATUS_SUCCESS, stmt, file, line);
}
inline void check(cublasStatus_t s, const char* stmt, const char* file, int line) {
  check(s, CUBLAS_STATUS_SUCCESS, stmt, file, line);
}

}  // namespace cuda_detail
}  // namespace vdnn

#define VDNN_CUDA_CHECK(call) ::vdnn::cuda_detail::check((call), #call, __FILE__, __LINE__)
