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

// x * 0 is 0 for a finite x and NaN for a NaN or an infinity, and a NaN survives the sum: a scan
// without branches, which the compiler vectorizes (`finite && std::isfinite(x)` stays a scalar loop).
bool all_finite_floats(const float* data, size_t count) {
  float zero_if_finite = 0.0f;
#pragma omp parallel for simd reduction(+ : zero_if_finite) schedule(static)
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) zero_if_finite += data[i] * 0.0f;
  return zero_if_finite == 0.0f;
}

double sum_of_squares_floats(const float* data, size_t count, double sum) {
  for (size_t i = 0; i < count; ++i) sum += static_cast<double>(data[i]) * static_cast<double>(data[i]);
  return sum;
}

double Backend::sum_of_squares(const void* device_data, size_t bytes) {
  constexpr size_t kChunk = size_t{16} << 20;
  std::vector<float> host(std::min(bytes, kChunk) / sizeof(float));
  double sum = 0;
  for (size_t done = 0; done < bytes; done += kChunk) {
    const size_t n = std::min(kChunk, bytes - done);
    download(host.data(), static_cast<const char*>(device_data) + done, n);
    sum = sum_of_squares_floats(host.data(), n / sizeof(float), sum);
  }
  return sum;
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
