// LRN and batch normalization kernels against the reference; backward by finite differences.
#include "layers/layer_test_util.h"
#include "vdnn/error.h"

namespace vdnn::test {
namespace test_norm_kernels {

using tag = dnnl::memory::format_tag;

TEST(LrnKernel, MatchesReferenceAndFiniteDifferences) {
  for (auto layout : {tag::nchw, tag::aBcd16b}) {
    auto layer = layer_from({{"type", "lrn"}, {"size", 5}, {"alpha", 0.5}, {"beta", 0.75}, {"k", 2.0}});
    KernelHarness h(*layer, 2, {Shape{7, 3, 5}}, layout);
    const auto x = ref::random_vector(2 * 7 * 3 * 5, 21);
    const auto y = h.forward({x});
    ref::LrnParams p{5, 0.5, 0.75, 2.0};
    const ref::Tensor4 rx(2, 7, 3, 5, x);
    EXPECT_TRUE(ref::values_close(y, ref::lrn_forward(rx, p).v, 1e-4, 1e-5));
    const auto dy = ref::random_vector(y.size(), 22);
    const auto g = h.backward(dy);
    EXPECT_TRUE(ref::values_close(g.d_in[0], ref::lrn_backward(rx, ref::Tensor4(2, 7, 3, 5, dy), p).v, 1e-4, 1e-5));
    check_gradients(h, {x}, 1e-2, 1e-2, 1e-3);
  }
}

TEST(LrnLayer, EvenSizeIsRefusedByNameWhenTheModelIsRead) {
  // oneDNN would sum size-1 channels for an even size; PyTorch sums an off-centre window of size.
  const nlohmann::json fields{{"name", "norm1"}, {"type", "lrn"}, {"size", 4}};
  LayerConfig cfg(fields, "m.json: layer 'norm1'");
  try {
    make_layer("norm1", "lrn", cfg);
    ADD_FAILURE() << "an even LRN size was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'norm1'"), std::string::npos) << what;
    EXPECT_NE(what.find("'size'"), std::string::npos) << what;
    EXPECT_NE(what.find("odd"), std::string::npos) << what;
  }
  for (int64_t size : {1, 3, 7}) {
    LayerConfig odd(nlohmann::json{{"type", "lrn"}, {"size", size}}, "m.json: layer 'norm1'");
    EXPECT_NO_THROW(make_layer("norm1", "lrn", odd)) << size;
  }
}

TEST(BatchNormKernel, TrainingMatchesReferenceAndFiniteDifferences) {
  for (auto layout : {tag::nchw, tag::aBcd16b}) {
    auto layer = layer_from({{"type", "batch_norm"}, {"eps", 1e-5}});
    KernelHarness h(*layer, 3, {Shape{5, 4, 3}}, layout);
    const auto gamma = ref::random_vector(5, 31, 0.5f, 1.5f);
    const auto beta = ref::random_vector(5, 32);
    h.set_params({gamma, beta, std::vector<float>(5, 0.0f), std::vector<float>(5, 1.0f)});
    const auto x = ref::random_vector(3 * 5 * 4 * 3, 33, -2.0f, 2.0f);
    const auto y = h.forward({x});
    const ref::Tensor4 rx(3, 5, 4, 3, x);
    const auto ry = ref::batchnorm_forward_training(rx, gamma, beta, 1e-5);
    EXPECT_TRUE(ref::values_close(y, ry.y.v, 1e-4, 1e-4));
    const auto dy = ref::random_vector(y.size(), 34);
    const auto g = h.backward(dy);
    const auto rg = ref::batchnorm_backward_training(rx, ref::Tensor4(3, 5, 4, 3, dy), gamma, 1e-5);
    EXPECT_TRUE(ref::values_close(g.d_in[0], rg.dx.v, 1e-3, 1e-4));
    EXPECT_TRUE(ref::values_close(g.d_params[0], rg.dgamma, 1e-4, 1e-4));
    EXPECT_TRUE(ref::values_close(g.d_params[1], rg.dbeta, 1e-4, 1e-4));
    check_gradients(h, {x}, 1e-2, 2e-2, 2e-3);
  }
}

TEST(BatchNormKernel, UpdatesRunningAveragesAndUsesThemInEvaluation) {
  auto layer = layer_from({{"type", "batch_norm"}, {"momentum", 0.25}});
  const Shape shape{3, 4, 4};
  KernelHarness train(*layer, 4, {shape}, tag::nchw, /*training=*/true);
  train.set_params({{1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}});
  const auto x = ref::random_vector(4 * 3 * 4 * 4, 35, 1.0f, 3.0f);
  train.forward({x});
  const auto stats = ref::batchnorm_forward_training(ref::Tensor4(4, 3, 4, 4, x), {1, 1, 1}, {0, 0, 0}, 1e-5);
  const auto params = train.params();
  const double m = 4 * 4 * 4;
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(params[2][c], 0.25 * stats.mean[c], 1e-5);
    EXPECT_NEAR(params[3][c], 0.75 + 0.25 * stats.var[c] * m / (m - 1), 1e-5);
  }
  KernelHarness eval(*layer, 4, {shape}, tag::nchw, /*training=*/false);
  eval.set_params(params);
  const auto y = eval.forward({x});
  const auto ry =
      ref::batchnorm_forward_inference(ref::Tensor4(4, 3, 4, 4, x), {1, 1, 1}, {0, 0, 0}, params[2], params[3], 1e-5);
  EXPECT_TRUE(ref::values_close(y, ry.v, 1e-4, 1e-4));
}

TEST(BatchNormKernel, WorksOnVectors) {
  auto layer = layer_from({{"type", "batch_norm"}});
  KernelHarness h(*layer, 6, {Shape{10}}, tag::nchw);
  h.set_params({std::vector<float>(10, 1.0f), std::vector<float>(10, 0.0f), std::vector<float>(10, 0.0f),
                std::vector<float>(10, 1.0f)});
  const auto x = ref::random_vector(60, 36, -3.0f, 3.0f);
  const auto y = h.forward({x});
  const auto ry = ref::batchnorm_forward_training(ref::Tensor4(6, 10, 1, 1, x), std::vector<float>(10, 1.0f),
                                                  std::vector<float>(10, 0.0f), 1e-5);
  EXPECT_TRUE(ref::values_close(y, ry.y.v, 1e-4, 1e-4));
}

}  // namespace test_norm_kernels
}  // namespace vdnn::test
