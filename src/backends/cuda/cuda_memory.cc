#include "backends/cuda/cuda_memory.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_check.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

class CudaArena final : public DeviceBuffer {
 public:
  explicit CudaArena(size_t bytes) : bytes_(bytes) {
    if (bytes == 0) return;
    try {
      VDNN_CUDA_CHECK(cudaMalloc(&data_, bytes));
      VDNN_CUDA_CHECK(cudaMemset(data_, 0, bytes));
    } catch (const Error& e) {
      if (data_) cudaFree(data_);
      VDNN_THROW("device arena of " << format_bytes(bytes) << ": " << e.what());
    }
  }
  ~CudaArena() override {
    if (data_) cudaFree(data_);
  }
  char* data() const override { return static_cast<char*>(data_); }
  size_t bytes() const override { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace

std::unique_ptr<DeviceBuffer> allocate_cuda_arena(size_t bytes) { return std::make_unique<CudaArena>(bytes); }

HostMemory pinned_host_memory() {
  return {[](size_t bytes) -> void* {
            void* p = nullptr;
            return cudaMallocHost(&p, bytes) == cudaSuccess ? p : nullptr;
          },
          [](void* p) { cudaFreeHost(p); }};
}

}  // namespace vdnn
