// ReLU, dropout, flatten, concat and add kernels against the reference; finite differences.
#include <cmath>

#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace {

using tag = dnnl::memory::format_tag;

// Values at least 0.05 away from zero, so ReLU's kink is never crossed by a difference step.
std::vector<float> away_from_zero(size_t n, uint64_t seed) {
  auto v = ref::random_vector(n, seed);
  for (float& x : v) x = x < 0 ? x - 0.05f : x + 0.05f;
  return v;
}

TEST(ReluKernel, MatchesReferenceAndFiniteDifferences) {
  for (auto layout : {tag::nchw, tag::aBcd16b}) {
    auto layer = layer_from({{"type", "relu"}});
    KernelHarness h(*layer, 2, {Shape{16, 3, 5}}, layout);
    const auto x = away_from_zero(2 * 16 * 15, 61);
    const ref::Tensor4 rx(2, 16, 3, 5, x);
    EXPECT_TRUE(ref::values_close(h.forward({x}), ref::relu_forward(rx).v, 0, 0));
    check_gradients(h, {x}, 1e-2, 1e-3, 1e-4);
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
    if (y[i] == 0.0f) ++dropped;
    else EXPECT_NEAR(y[i], x[i] / 0.75f, 1e-6);
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

TEST(AddKernel, MatchesReferenceAndFiniteDifferences) {
  auto layer = layer_from({{"type", "add"}});
  KernelHarness h(*layer, 2, {Shape{16, 3, 3}, Shape{16, 3, 3}}, tag::aBcd16b);
  const auto a = ref::random_vector(288, 81), b = ref::random_vector(288, 82);
  EXPECT_TRUE(ref::values_close(h.forward({a, b}),
                                ref::add(ref::Tensor4(2, 16, 3, 3, a), ref::Tensor4(2, 16, 3, 3, b)).v,
                                1e-6, 1e-6));
  check_gradients(h, {a, b}, 1e-2, 1e-3, 1e-4);
}

}  // namespace
}  // namespace vdnn::test
