#include "backends/cuda/cuda_backend.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_memory.h"
#include "backends/cuda/device_kernels.h"
#include "vdnn/error.h"

namespace vdnn {

CudaBackend::CudaBackend(const Graph& graph, const BackendOptions& options)
    : graph_(graph), device_(options.cuda_device), libraries_(device_.stream(StreamKind::kCompute)) {
  VDNN_CHECK(
      options.conv_algos.empty() || options.conv_algos.size() == graph.nodes().size(),
      "per-node convolution algorithms: " << options.conv_algos.size() << " for " << graph.nodes().size() << " nodes");
  VDNN_CHECK(options.conv_workspace_bytes.empty() || options.conv_workspace_bytes.size() == graph.nodes().size(),
             "per-node workspace caps: " << options.conv_workspace_bytes.size() << " for " << graph.nodes().size()
                                         << " nodes");
  VDNN_CHECK(
      options.conv_sub_batches.empty() || options.conv_sub_batches.size() == graph.nodes().size(),
      "per-node sub-batches: " << options.conv_sub_batches.size() << " for " << graph.nodes().size() << " nodes");
  value_bytes_.assign(graph.values().size(), 0);
  value_bytes_[0] = float_bytes(options.batch, graph.input_shape());
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    CudaKernelSetup setup = cuda_kernel_setup(graph, static_cast<int>(i), options.batch,
                                              options.conv_algos.empty() ? options.conv_algo : options.conv_algos[i]);
    setup.seed = options.seed * 0x9E3779B97F4A7C15ULL + node.seed_index(static_cast<int>(i));  // as the CPU backend
    setup.sub_batches = options.conv_sub_batches.empty() ? 1 : options.conv_sub_batches[i];
    if (setup.sub_batches < 1 || options.batch % setup.sub_batches != 0)
      node.layer->fail(
          VDNN_MSG(setup.sub_batches << " sub-batches: expected a count >= 1 dividing the batch of " << options.batch));
    if (!options.conv_workspace_bytes.empty()) setup.workspace_cap = options.conv_workspace_bytes.at(i);
    kernels_.push_back(make_cuda_kernel(setup, libraries_.context()));
    const CudaKernel& k = *kernels_.back();
    value_bytes_[node.output] = k.out_bytes;
    facts_.push_back({k.out_bytes, k.saved_bytes, k.scratch_bytes, k.param_bytes, setup.in_place, k.saved_regenerated});
  }
}

CudaBackend::~CudaBackend() {
  try {
    device_.synchronize_all();
  } catch (...) {
  }
}

std::unique_ptr<DeviceBuffer> CudaBackend::allocate_arena(size_t bytes) { return allocate_cuda_arena(bytes); }

HostMemory CudaBackend::host_memory() const { return pinned_host_memory(); }

void CudaBackend::forward(int node, const KernelArgs& args) { kernels_[node]->forward(libraries_.context(), args); }

void CudaBackend::backward(int node, const KernelArgs& args) { kernels_[node]->backward(libraries_.context(), args); }

void CudaBackend::accumulate(void* into, const void* addend, size_t bytes) {
  const int n = to_int(static_cast<int64_t>(bytes / sizeof(float)), "gradient elements");
  VDNN_CUDA_CHECK(cublasSaxpy(libraries_.context().cublas, n, &kOne, static_cast<const float*>(addend), 1,
                              static_cast<float*>(into), 1));
}

void CudaBackend::load_input(void* dst, const float* host_src, size_t bytes) {
  VDNN_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, libraries_.context().stream));
}

void CudaBackend::sgd_update(const SgdUpdate& u) {
  launch_sgd_update(u.weights, u.grads, u.velocity, u.count, u.lr, u.momentum, u.weight_decay, u.grad_scale,
                    libraries_.context().stream);
}

void CudaBackend::adamw_update(const AdamwUpdate& u) {
  launch_adamw_update(u.weights, u.grads, u.exp_avg, u.exp_avg_sq, u.count, u.step, libraries_.context().stream);
}

// cudaMemcpyDefault (unified addressing): a parameter's place may also be a streamed weight's
// pinned host copy (runtime/net.h), which import_param/export_param reach through these two.
void CudaBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  const cudaStream_t s = libraries_.context().stream;
  VDNN_CUDA_CHECK(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDefault, s));
  VDNN_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  const cudaStream_t s = libraries_.context().stream;
  VDNN_CUDA_CHECK(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyDefault, s));
  VDNN_CUDA_CHECK(cudaStreamSynchronize(s));
}

std::vector<float> CudaBackend::export_param(int node, int k, const void* device_data) {
  std::vector<float> plain(static_cast<size_t>(graph_.nodes()[node].params[k].elements()));
  download(plain.data(), device_data, plain.size() * sizeof(float));
  return plain;
}

void CudaBackend::import_param(int node, int k, const std::vector<float>& plain, void* device_data) {
  VDNN_CHECK(plain.size() == static_cast<size_t>(graph_.nodes()[node].params[k].elements()),
             "parameter " << k << " of node " << node << ": " << plain.size() << " values");
  upload(device_data, plain.data(), plain.size() * sizeof(float));
}

std::unique_ptr<Backend> make_cuda_backend(const Graph& graph, const BackendOptions& options) {
  if (const std::string why = cuda_unavailable_reason(); !why.empty())
    VDNN_THROW("--backend cuda: no usable GPU: " << why);
  return std::make_unique<CudaBackend>(graph, options);
}

}  // namespace vdnn
