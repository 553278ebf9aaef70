// Every CUDA kernel against the CPU backend's kernel on the same plain data: forward output,
// running statistics, input and parameter gradients within 1e-4 relative (cuda_test_util.h).
// Dropout draws different masks on the two backends, so it is checked by its properties. Skipped
// at run time without a GPU.
#include "cuda/cuda_kernel_harness.h"
#include "cuda/cuda_test_util.h"
#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace test_cuda_ops {

using tag = dnnl::memory::format_tag;

struct OpCase {
  nlohmann::json layer;
  int64_t batch;
  std::vector<Shape> in;
  ConvAlgo algo = ConvAlgo::kDirect;
  bool training = true;
};

// Parameters as a trained network might have them: scales and variances near 1, the rest small.
std::vector<std::vector<float>> random_params(const std::vector<ParamSpec>& specs, uint64_t seed) {
  std::vector<std::vector<float>> out;
  for (const ParamSpec& s : specs) {
    const auto n = static_cast<size_t>(s.elements());
    out.push_back(s.init == ParamSpec::Init::kOne ? ref::random_vector(n, seed++, 0.5f, 1.5f)
                                                  : ref::random_vector(n, seed++, -0.5f, 0.5f));
  }
  return out;
}

void expect_gpu_matches_cpu(const OpCase& c) {
  SCOPED_TRACE(c.layer.dump() + " algo " + to_string(c.algo) + (c.training ? " training" : " inference"));
  auto layer = layer_from(c.layer);
  KernelHarness cpu(*layer, c.batch, c.in, tag::nchw, c.training);
  CudaKernelHarness gpu(*layer, c.batch, c.in, c.algo, c.training);
  const auto params = random_params(layer->params(c.in), 200);
  cpu.set_params(params);
  gpu.set_params(params);
  std::vector<std::vector<float>> xs;
  for (size_t i = 0; i < c.in.size(); ++i)
    xs.push_back(ref::random_vector(static_cast<size_t>(c.batch * c.in[i].elements()), 300 + i, -2.0f, 2.0f));
  if (layer->kind() == LayerKind::kLoss) {
    std::vector<int32_t> labels;
    for (int64_t n = 0; n < c.batch; ++n) labels.push_back(static_cast<int32_t>((n * 7 + 3) % c.in[0].elements()));
    cpu.set_labels(labels);
    gpu.set_labels(labels);
  }
  EXPECT_TRUE(gpu_matches_cpu(gpu.forward(xs), cpu.forward(xs))) << "forward";
  const auto cpu_params = cpu.params(), gpu_params = gpu.params();  // running statistics moved
  for (size_t p = 0; p < params.size(); ++p)
    EXPECT_TRUE(gpu_matches_cpu(gpu_params[p], cpu_params[p])) << "parameter " << p << " after forward";
  if (!c.training) return;
  const auto dy = ref::random_vector(static_cast<size_t>(cpu.out_elements()), 400);
  const auto g_cpu = cpu.backward(dy);
  const auto g_gpu = gpu.backward(dy);
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_TRUE(gpu_matches_cpu(g_gpu.d_in[i], g_cpu.d_in[i])) << "d input " << i;
  ASSERT_EQ(g_gpu.d_params.size(), g_cpu.d_params.size());
  for (size_t p = 0; p < g_cpu.d_params.size(); ++p)
    EXPECT_TRUE(gpu_matches_cpu(g_gpu.d_params[p], g_cpu.d_params[p])) << "d parameter " << p;
}

TEST(CudaOps, ConvolutionWithEveryAlgorithmChoice) {
  VDNN_REQUIRE_GPU();
  for (ConvAlgo algo : {ConvAlgo::kDirect, ConvAlgo::kAuto, ConvAlgo::kWinograd}) {
    expect_gpu_matches_cpu({{{"type", "conv"}, {"channels", 8}, {"kernel", 3}, {"pad", 1}}, 2, {Shape{3, 9, 7}}, algo});
    expect_gpu_matches_cpu(
        {{{"type", "conv"}, {"channels", 6}, {"kernel", 5}, {"stride", 2}, {"pad", 2}, {"bias", false}},
         2,
         {Shape{4, 11, 10}},
         algo});
    expect_gpu_matches_cpu(
        {{{"type", "conv"}, {"channels", 8}, {"kernel", 3}, {"pad", 1}, {"groups", 2}}, 3, {Shape{6, 8, 8}}, algo});
    expect_gpu_matches_cpu({{{"type", "conv"}, {"channels", 16}, {"kernel", 1}}, 3, {Shape{16, 5, 5}}, algo});
    expect_gpu_matches_cpu({{{"type", "conv"},  // dilated (cuDNN: the descriptor's dilation)
                             {"channels", 8},
                             {"kernel", 3},
                             {"pad", 2},
                             {"dilation", nlohmann::json::array({2, 3})},
                             {"groups", 2}},
                            2,
                            {Shape{4, 10, 11}},
                            algo});
  }
}

// cuDNN's CLIPPED_RELU at exactly 0 and 6 must give PyTorch's gradient (0 at both kinks), as the
// CPU backend's oneDNN clip_v2 does (ReluKernel.GradientAtTheKinksIsPyTorchs).
TEST(CudaOps, Relu6ClipsAtSixWithPyTorchsGradientAtTheKinks) {
  VDNN_REQUIRE_GPU();
  auto layer = layer_from({{"type", "relu6"}});
  CudaKernelHarness h(*layer, 2, {Shape{4, 3, 3}});
  std::vector<float> x = ref::random_vector(72, 310, -3.0f, 9.0f);
  const float kinks[] = {0.0f, 6.0f, -0.0f, 6.0f, 0.0f, 5.9999995f, 6.0000005f, 1e-30f};
  std::copy(std::begin(kinks), std::end(kinks), x.begin());
  const ref::Tensor4 rx(2, 4, 3, 3, x);
  EXPECT_EQ(h.forward({x}), ref::relu_forward(rx, 6.0f).v);
  const auto dy = ref::random_vector(72, 311, 0.5f, 1.5f);
  EXPECT_EQ(h.backward(dy).d_in[0], ref::relu_backward(rx, ref::Tensor4(2, 4, 3, 3, dy), 6.0f).v);
}

TEST(CudaOps, MaxAndAveragePoolingIncludingCeilModeAndGlobal) {
  VDNN_REQUIRE_GPU();
  expect_gpu_matches_cpu({{{"type", "max_pool"}, {"kernel", 2}}, 2, {Shape{3, 8, 6}}});
  expect_gpu_matches_cpu(
      {{{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}}, 2, {Shape{4, 9, 10}}});
  for (bool exclude : {true, false})
    expect_gpu_matches_cpu(
        {{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}, {"exclude_padding", exclude}},
         2,
         {Shape{2, 7, 8}}});
  expect_gpu_matches_cpu({{{"type", "avg_pool"}, {"global", true}}, 3, {Shape{5, 6, 6}}});
}

TEST(CudaOps, LrnAndBatchNorm) {
  VDNN_REQUIRE_GPU();
  expect_gpu_matches_cpu(
      {{{"type", "lrn"}, {"size", 5}, {"alpha", 0.5}, {"beta", 0.75}, {"k", 2.0}}, 2, {Shape{7, 3, 5}}});
  for (bool training : {true, false}) {
    expect_gpu_matches_cpu(
        {{{"type", "batch_norm"}, {"momentum", 0.25}}, 3, {Shape{5, 4, 3}}, ConvAlgo::kDirect, training});
    expect_gpu_matches_cpu({{{"type", "batch_norm"}}, 4, {Shape{7}}, ConvAlgo::kDirect, training});
  }
}

TEST(CudaOps, FullyConnectedOnImagesAndVectors) {
  VDNN_REQUIRE_GPU();
  expect_gpu_matches_cpu({{{"type", "fc"}, {"units", 7}}, 3, {Shape{16, 3, 2}}});
  expect_gpu_matches_cpu({{{"type", "fc"}, {"units", 5}, {"bias", false}}, 4, {Shape{11}}});
}

TEST(CudaOps, ReluFlattenConcatAddAndTheLoss) {
  VDNN_REQUIRE_GPU();
  expect_gpu_matches_cpu({{{"type", "relu"}}, 2, {Shape{16, 3, 5}}});
  expect_gpu_matches_cpu({{{"type", "relu6"}}, 2, {Shape{16, 3, 5}}});
  expect_gpu_matches_cpu({{{"type", "flatten"}}, 2, {Shape{4, 2, 3}}});
  expect_gpu_matches_cpu({{{"type", "concat"}}, 2, {Shape{3, 3, 4}, Shape{5, 3, 4}, Shape{8, 3, 4}}});
  expect_gpu_matches_cpu({{{"type", "concat"}}, 3, {Shape{4}, Shape{3}, Shape{3}}});  // fc outputs
  expect_gpu_matches_cpu({{{"type", "add"}}, 2, {Shape{6, 3, 3}, Shape{6, 3, 3}, Shape{6, 3, 3}}});
  expect_gpu_matches_cpu({{{"type", "softmax_cross_entropy"}}, 4, {Shape{6}}});
  expect_gpu_matches_cpu({{{"type", "dropout"}, {"rate", 0.3}}, 2, {Shape{4, 3, 3}}, ConvAlgo::kDirect, false});
}

TEST(CudaOps, DropoutMasksScalesAndBackpropagatesThroughTheSameMask) {
  VDNN_REQUIRE_GPU();
  auto layer = layer_from({{"type", "dropout"}, {"rate", 0.25}});
  CudaKernelHarness h(*layer, 4, {Shape{8, 5, 5}});
  const auto x = ref::random_vector(800, 62, 0.5f, 1.5f);
  h.set_step(3);
  const auto y = h.forward({x});
  const auto mask = h.saved(0);
  int dropped = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (y[i] == 0.0f) {
      ++dropped;
      EXPECT_EQ(mask[i], 0.0f);
    } else {
      EXPECT_NEAR(y[i], x[i] / 0.75f, 1e-6);
    }
  }
  EXPECT_NEAR(dropped / 800.0, 0.25, 0.06);
  const auto dy = ref::random_vector(800, 63);
  const auto dx = h.backward(dy).d_in[0];
  for (size_t i = 0; i < dx.size(); ++i) EXPECT_EQ(dx[i], dy[i] * mask[i]);
  h.set_step(4);
  EXPECT_NE(h.forward({x}), y) << "a new step must draw a new mask";
  h.set_step(3);
  EXPECT_EQ(h.forward({x}), y) << "the same step draws the same mask";
}

TEST(CudaOps, LrnSizesCudnnCannotMatchAreRefusedByName) {
  // The check comes before any cuDNN call, so this runs without a GPU too.
  auto layer = layer_from({{"name", "norm1"}, {"type", "lrn"}, {"size", 17}});
  CudaKernelSetup setup{*layer, 2, {Shape{8, 4, 4}}, Shape{8, 4, 4}};
  try {
    make_cuda_kernel(setup, CudaContext{});
    ADD_FAILURE() << "an LRN size above cuDNN's 16 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'norm1' (lrn)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("odd size"), std::string::npos) << e.what();
  }
}

}  // namespace test_cuda_ops
}  // namespace vdnn::test
