// tests/plan/fixed_costs.h — a cost model with made-up, node-dependent kernel times and a link of
// a given bandwidth, for simulator tests that need exact, machine-independent times.
//
//   const SimResult r = simulate(program, test::FixedCosts(1e9));   // 1 GB/s link
//   test::FixedCosts(0).copy_seconds(1 << 20);                       // 0: copies are free
#pragma once

#include <cstddef>

#include "plan/simulator.h"

namespace vdnn::test {

struct FixedCosts : CostModel {
  double bytes_per_second = 0;  // 0: copies cost nothing
  explicit FixedCosts(double bw = 0) : bytes_per_second(bw) {}
  double forward_seconds(int node) const override { return 1e-3 * (1 + node % 3); }
  double backward_seconds(int node) const override { return 2e-3 * (1 + node % 3); }
  double copy_seconds(size_t bytes) const override {
    return bytes_per_second > 0 ? static_cast<double>(bytes) / bytes_per_second : 0.0;
  }
};

}  // namespace vdnn::test
