// tests/reference/finite_difference.h — central-difference gradients and closeness assertions.
//
// Model: to check a backward pass, write the forward pass as ONE scalar function of the flattened
// input, f(x) -> double, and compare the analytic gradient with numeric_gradient(f, x, eps).
// Recommended scalar: a fixed random projection of the output, loss = sum_i y_i * r_i with r drawn
// once from a fixed seed (random_vector + projection_loss below). Then dloss/dy = r, so the
// analytic side is backward(dy = r), and one scalar function exercises every output element with
// distinct weights (a plain sum would hide errors that cancel, e.g. BatchNorm's sum(dx) = 0).
//
// Precision: f is evaluated in FLOAT (the layers produce float outputs), so each f value carries a
// relative rounding error of ~1e-7 times the magnitude of the terms summed into it. The central
// difference (f(x+eps) - f(x-eps)) / 2eps divides that error by 2eps, while its truncation error is
// O(eps^2 * f'''). Use eps ~ 1e-2 .. 1e-3 (larger for functions linear in the perturbed input —
// convolution, fully connected, average pooling — where truncation error is zero), and tolerances
// that reflect float rounding: rel_tol ~ 1e-2 .. 1e-3, abs_tol ~ 1e-3 .. 1e-4 relative to the
// gradient scale. Avoid kinks: keep inputs at least ~10*eps away from ReLU's 0 and from ties in
// max pooling windows, or the two sides of the difference see different branches.
//
//   std::vector<float> r = vdnn::ref::random_vector(y_size, /*seed=*/42);
//   auto f = [&](const std::vector<float>& xv) {
//     return vdnn::ref::projection_loss(forward(xv), r);
//   };
//   std::vector<double> num = vdnn::ref::numeric_gradient(f, x, 1e-2);
//   EXPECT_TRUE(vdnn::ref::gradients_close(backward(x, /*dy=*/r), num, 1e-3, 1e-4));
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "vdnn/rng.h"

namespace vdnn::ref {

// Central differences: g[i] = (f(x + h e_i) - f(x - h e_i)) / (actual step), where the perturbed
// coordinates are rounded to float and the divisor is the exact distance between the two rounded
// points (so rounding of x +- eps does not bias the estimate). Calls f 2 * x.size() times; x is
// restored after each coordinate.
inline std::vector<double> numeric_gradient(const std::function<double(const std::vector<float>&)>& f,
                                            std::vector<float> x, double eps) {
  std::vector<double> g(x.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    const float xp = static_cast<float>(static_cast<double>(x0) + eps);
    const float xm = static_cast<float>(static_cast<double>(x0) - eps);
    x[i] = xp;
    const double fp = f(x);
    x[i] = xm;
    const double fm = f(x);
    x[i] = x0;
    g[i] = (fp - fm) / (static_cast<double>(xp) - static_cast<double>(xm));
  }
  return g;
}

namespace detail {
template <typename A, typename B>
::testing::AssertionResult close_impl(const char* what, const std::vector<A>& actual, const char* actual_name,
                                      const std::vector<B>& expected, const char* expected_name, double rel_tol,
                                      double abs_tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << what << ": size mismatch, " << actual_name << " has " << actual.size()
                                         << " entries, " << expected_name << " has " << expected.size();
  size_t bad = 0, worst = 0;
  double worst_ratio = -1.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]), e = static_cast<double>(expected[i]);
    const double err = std::fabs(a - e);
    const double allowed = abs_tol + rel_tol * std::max(std::fabs(a), std::fabs(e));
    // NaN compares false, so a NaN on either side fails and counts as the worst entry.
    const bool ok = err <= allowed;
    const double ratio =
        ok ? err / (allowed > 0 ? allowed : 1.0)
           : (std::isnan(err) ? std::numeric_limits<double>::infinity() : err / (allowed > 0 ? allowed : 1e-300));
    if (!ok) ++bad;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  const double a = static_cast<double>(actual[worst]), e = static_cast<double>(expected[worst]);
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << actual.size() << " entries differ (rel_tol "
                                       << rel_tol << ", abs_tol " << abs_tol << "); worst at index " << worst << ": "
                                       << actual_name << " = " << a << ", " << expected_name << " = " << e
                                       << ", |diff| = " << std::fabs(a - e) << ", allowed "
                                       << abs_tol + rel_tol * std::max(std::fabs(a), std::fabs(e));
}
}  // namespace detail

// Passes when |analytic[i] - numeric[i]| <= abs_tol + rel_tol * max(|analytic[i]|, |numeric[i]|)
// for every i (and the sizes match). On failure the message gives the number of bad entries and
// the worst one (largest error relative to its allowance): index, both values, difference.
inline ::testing::AssertionResult gradients_close(const std::vector<float>& analytic,
                                                  const std::vector<double>& numeric, double rel_tol, double abs_tol) {
  return detail::close_impl("gradients_close", analytic, "analytic", numeric, "numeric", rel_tol, abs_tol);
}

// Same criterion for two float vectors, e.g. a oneDNN layer's output against a reference's.
inline ::testing::AssertionResult values_close(const std::vector<float>& actual, const std::vector<float>& expected,
                                               double rel_tol, double abs_tol) {
  return detail::close_impl("values_close", actual, "actual", expected, "expected", rel_tol, abs_tol);
}

// n floats uniform in [lo, hi) from vdnn::Rng(seed): deterministic across machines and libraries.
inline std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  vdnn::Rng rng(seed, /*stream=*/0);
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

// sum_i y[i] * r[i] in double: the scalar "loss" whose gradient with respect to y is r.
inline double projection_loss(const std::vector<float>& y, const std::vector<float>& r) {
  if (y.size() != r.size()) {
    ADD_FAILURE() << "projection_loss: y has " << y.size() << " entries, r has " << r.size();
    return std::numeric_limits<double>::quiet_NaN();
  }
  double s = 0.0;
  for (size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * static_cast<double>(r[i]);
  return s;
}

}  // namespace vdnn::ref
