// Fully connected and softmax cross-entropy kernels against the reference; finite differences.
#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace test_fc_loss_kernels {

using tag = dnnl::memory::format_tag;

TEST(FcKernel, FourDimensionalInputMatchesReference) {
  for (auto layout : {tag::nchw, tag::aBcd16b}) {
    auto layer = layer_from({{"type", "fc"}, {"units", 7}});
    KernelHarness h(*layer, 3, {Shape{16, 3, 2}}, layout);
    const auto w = ref::random_vector(7 * 96, 41, -0.3f, 0.3f);
    const auto b = ref::random_vector(7, 42);
    h.set_params({w, b});
    const auto x = ref::random_vector(3 * 96, 43);
    const auto y = h.forward({x});
    const ref::Tensor4 rx(3, 16, 3, 2, x);
    const auto ry = ref::fc_forward(rx, w, b);
    EXPECT_TRUE(ref::values_close(y, ry.v, 1e-4, 1e-4));
    const auto dy = ref::random_vector(y.size(), 44);
    const auto g = h.backward(dy);
    const auto rg = ref::fc_backward(rx, w, ref::Tensor4(3, 7, 1, 1, dy));
    EXPECT_TRUE(ref::values_close(g.d_in[0], rg.dx.v, 1e-4, 1e-4));
    EXPECT_TRUE(ref::values_close(g.d_params[0], rg.dw, 1e-4, 1e-4));
    EXPECT_TRUE(ref::values_close(g.d_params[1], rg.db, 1e-4, 1e-4));
  }
}

TEST(FcKernel, BackwardMatchesFiniteDifferences) {
  auto layer = layer_from({{"type", "fc"}, {"units", 5}});
  KernelHarness h(*layer, 3, {Shape{11}}, tag::nchw);
  h.set_params({ref::random_vector(55, 45), ref::random_vector(5, 46)});
  check_gradients(h, {ref::random_vector(33, 47)}, 1e-2, 1e-2, 1e-3);
}

TEST(SoftmaxCrossEntropyKernel, LossAndGradientMatchReference) {
  auto layer = layer_from({{"type", "softmax_cross_entropy"}});
  KernelHarness h(*layer, 4, {Shape{6}}, tag::nchw);
  const std::vector<int32_t> labels{0, 5, 2, 2};
  h.set_labels(labels);
  const auto x = ref::random_vector(24, 51, -3.0f, 3.0f);
  const auto loss = h.forward({x});
  const std::vector<int64_t> labels64(labels.begin(), labels.end());
  const ref::Tensor4 rx(4, 6, 1, 1, x);
  EXPECT_NEAR(loss[0], ref::softmax_cross_entropy(rx, labels64), 1e-5);
  const auto g = h.backward({});
  EXPECT_TRUE(ref::values_close(g.d_in[0], ref::softmax_cross_entropy_backward(rx, labels64).v, 1e-5, 1e-6));
  auto f = [&](const std::vector<float>& v) { return static_cast<double>(h.forward({v})[0]); };
  EXPECT_TRUE(ref::gradients_close(g.d_in[0], ref::numeric_gradient(f, x, 1e-2), 1e-2, 1e-4));
}

}  // namespace test_fc_loss_kernels
}  // namespace vdnn::test
