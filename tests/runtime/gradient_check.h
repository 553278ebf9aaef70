// tests/runtime/gradient_check.h — every trainable parameter's gradient in a whole Net against
// central finite differences of the Net's own loss.
//
// Model: one fixed batch (random images, labels 0, 3, 1, 2, … modulo the classes), one forward and
// backward; then, for up to 12 entries of each trainable tensor, the loss is recomputed with the
// entry moved by ±1e-3 (plain layout, through import_param) and compared with the analytic
// gradient. Every forward uses the same dropout masks. Works for any input shape, so it also
// checks networks whose layers read "data"; a token input gets ids below the classes, and a loss
// over [T, V] logits a label per token.
//
//   test::expect_gradients_match_finite_differences(small_dag());              // batch 3
//   test::expect_gradients_match_finite_differences(graph, {.batch = 2, .seed = 5});
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/finite_difference.h"
#include "runtime/net.h"

namespace vdnn::test {

inline void expect_gradients_match_finite_differences(Graph graph,
                                                      const NetOptions& options = {.batch = 3, .seed = 5}) {
  const int64_t per = graph.input_shape().elements(), labels_per_sample = graph.labels_per_sample();
  const int classes = graph.classes();
  const bool tokens = graph.token_input();
  Net net(std::move(graph), options);
  const int64_t batch = options.batch;
  auto images = ref::random_vector(batch * per, 17);
  if (tokens)  // token ids below `classes` (the vocabulary of a language model)
    for (float& x : images) x = std::min(std::floor((x + 1.0f) * 0.5f * classes), classes - 1.0f);
  std::vector<int32_t> labels;  // one per sample, or per token
  for (int64_t n = 0; n < batch * labels_per_sample; ++n)
    labels.push_back(std::vector<int32_t>{0, 3, 1, 2}[n % 4] % classes);
  net.set_batch(images.data(), labels.data(), batch);
  const uint64_t step = net.dropout_step();  // every forward below draws the same dropout masks
  net.forward(true);
  net.backward();
  for (size_t i = 0; i < net.params().size(); ++i) {
    const ParamTensor& p = net.params()[i];
    if (!p.grad) continue;
    // The analytic gradient, exported to the plain layout through a scratch copy of the values.
    const std::vector<float> w = net.export_param(i);
    std::vector<float> saved_grad(p.bytes / 4);
    std::copy(p.grad, p.grad + saved_grad.size(), saved_grad.data());
    std::copy(saved_grad.begin(), saved_grad.end(), p.data);
    const std::vector<float> analytic = net.export_param(i);
    net.import_param(i, w);
    // Check a spread of up to 12 entries per tensor.
    const size_t stride = std::max<size_t>(1, w.size() / 12);
    std::vector<float> a_sub;
    std::vector<double> n_sub;
    for (size_t k = 0; k < w.size(); k += stride) {
      auto f = [&](const std::vector<float>& v) {
        std::vector<float> x = w;
        x[k] = v[0];
        net.import_param(i, x);
        net.set_dropout_step(step);
        const double loss = net.forward(true);
        net.import_param(i, w);
        return loss;
      };
      a_sub.push_back(analytic[k]);
      n_sub.push_back(ref::numeric_gradient(f, {w[k]}, 1e-3)[0]);
    }
    EXPECT_TRUE(ref::gradients_close(a_sub, n_sub, 5e-2, 2e-3)) << net.graph().name() << ": " << p.name;
  }
}

}  // namespace vdnn::test
