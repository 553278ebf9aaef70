// tests/layers/layer_test_util.h — building one layer from JSON fields, and the finite-difference
// check of a kernel's backward through KernelHarness.
//
//   auto layer = layer_from({{"type", "conv"}, {"channels", 4}, {"kernel", 3}});
//   check_input_gradients(harness, inputs, /*eps=*/1e-2, /*rel=*/2e-2, /*abs=*/2e-3);
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "core/layer_registry.h"
#include "layers/kernel_harness.h"
#include "reference/finite_difference.h"
#include "reference/reference_ops.h"

namespace vdnn::test {

inline std::unique_ptr<Layer> layer_from(nlohmann::json fields) {
  if (!fields.contains("name")) fields["name"] = "under_test";
  LayerConfig cfg(fields, "test layer");
  return make_layer(fields["name"], fields["type"], cfg);
}

inline ref::Tensor4 as_tensor(const std::vector<int64_t>& dims, std::vector<float> v) {
  int64_t d[4] = {1, 1, 1, 1};
  for (size_t i = 0; i < dims.size(); ++i) d[i] = dims[i];
  return ref::Tensor4(d[0], d[1], d[2], d[3], std::move(v));
}

// Compares `g.d_params` (backward with dy = r) with central differences of sum(r * forward(inputs))
// over each trainable parameter, the inputs held fixed.
inline void check_param_gradients(KernelHarness& h, const std::vector<std::vector<float>>& inputs,
                                  const std::vector<float>& r, const KernelHarness::Grads& g, double eps,
                                  double rel_tol, double abs_tol) {
  // Trainable parameters come first in every layer's ParamSpec list.
  const auto params = h.params();
  for (size_t p = 0; p < g.d_params.size(); ++p) {
    auto f = [&](const std::vector<float>& w) {
      auto all = params;
      all[p] = w;
      h.set_params(all);
      const double loss = ref::projection_loss(h.forward(inputs), r);
      h.set_params(params);
      return loss;
    };
    EXPECT_TRUE(ref::gradients_close(g.d_params[p], ref::numeric_gradient(f, params[p], eps), rel_tol, abs_tol))
        << "parameter " << p;
  }
}

// Compares backward(dy = r) of every input and of every trainable parameter with central
// differences of sum(r * forward(...)). `inputs_too` false: the parameters only (token ids).
inline void check_gradients(KernelHarness& h, const std::vector<std::vector<float>>& inputs, double eps, double rel_tol,
                            double abs_tol, bool inputs_too = true) {
  const std::vector<float> r = ref::random_vector(static_cast<size_t>(h.out_elements()), 4242);
  h.forward(inputs);
  KernelHarness::Grads g = h.backward(r);
  for (size_t which = 0; inputs_too && which < inputs.size(); ++which) {
    auto f = [&](const std::vector<float>& x) {
      auto in = inputs;
      in[which] = x;
      return ref::projection_loss(h.forward(in), r);
    };
    EXPECT_TRUE(ref::gradients_close(g.d_in[which], ref::numeric_gradient(f, inputs[which], eps), rel_tol, abs_tol))
        << "input " << which;
  }
  check_param_gradients(h, inputs, r, g, eps, rel_tol, abs_tol);
}

}  // namespace vdnn::test
