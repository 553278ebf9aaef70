// tests/cuda/cuda_test_util.h — what the GPU tests share: skipping without a GPU, and the
// "GPU result matches the CPU backend" criterion.
//
// Model: every GPU test starts with VDNN_REQUIRE_GPU(): with no usable device (here: no driver,
// cudaGetDeviceCount returns error 35) it skips with "no CUDA device: <the runtime's reason>",
// so the tests are compiled and listed everywhere the backend builds, and run where a GPU answers.
// Results are compared element by element: |gpu - cpu| <= 1e-4 * max(|gpu|, |cpu|) + a floor of
// 1e-5 x the largest |cpu| entry (elements that cancel to ~0 are judged against the tensor's
// scale).
//
//   TEST(CudaOps, Conv) {
//     VDNN_REQUIRE_GPU();
//     EXPECT_TRUE(gpu_matches_cpu(gpu_y, cpu_y));
//   }
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/cuda_device.h"
#include "reference/finite_difference.h"

#define VDNN_REQUIRE_GPU()                                                       \
  do {                                                                           \
    if (const std::string why = ::vdnn::cuda_unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << "no CUDA device: " << why;                                 \
  } while (0)

namespace vdnn::test {

inline constexpr double kGpuRelTol = 1e-4;

inline ::testing::AssertionResult gpu_matches_cpu(const std::vector<float>& gpu, const std::vector<float>& cpu,
                                                  double rel_tol = kGpuRelTol) {
  double scale = 0;
  for (float v : cpu) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  return ref::values_close(gpu, cpu, rel_tol, 0.1 * rel_tol * scale);
}

}  // namespace vdnn::test
