// backends/cuda/cuda_backend.h — the Backend on a GPU: cuDNN and cuBLAS kernels on a CudaDevice.
//
// Model: one CudaDevice (four CUDA streams; the GPU of the process's local rank), the cuDNN and cuBLAS handles bound to
// its compute stream, and one CudaKernel per node in plain fp32 layouts. The executor's compute work runs on the host
// thread and enqueues onto the compute stream: kernels, gradient sums (cuBLAS axpy), the input upload (cudaMemcpyAsync
// from the pinned staging buffer) and the SGD update (a small CUDA kernel). The arena is one cudaMalloc, host memory is
// pinned, parameters cross the edge as plain copies. Nothing synchronizes except the host-side calls (download, upload,
// export/import).
//
//   if (std::string why = cuda_unavailable_reason(); !why.empty()) ...;   // e.g. no driver
//   std::unique_ptr<Backend> gpu = make_cuda_backend(graph, {.kind = BackendKind::kCuda, .batch =
//   64}); Net net(load_model("vgg16"), {.batch = 64, .policy = Policy::kAll, .backend =
//   BackendKind::kCuda});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend_api/backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cudnn_descriptors.h"
#include "backends/cuda/nccl_communicator.h"

namespace vdnn {

class CudaBackend final : public Backend {
 public:
  CudaBackend(const Graph& graph, const BackendOptions& options);  // throws Error without a GPU
  ~CudaBackend() override;

  const char* name() const override { return "cuda"; }
  Device& device() override { return device_; }
  std::vector<size_t> value_bytes() const override { return value_bytes_; }
  std::vector<NodeFacts> facts() const override { return facts_; }
  std::string implementation(int node) const override { return kernels_[node]->implementation; }
  std::vector<std::string> slow_kernels(int) const override { return {}; }
  std::unique_ptr<DeviceBuffer> allocate_arena(size_t bytes) override;
  HostMemory host_memory() const override;

  void forward(int node, const KernelArgs& args) override;
  void backward(int node, const KernelArgs& args) override;
  void accumulate(void* into, const void* addend, size_t bytes) override;
  void load_input(void* dst, const float* host_src, size_t bytes) override;
  void sgd_update(const SgdUpdate& u) override;
  void adamw_update(const AdamwUpdate& u) override;

  void download(void* host_dst, const void* device_src, size_t bytes) override;
  void upload(void* device_dst, const void* host_src, size_t bytes) override;
  std::vector<float> export_param(int node, int k, const void* device_data) override;
  void import_param(int node, int k, const std::vector<float>& plain, void* device_data) override;
  // NCCL over `host` (nccl_communicator.h), on the device's comm stream, with any number of ranks
  // (one rank too: a SingleRank host would scale device memory on the host).
  std::unique_ptr<Communicator> gradient_communicator(Communicator& host, const CommOptions& options) override {
    return make_nccl_communicator(device_, host, options);
  }

  const CudaKernel& kernel(int node) const { return *kernels_[node]; }

 private:
  const Graph& graph_;
  CudaDevice device_;
  CudaLibraries libraries_;
  std::vector<std::unique_ptr<CudaKernel>> kernels_;
  std::vector<size_t> value_bytes_;
  std::vector<NodeFacts> facts_;
};

std::unique_ptr<Backend> make_cuda_backend(const Graph& graph, const BackendOptions& options);

}  // namespace vdnn
