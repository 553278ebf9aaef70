#include "backend_api/backend.h"

#include <cmath>
#include <vector>

#include "vdnn/error.h"

namespace vdnn {

BackendKind parse_backend(const std::string& text) {
  if (text == "cpu") return BackendKind::kCpu;
  if (text == "cuda") return BackendKind::kCuda;
  VDNN_THROW("--backend: expected cpu or cuda, got '" << text << "'");
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
