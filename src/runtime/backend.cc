#include "runtime/backend.h"

#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "vdnn/error.h"
#ifdef VDNN_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace vdnn {

BackendKind parse_backend(const std::string& text) {
  if (text == "cpu") return BackendKind::kCpu;
  if (text == "cuda") return BackendKind::kCuda;
  VDNN_THROW("--backend: expected cpu or cuda, got '" << text << "'");
}

std::string backend_unavailable_reason(BackendKind kind) {
  if (kind == BackendKind::kCpu) return {};
#ifdef VDNN_HAVE_CUDA
  return cuda_unavailable_reason();
#else
  return "this vdnn was built without the CUDA backend (configure with -DVDNN_CUDA=ON on a "
         "machine with nvcc and cuDNN)";
#endif
}

std::unique_ptr<Backend> make_backend(const Graph& graph, const BackendOptions& options) {
  if (options.kind == BackendKind::kCpu) return std::make_unique<CpuBackend>(graph, options);
#ifdef VDNN_HAVE_CUDA
  return make_cuda_backend(graph, options);
#else
  VDNN_THROW("--backend cuda: " << backend_unavailable_reason(BackendKind::kCuda));
#endif
}

bool all_finite_floats(const float* data, size_t count) {
  bool finite = true;
#pragma omp parallel for reduction(&& : finite) schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) finite = finite && std::isfinite(data[i]);
  return finite;
}

bool Backend::all_finite(const void* device_data, size_t bytes) {
  constexpr size_t kChunk = size_t{16} << 20;
  std::vector<float> host(std::min(bytes, kChunk) / sizeof(float));
  for (size_t done = 0; done < bytes; done += kChunk) {
    const size_t n = std::min(kChunk, bytes - done);
    download(host.data(), static_cast<const char*>(device_data) + done, n);
    if (!all_finite_floats(host.data(), n / sizeof(float))) return false;
  }
  return true;
}

}  // namespace vdnn
