#include "backends/cuda/cuda_check.h"

#include "vdnn/error.h"

namespace vdnn {

std::string describe(cudaError_t status) {
  return VDNN_MSG(cudaGetErrorString(status)
                  << " (" << cudaGetErrorName(status) << ", error " << static_cast<int>(status) << ")");
}

std::string describe(cudnnStatus_t status) {
  return VDNN_MSG(cudnnGetErrorString(status) << " (cuDNN status " << static_cast<int>(status) << ")");
}

std::string describe(cublasStatus_t status) {
  return VDNN_MSG(cublasGetStatusString(status) << " (cuBLAS status " << static_cast<int>(status) << ")");
}

namespace cuda_detail {

void fail(const std::string& what, const char* statement, const char* file, int line) {
  VDNN_THROW("CUDA call failed: " << statement << " (" << file << ":" << line << "): " << what);
}

}  // namespace cuda_detail
}  // namespace vdnn
