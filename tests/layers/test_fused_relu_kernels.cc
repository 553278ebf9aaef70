// ReLU fused into the layer before it (issue 24): batch norm (oneDNN's fuse_norm_relu) and a
// two-input add (binary add with a ReLU post-op) write exactly max(0, y) of their unfused kernels,
// in training and evaluation alike. The add's backward is unchanged (the ReLU's own backward ran
// before it); batch norm's applies the ReLU's too, from the mask its forward saved.
#include "layers/layer_test_util.h"
#include "vdnn/error.h"

namespace vdnn::test {
namespace test_fused_relu_kernels {

using tag = dnnl::memory::format_tag;

std::vector<float> relu_of(std::vector<float> y) {
  for (float& v : y) v = std::max(v, 0.0f);
  return y;
}

TEST(FusedRelu, BatchNormWritesExactlyTheReluOfItsOutputInEveryForward) {
  auto layer = layer_from({{"type", "batch_norm"}, {"eps", 1e-5}});
  const Shape shape{32, 5, 3};  // 32 channels: two blocks of the blocked layout
  const auto x = ref::random_vector(4 * 32 * 5 * 3, 41, -2.0f, 2.0f);
  const auto gamma = ref::random_vector(32, 42, 0.5f, 1.5f), beta = ref::random_vector(32, 43);
  const auto mean = ref::random_vector(32, 44), var = ref::random_vector(32, 45, 0.5f, 2.0f);
  for (auto layout : {tag::nchw, tag::aBcd16b}) {
    for (bool training : {true, false}) {
      KernelHarness plain(*layer, 4, {shape}, layout, training);
      KernelHarness fused(*layer, 4, {shape}, layout, training, Precision::kFp32, false, /*applies_relu=*/true);
      EXPECT_NE(fused.kernel().implementation.find("+ relu"), std::string::npos) << fused.kernel().implementation;
      EXPECT_EQ(plain.kernel().implementation.find("+ relu"), std::string::npos);
      for (KernelHarness* h : {&plain, &fused}) h->set_params({gamma, beta, mean, var});
      const auto y = plain.forward({x});
      const auto fused_y = fused.forward({x});
      ASSERT_EQ(fused_y.size(), y.size());
      EXPECT_EQ(fused_y, relu_of(y)) << "training " << training;
      // The running averages a training forward folds in are the same too.
      EXPECT_EQ(fused.params(), plain.params()) << "training " << training;
      if (!training) continue;
      // Backward from the ReLU's output gradient: the same as the ReLU's backward (dy where the
      // output is positive, 0 elsewhere) followed by batch norm's, to float rounding.
      ASSERT_EQ(fused.kernel().saved_mds.size(), 3u);  // mean, variance, the ReLU's mask
      const auto dy = ref::random_vector(y.size(), 46);
      std::vector<float> masked = dy;
      for (size_t i = 0; i < dy.size(); ++i) masked[i] = fused_y[i] > 0.0f ? dy[i] : 0.0f;
      const auto g = plain.backward(masked);
      const auto fused_g = fused.backward(dy);
      EXPECT_TRUE(ref::values_close(fused_g.d_in[0], g.d_in[0], 1e-5, 1e-6));
      for (size_t k = 0; k < 2; ++k)
        EXPECT_TRUE(ref::values_close(fused_g.d_params[k], g.d_params[k], 1e-5, 1e-6)) << k;
    }
  }
}

TEST(FusedRelu, AddOfTwoInputsWritesExactlyTheReluOfTheSum) {
  auto layer = layer_from({{"type", "add"}});
  const Shape shape{16, 4, 3};
  const auto a = ref::random_vector(2 * 16 * 4 * 3, 51), b = ref::random_vector(2 * 16 * 4 * 3, 52);
  std::vector<float> sum(a.size());
  for (size_t i = 0; i < a.size(); ++i) sum[i] = a[i] + b[i];
  for (auto layout : {tag::nchw, tag::aBcd16b}) {
    KernelHarness plain(*layer, 2, {shape, shape}, layout);
    KernelHarness fused(*layer, 2, {shape, shape}, layout, true, Precision::kFp32, false, /*applies_relu=*/true);
    EXPECT_NE(fused.kernel().implementation.find("+ relu"), std::string::npos) << fused.kernel().implementation;
    EXPECT_EQ(plain.forward({a, b}), sum);
    EXPECT_EQ(fused.forward({a, b}), relu_of(sum));
    const auto dy = ref::random_vector(a.size(), 53);
    const auto g = fused.backward(dy);
    ASSERT_EQ(g.d_in.size(), 2u);
    EXPECT_EQ(g.d_in[0], dy);  // the add's backward passes dy on; the ReLU's ran before it
    EXPECT_EQ(g.d_in[1], dy);
  }
}

TEST(FusedRelu, AddOfThreeInputsRunsOneDnnsSumAndFusesNothing) {
  auto layer = layer_from({{"type", "add"}});
  const Shape shape{8, 2, 2};
  const auto a = ref::random_vector(8 * 2 * 2, 61), b = ref::random_vector(8 * 2 * 2, 62),
             c = ref::random_vector(8 * 2 * 2, 63);
  KernelHarness h(*layer, 1, {shape, shape, shape}, tag::nchw);
  EXPECT_EQ(h.kernel().implementation.find("binary"), std::string::npos) << h.kernel().implementation;
  const auto y = h.forward({a, b, c});
  for (size_t i = 0; i < y.size(); ++i) EXPECT_FLOAT_EQ(y[i], a[i] + b[i] + c[i]) << i;
  EXPECT_THROW(KernelHarness(*layer, 1, {shape, shape, shape}, tag::nchw, true, Precision::kFp32, false, true),
               InternalError);  // kernel_setup never asks it
}

}  // namespace test_fused_relu_kernels
}  // namespace vdnn::test
