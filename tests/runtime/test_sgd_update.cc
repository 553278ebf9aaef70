// The step's SGD update in one pass (issue 24): the CPU backend's sgd_update_all lays every
// parameter end to end and gives each thread an equal share, so shares cross parameter boundaries;
// the result must be each parameter's own update, bit for bit. And the gradient check before it
// (all_finite_floats, branch-free) finds a NaN or an infinity wherever it is.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend_api/backend.h"
#include "io/model_file.h"
#include "reference/finite_difference.h"
#include "runtime/net.h"

namespace vdnn {
namespace test_sgd_update {

struct Param {
  std::vector<float> w, g, v;
  SgdUpdate update(float wd) { return {w.data(), g.data(), v.data(), static_cast<int64_t>(w.size()), 0.05f, 0.9f, wd}; }
};

Param random_param(size_t n, uint64_t seed) {
  return {ref::random_vector(n, seed), ref::random_vector(n, seed + 1), ref::random_vector(n, seed + 2)};
}

TEST(SgdUpdateAll, IsEachParametersOwnUpdateBitForBit) {
  Net net(load_model("fmnist_cnn"), {.batch = 2});
  // Sizes around the one-pass threshold and odd ones, so thread shares start and end mid-parameter.
  const std::vector<size_t> sizes{1, 7, 65536, 100003, 3, 250001, 16};
  std::vector<Param> together, alone;
  for (size_t i = 0; i < sizes.size(); ++i) {
    together.push_back(random_param(sizes[i], 10 * i + 1));
    alone.push_back(together.back());
  }
  std::vector<SgdUpdate> updates;
  for (size_t i = 0; i < together.size(); ++i) updates.push_back(together[i].update(i % 2 ? 5e-4f : 0.0f));
  net.run_on_compute([&] { net.backend().sgd_update_all(updates); });
  for (size_t i = 0; i < alone.size(); ++i) {
    Param& p = alone[i];
    const float wd = i % 2 ? 5e-4f : 0.0f;
    for (size_t k = 0; k < p.w.size(); ++k) {  // the loop of backends/cpu/cpu_backend.cc, one element at a time
      p.v[k] = 0.9f * p.v[k] + (p.g[k] + wd * p.w[k]);
      p.w[k] -= 0.05f * p.v[k];
    }
    EXPECT_EQ(together[i].w, p.w) << "parameter " << i << " of " << sizes[i];
    EXPECT_EQ(together[i].v, p.v) << "parameter " << i;
  }
  net.run_on_compute([&] { net.backend().sgd_update_all({}); });  // nothing to update: no work, no fault
}

TEST(AllFiniteFloats, FindsNanAndInfinitiesAnywhere) {
  const size_t n = 300001;
  std::vector<float> x = ref::random_vector(n, 5, -1e30f, 1e30f);
  x[7] = std::numeric_limits<float>::max();
  x[8] = -std::numeric_limits<float>::max();
  x[9] = std::numeric_limits<float>::denorm_min();
  EXPECT_TRUE(all_finite_floats(x.data(), n));
  EXPECT_TRUE(all_finite_floats(x.data(), 0));
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (size_t at : {size_t{0}, size_t{12345}, n - 1}) {
      std::vector<float> y = x;
      y[at] = bad;
      EXPECT_FALSE(all_finite_floats(y.data(), n)) << bad << " at " << at;
    }
  }
}

}  // namespace test_sgd_update
}  // namespace vdnn
