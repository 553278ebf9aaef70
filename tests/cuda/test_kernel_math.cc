// The per-element math of the CUDA backend's own kernels (kernel_math.h), run on the HOST against
// the reference ops: pooling (ceil mode, padding, include/exclude, global), the dropout mask, the
// cross-entropy loss and gradient, and the SGD step bit for bit against the CPU backend's loop.
// Needs no GPU: this is what of the CUDA kernels runs here.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/kernel_math.h"
#include "io/model_file.h"
#include "layers/layer_test_util.h"
#include "layers/pool.h"
#include "runtime/net.h"

namespace vdnn::test {
namespace test_kernel_math {

namespace km = kernel_math;

void expect_pooling_matches_reference(const nlohmann::json& fields, int64_t n, int64_t c, int64_t h, int64_t w) {
  SCOPED_TRACE(fields.dump());
  auto layer = layer_from(fields);
  const auto& pool = static_cast<const PoolLayer&>(*layer);
  const PoolLayer::Window win = pool.window(Shape{c, h, w});
  const PoolWindow pw{win.kh, win.kw, win.sh, win.sw, win.pt, win.pl, h, w, win.oh, win.ow, pool.p().exclude_padding};
  ref::Pool2dParams rp;
  rp.kind = pool.p().max               ? ref::PoolKind::max
            : pool.p().exclude_padding ? ref::PoolKind::avg_exclude_padding
                                       : ref::PoolKind::avg_include_padding;
  rp.kh = win.kh, rp.kw = win.kw, rp.sh = win.sh, rp.sw = win.sw;
  rp.pt = win.pt, rp.pl = win.pl, rp.pb = win.pb, rp.pr = win.pr;
  const auto x = ref::random_vector(static_cast<size_t>(n * c * h * w), 5);
  const ref::Tensor4 rx(n, c, h, w, x);
  std::vector<float> y(static_cast<size_t>(n * c * win.oh * win.ow)), dx(x.size());
  std::vector<int32_t> argmax(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    if (pool.p().max)
      km::max_pool_forward_at(x.data(), y.data(), argmax.data(), pw, static_cast<int64_t>(i));
    else
      y[i] = km::avg_pool_forward_at(x.data(), pw, static_cast<int64_t>(i));
  }
  EXPECT_TRUE(ref::values_close(y, ref::pool2d_forward(rx, rp).v, 1e-6, 1e-6)) << "forward";
  const auto dy = ref::random_vector(y.size(), 6);
  for (size_t i = 0; i < dx.size(); ++i)
    dx[i] = pool.p().max ? km::max_pool_backward_at(dy.data(), argmax.data(), pw, static_cast<int64_t>(i))
                         : km::avg_pool_backward_at(dy.data(), pw, static_cast<int64_t>(i));
  const auto rdx = ref::pool2d_backward(rx, ref::Tensor4(n, c, win.oh, win.ow, dy), rp);
  EXPECT_TRUE(ref::values_close(dx, rdx.v, 1e-5, 1e-6)) << "backward";
}

TEST(CudaKernelMath, PoolingMatchesTheReference) {
  expect_pooling_matches_reference({{"type", "max_pool"}, {"kernel", 2}}, 2, 3, 8, 6);
  expect_pooling_matches_reference({{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}}, 2,
                                   4, 9, 10);
  expect_pooling_matches_reference({{"type", "max_pool"}, {"kernel", 3}, {"stride", 1}, {"pad", 1}}, 1, 2, 7, 7);
  expect_pooling_matches_reference({{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"ceil", true}}, 1, 2, 12, 12);
  for (bool exclude : {true, false}) {
    expect_pooling_matches_reference(
        {{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}, {"exclude_padding", exclude}},
        2, 2, 7, 8);
    expect_pooling_matches_reference(
        {{"type", "avg_pool"}, {"kernel", 5}, {"stride", 3}, {"pad", 2}, {"exclude_padding", exclude}}, 2, 2, 13, 11);
  }
  expect_pooling_matches_reference({{"type", "avg_pool"}, {"global", true}}, 3, 5, 6, 6);
}

TEST(CudaKernelMath, CrossEntropyLossAndGradientMatchTheReference) {
  const int64_t batch = 4, valid = 3, classes = 6;
  const auto logits = ref::random_vector(batch * classes, 7, -3.0f, 3.0f);
  std::vector<float> p(logits.size());
  for (int64_t n = 0; n < batch; ++n) {
    double top = -1e30, sum = 0;
    for (int64_t k = 0; k < classes; ++k) top = std::max<double>(top, logits[n * classes + k]);
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(logits[n * classes + k] - top);
    for (int64_t k = 0; k < classes; ++k)
      p[n * classes + k] = static_cast<float>(std::exp(logits[n * classes + k] - top) / sum);
  }
  const std::vector<int32_t> labels{0, 5, 2, 2};
  const std::vector<int64_t> valid_labels{0, 5, 2};
  const ref::Tensor4 rx(valid, classes, 1, 1, std::vector<float>(logits.begin(), logits.begin() + valid * classes));
  EXPECT_NEAR(km::cross_entropy(p.data(), labels.data(), valid, classes), ref::softmax_cross_entropy(rx, valid_labels),
              1e-5);
  const auto rdx = ref::softmax_cross_entropy_backward(rx, valid_labels);
  for (int64_t i = 0; i < batch * classes; ++i) {
    const float dx = km::cross_entropy_backward_at(p.data(), labels.data(), valid, classes, i);
    if (i < valid * classes)
      EXPECT_NEAR(dx, rdx.v[i], 1e-6) << i;
    else
      EXPECT_EQ(dx, 0.0f) << "padded sample, element " << i;
  }
}

TEST(CudaKernelMath, DropoutKeepsTheRateAndDrawsPerStep) {
  const int64_t n = 100000;
  const float keep = 0.75f;
  int64_t kept = 0, same = 0;
  const uint64_t key3 = km::dropout_key(42, 3), key4 = km::dropout_key(42, 4);
  for (int64_t i = 0; i < n; ++i) {
    const float m = km::dropout_mask_at(key3, keep, i);
    ASSERT_TRUE(m == 0.0f || m == 1.0f / keep) << m;
    kept += m != 0.0f;
    same += m == km::dropout_mask_at(key4, keep, i);
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, keep, 0.01);
  EXPECT_LT(same, n * 0.7) << "the next step draws an independent mask";
}

TEST(CudaKernelMath, SgdStepIsTheCpuBackendsLoopBitForBit) {
  auto w = ref::random_vector(1000, 8), g = ref::random_vector(1000, 9), v = ref::random_vector(1000, 10);
  auto w_cpu = w, v_cpu = v;
  for (int64_t i = 0; i < 1000; ++i) km::sgd_at(w.data(), g.data(), v.data(), 0.05f, 0.9f, 5e-4f, 1.0f, i);
  for (size_t i = 0; i < 1000; ++i) {  // backends/cpu/cpu_backend.cc
    v_cpu[i] = 0.9f * v_cpu[i] + (g[i] + 5e-4f * w_cpu[i]);
    w_cpu[i] -= 0.05f * v_cpu[i];
  }
  EXPECT_EQ(w, w_cpu);
  EXPECT_EQ(v, v_cpu);
}

TEST(CudaKernelMath, AdamwStepIsTheCpuBackendsKernelBitForBit) {
  const int64_t n = 1000;
  auto w = ref::random_vector(n, 11), g = ref::random_vector(n, 12), m = ref::random_vector(n, 13),
       v = ref::random_vector(n, 14, 0.0f, 1.0f);
  auto w_cpu = w, m_cpu = m, v_cpu = v;
  const AdamwStep s{.decay = 1 - 1e-3f * 0.01f,
                    .beta1 = 0.9f,
                    .one_minus_beta1 = 0.1f,
                    .beta2 = 0.95f,
                    .one_minus_beta2 = 0.05f,
                    .neg_step_size = -1e-3f / 0.19f,
                    .bias_correction2_sqrt = 0.3122f,
                    .eps = 1e-8f,
                    .grad_scale = 0.7f};
  for (int64_t i = 0; i < n; ++i) km::adamw_at(w.data(), g.data(), m.data(), v.data(), s, i);
  Net net(load_model("fmnist_cnn"), {.batch = 2});  // backends/cpu/cpu_backend.cc's loop
  net.run_on_compute([&] { net.backend().adamw_update({w_cpu.data(), g.data(), m_cpu.data(), v_cpu.data(), n, s}); });
  EXPECT_EQ(w, w_cpu);
  EXPECT_EQ(m, m_cpu);
  EXPECT_EQ(v, v_cpu);
}

}  // namespace test_kernel_math
}  // namespace vdnn::test
