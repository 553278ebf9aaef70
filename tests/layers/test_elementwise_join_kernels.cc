// ReLU, ReLU6, dropout, flatten, concat (images and vectors) and add kernels against the
// reference; finite differences.
#include <cmath>
#include <limits>

#include "error_of.h"
#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace test_elementwise_join_kernels {

using tag = dnnl::memory::format_tag;

// Values at least 0.05 away from zero, so ReLU's kink is never crossed by a difference step.
std::vector<float> away_from_zero(size_t n, uint64_t seed) {
  auto v = ref::random_vector(n, seed);
  for (float& x : v) x = x < 0 ? x - 0.05f : x + 0.05f;
  return v;
}

// Values in [-3, 9] at least 0.05 away from 0 and 6, the kinks of ReLU and ReLU6.
std::vector<float> away_from_kinks(size_t n, uint64_t seed) {
  auto v = ref::random_vector(n, seed, -3.0f, 9.0f);
  for (float& x : v)
    for (float kink : {0.0f, 6.0f})
      if (std::abs(x - kink) < 0.05f) x = x < kink ? kink - 0.05f : kink + 0.05f;
  return v;
}

struct Activation {
  const char* type;
  float ceiling;  // relu: none
};
const Activation kActivations[] = {{"relu", std::numeric_limits<float>::infinity()}, {"relu6", 6.0f}};

TEST(ReluKernel, MatchesReferenceAndFiniteDifferences) {
  for (const Activation& act : kActivations) {
    for (auto layout : {tag::nchw, tag::aBcd16b}) {
      SCOPED_TRACE(act.type);
      auto layer = layer_from({{"type", act.type}});
      KernelHarness h(*layer, 2, {Shape{16, 2, 3}}, layout);  // 16 channels: one aBcd16b block
      const auto x = away_from_kinks(2 * 16 * 6, 61);
      const ref::Tensor4 rx(2, 16, 2, 3, x);
      EXPECT_TRUE(ref::values_close(h.forward({x}), ref::relu_forward(rx, act.ceiling).v, 0, 0));
      check_gradients(h, {x}, 1e-2, 1e-3, 1e-4);
    }
  }
}

// At the kinks themselves the gradient is PyTorch's: 0 at x == 0 (relu_backward's threshold) and,
// for ReLU6, 0 at x == 6 too (hardtanh_backward passes it only where 0 < x < 6). The kernels read
// y, not x (they run in place); this pins that y carries the same decision.
TEST(ReluKernel, GradientAtTheKinksIsPyTorchs) {
  const std::vector<float> kinks{0.0f, -0.0f, 6.0f, 5.9999995f, 6.0000005f, 1e-30f, -1e-30f, -6.0f,
                                 3.0f, 7.0f,  0.0f, 6.0f,       -2.0f,      6.0f,   0.0f,    2.5f};
  for (const Activation& act : kActivations) {
    for (auto layout : {tag::nchw, tag::aBcd16b}) {
      SCOPED_TRACE(act.type);
      auto layer = layer_from({{"type", act.type}});
      KernelHarness h(*layer, 1, {Shape{16, 1, 2}}, layout);
      std::vector<float> x = kinks;
      x.insert(x.end(), kinks.rbegin(), kinks.rend());
      const ref::Tensor4 rx(1, 16, 1, 2, x);
      EXPECT_TRUE(ref::values_close(h.forward({x}), ref::relu_forward(rx, act.ceiling).v, 0, 0));
      const auto dy = ref::random_vector(x.size(), 66, 0.5f, 1.5f);
      const auto dx = h.backward(dy).d_in[0];
      EXPECT_EQ(dx, ref::relu_backward(rx, ref::Tensor4(1, 16, 1, 2, dy), act.ceiling).v);
    }
  }
}

TEST(DropoutKernel, MasksScalesAndBackpropagatesThroughTheSameMask) {
  auto layer = layer_from({{"type", "dropout"}, {"rate", 0.25}});
  KernelHarness h(*layer, 4, {Shape{8, 5, 5}}, tag::nchw);
  const auto x = away_from_zero(800, 62);
  h.set_step(3);
  const auto y = h.forward({x});
  int dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0.0f)
      ++dropped;
    else
      EXPECT_NEAR(y[i], x[i] / 0.75f, 1e-6);
  }
  EXPECT_NEAR(dropped / 800.0, 0.25, 0.06);
  check_gradients(h, {x}, 1e-2, 1e-3, 1e-4);
  h.set_step(4);
  EXPECT_NE(h.forward({x}), y) << "a new step must draw a new mask";
  KernelHarness eval(*layer, 4, {Shape{8, 5, 5}}, tag::nchw, /*training=*/false);
  EXPECT_EQ(eval.forward({x}), x);
}

TEST(FlattenKernel, ProducesNchwOrderFromBlockedInput) {
  auto layer = layer_from({{"type", "flatten"}});
  KernelHarness h(*layer, 2, {Shape{16, 2, 3}}, tag::aBcd16b);
  const auto x = ref::random_vector(192, 63);
  EXPECT_EQ(h.forward({x}), x);
  const auto dy = ref::random_vector(192, 64);
  EXPECT_EQ(h.backward(dy).d_in[0], dy);
}

TEST(ConcatKernel, MatchesReferenceForAlignedAndUnalignedSlices) {
  for (auto channels : {std::vector<int64_t>{16, 32, 16}, std::vector<int64_t>{3, 5, 8}}) {
    for (auto layout : {tag::nchw, tag::aBcd16b}) {
      auto layer = layer_from({{"type", "concat"}});
      std::vector<Shape> shapes;
      std::vector<std::vector<float>> xs;
      std::vector<ref::Tensor4> rxs;
      for (size_t i = 0; i < channels.size(); ++i) {
        shapes.push_back(Shape{channels[i], 3, 4});
        xs.push_back(ref::random_vector(2 * channels[i] * 12, 70 + i));
        rxs.emplace_back(2, channels[i], 3, 4, xs.back());
      }
      KernelHarness h(*layer, 2, shapes, layout);
      EXPECT_TRUE(ref::values_close(h.forward(xs), ref::concat_channels(rxs).v, 0, 0));
      const ref::Tensor4 cat = ref::concat_channels(rxs);
      const auto dy = ref::random_vector(cat.v.size(), 75);
      const auto g = h.backward(dy);
      const auto rdx = ref::concat_channels_backward(ref::Tensor4(cat.n, cat.c, cat.h, cat.w, dy), channels);
      for (size_t i = 0; i < channels.size(); ++i)
        EXPECT_TRUE(ref::values_close(g.d_in[i], rdx[i].v, 0, 0)) << "input " << i;
    }
  }
}

// fc outputs (N x K_i) joined end to end per sample, as rewrites/fc_split.h's blocks are.
TEST(ConcatKernel, JoinsVectorsAndSlicesTheirGradient) {
  const std::vector<int64_t> lengths{4, 3, 3};
  const int64_t batch = 2, total = 10;
  auto layer = layer_from({{"type", "concat"}});
  std::vector<Shape> shapes;
  std::vector<std::vector<float>> xs;
  for (size_t i = 0; i < lengths.size(); ++i) {
    shapes.push_back(Shape{lengths[i]});
    xs.push_back(ref::random_vector(static_cast<size_t>(batch * lengths[i]), 90 + i));
  }
  EXPECT_EQ(layer->infer_shape(shapes), Shape{total});
  std::vector<float> expected;  // sample n: x0[n], x1[n], x2[n]
  for (int64_t n = 0; n < batch; ++n)
    for (size_t i = 0; i < lengths.size(); ++i)
      expected.insert(expected.end(), xs[i].begin() + n * lengths[i], xs[i].begin() + (n + 1) * lengths[i]);
  KernelHarness h(*layer, batch, shapes, tag::nchw);
  EXPECT_EQ(h.forward(xs), expected);
  check_gradients(h, xs, 1e-2, 1e-3, 1e-4);
}

TEST(ConcatLayer, RefusesImagesMixedWithVectors) {
  auto layer = layer_from({{"type", "concat"}});
  const std::string vector_first = error_of([&] { layer->infer_shape({Shape{4}, Shape{4, 1, 1}}); });
  EXPECT_NE(vector_first.find("all vectors K, got 4, 4x1x1"), std::string::npos) << vector_first;
  const std::string image_first = error_of([&] { layer->infer_shape({Shape{4, 1, 1}, Shape{4}}); });
  EXPECT_NE(image_first.find("all vectors K), got 4x1x1, 4"), std::string::npos) << image_first;
}

TEST(AddKernel, MatchesReferenceAndFiniteDifferences) {
  auto layer = layer_from({{"type", "add"}});
  KernelHarness h(*layer, 2, {Shape{16, 3, 3}, Shape{16, 3, 3}}, tag::aBcd16b);
  const auto a = ref::random_vector(288, 81), b = ref::random_vector(288, 82);
  EXPECT_TRUE(ref::values_close(h.forward({a, b}),
                                ref::add(ref::Tensor4(2, 16, 3, 3, a), ref::Tensor4(2, 16, 3, 3, b)).v, 1e-6, 1e-6));
  check_gradients(h, {a, b}, 1e-2, 1e-3, 1e-4);
}

}  // namespace test_elementwise_join_kernels
}  // namespace vdnn::test
