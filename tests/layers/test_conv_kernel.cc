// Convolution kernel: forward and backward against the plain reference, backward by finite
// differences; odd sizes, stride 2, groups, depthwise, dilation, asymmetric padding (pad_end),
// blocked and plain input layouts.
#include "backends/cpu/cpu_isa.h"
#include "layers/conv.h"
#include "layers/layer_test_util.h"

namespace vdnn::test {
namespace test_conv_kernel {

using tag = dnnl::memory::format_tag;

struct ConvCase {
  int64_t n, c, h, w, oc, k, stride, pad, groups;
  bool bias;
  tag layout;
  int64_t dilation = 1, pad_end = -1;  // pad_end: bottom and right; -1: absent (= pad)
};

nlohmann::json conv_json(const ConvCase& c) {
  nlohmann::json j = {{"type", "conv"}, {"channels", c.oc},   {"kernel", c.k}, {"stride", c.stride},
                      {"pad", c.pad},   {"groups", c.groups}, {"bias", c.bias}};
  if (c.dilation != 1) j["dilation"] = c.dilation;
  if (c.pad_end >= 0) j["pad_end"] = c.pad_end;
  return j;
}

class ConvKernelTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvKernelTest, MatchesReferenceForwardAndBackward) {
  const ConvCase c = GetParam();
  auto layer = layer_from(conv_json(c));
  KernelHarness h(*layer, c.n, {Shape{c.c, c.h, c.w}}, c.layout);
  const int64_t icg = c.c / c.groups;
  auto x = ref::random_vector(c.n * c.c * c.h * c.w, 1);
  auto w = ref::random_vector(c.oc * icg * c.k * c.k, 2);
  auto b = ref::random_vector(c.bias ? c.oc : 0, 3);
  std::vector<std::vector<float>> params{w};
  if (c.bias) params.push_back(b);
  h.set_params(params);
  const auto y = h.forward({x});

  const int64_t pe = c.pad_end >= 0 ? c.pad_end : c.pad;
  ref::Conv2dParams p{c.groups, c.stride, c.stride, c.pad, c.pad, pe, pe, c.dilation, c.dilation};
  const ref::Tensor4 rx(c.n, c.c, c.h, c.w, x), rw(c.oc, icg, c.k, c.k, w);
  const ref::Tensor4 ry = ref::conv2d_forward(rx, rw, b, p);
  EXPECT_TRUE(ref::values_close(y, ry.v, 1e-4, 1e-4));

  const auto dy = ref::random_vector(y.size(), 4);
  const auto g = h.backward(dy);
  const auto rg = ref::conv2d_backward(rx, rw, ref::Tensor4(ry.n, ry.c, ry.h, ry.w, dy), p);
  EXPECT_TRUE(ref::values_close(g.d_in[0], rg.dx.v, 1e-4, 1e-4));
  EXPECT_TRUE(ref::values_close(g.d_params[0], rg.dw.v, 1e-4, 1e-4));
  if (c.bias) EXPECT_TRUE(ref::values_close(g.d_params[1], rg.db, 1e-4, 1e-4));
  EXPECT_TRUE(h.kernel().slow_kernels.empty())
      << h.kernel().slow_kernels.front() << " (" << h.kernel().implementation << ")";
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvKernelTest,
                         ::testing::Values(ConvCase{2, 3, 7, 5, 4, 3, 1, 1, 1, true, tag::nchw},
                                           ConvCase{3, 4, 9, 9, 6, 3, 2, 1, 2, true, tag::nchw},
                                           ConvCase{2, 16, 8, 7, 32, 1, 2, 0, 1, false, tag::aBcd16b},
                                           ConvCase{2, 32, 6, 7, 16, 3, 1, 0, 1, true, tag::aBcd16b},
                                           ConvCase{2, 16, 5, 5, 16, 3, 1, 1, 16, true, tag::aBcd16b},  // depthwise
                                           ConvCase{1, 8, 11, 6, 24, 5, 2, 2, 4, false, tag::aBcd8b},
                                           // 4 channels per group from a blocked producer: only oneDNN's reference
                                           // kernel in nChw16c; computed on nchw with the input reordered.
                                           ConvCase{2, 16, 6, 6, 16, 3, 1, 1, 4, true, tag::aBcd16b},
                                           ConvCase{4, 1, 28, 28, 8, 3, 1, 1, 1, true, tag::nchw},
                                           // outputs below 4x4: the weight gradient by GEMM (conv_gemm_weights.h)
                                           ConvCase{3, 5, 3, 3, 7, 3, 1, 1, 1, true, tag::nchw},
                                           ConvCase{2, 32, 4, 4, 48, 3, 2, 1, 1, true, tag::aBcd16b},
                                           ConvCase{2, 16, 2, 3, 16, 3, 1, 1, 1, false, tag::aBcd16b},
                                           ConvCase{2, 8, 5, 5, 8, 5, 1, 0, 1, false, tag::aBcd8b},
                                           ConvCase{2, 16, 2, 2, 16, 3, 1, 1, 16, true, tag::aBcd16b},
                                           // dilation (DeepLab-style atrous, torchvision's segmentation backbones)
                                           ConvCase{2, 3, 9, 8, 4, 3, 1, 2, 1, true, tag::nchw, 2},
                                           ConvCase{2, 16, 11, 10, 32, 3, 2, 1, 1, true, tag::aBcd16b, 3},
                                           ConvCase{2, 16, 9, 9, 16, 3, 1, 2, 16, true, tag::aBcd16b, 2},  // depthwise
                                           ConvCase{2, 16, 7, 7, 8, 3, 1, 0, 4, false, tag::aBcd8b, 2},
                                           // asymmetric padding (ONNX pads, TensorFlow's "same" with even kernels)
                                           ConvCase{2, 3, 7, 6, 5, 2, 1, 0, 1, true, tag::nchw, 1, 1},
                                           ConvCase{2, 16, 8, 8, 16, 3, 2, 0, 1, true, tag::aBcd16b, 1, 1},
                                           ConvCase{3, 4, 7, 9, 6, 3, 1, 2, 2, true, tag::nchw, 2, 0},
                                           // both, with outputs below 4x4: the weight gradient by GEMM
                                           ConvCase{2, 16, 5, 5, 16, 3, 1, 1, 1, true, tag::aBcd16b, 2},
                                           ConvCase{2, 8, 4, 4, 8, 3, 1, 2, 1, false, tag::aBcd8b, 2, 0}));

TEST(ConvKernel, FourChannelsPerGroupAvoidsTheReferenceKernel) {
  // oneDNN 2.6 has only ref:any for all three passes in nChw16c here (5.2 s forward per batch of
  // 128 on 2 threads); the plain-layout GEMM kernel takes 37 ms.
  auto layer = layer_from({{"type", "conv"}, {"channels", 64}, {"kernel", 3}, {"pad", 1}, {"groups", 16}});
  KernelHarness h(*layer, 4, {Shape{64, 16, 16}}, tag::aBcd16b);
  EXPECT_EQ(h.kernel().implementation.rfind("ref:", 0), std::string::npos) << h.kernel().implementation;
  EXPECT_TRUE(h.kernel().slow_kernels.empty()) << h.kernel().slow_kernels.front();
  EXPECT_NE(h.kernel().implementation.find("input reordered"), std::string::npos) << h.kernel().implementation;
}

TEST(ConvKernel, BackwardMatchesFiniteDifferences) {
  const nlohmann::json base = {{"type", "conv"}, {"channels", 4}, {"kernel", 3},
                               {"stride", 2},    {"pad", 1},      {"groups", 2}};
  nlohmann::json dilated = base;  // dilation (2, 1), padding top/left 1, bottom/right (0, 2)
  dilated["dilation"] = nlohmann::json::array({2, 1});
  dilated["pad_end"] = nlohmann::json::array({0, 2});
  for (const nlohmann::json& j : {base, dilated}) {
    SCOPED_TRACE(j.dump());
    auto layer = layer_from(j);
    KernelHarness h(*layer, 2, {Shape{4, 5, 7}}, tag::nchw);
    h.set_params({ref::random_vector(4 * 2 * 9, 5), ref::random_vector(4, 6)});
    check_gradients(h, {ref::random_vector(2 * 4 * 5 * 7, 7)}, 1e-2, 1e-2, 1e-3);
  }
}

TEST(ConvKernel, BlockedBackwardMatchesFiniteDifferences) {
  auto layer = layer_from({{"type", "conv"}, {"channels", 16}, {"kernel", 3}, {"pad", 1}});
  KernelHarness h(*layer, 2, {Shape{16, 4, 5}}, tag::aBcd16b);
  h.set_params({ref::random_vector(16 * 16 * 9, 8, -0.2f, 0.2f), ref::random_vector(16, 9)});
  check_gradients(h, {ref::random_vector(2 * 16 * 4 * 5, 10)}, 1e-2, 1e-2, 2e-3);
}

TEST(ConvKernel, TinyOutputBackwardMatchesFiniteDifferences) {
  const nlohmann::json base = {{"type", "conv"}, {"channels", 16}, {"kernel", 3}, {"stride", 2}, {"pad", 1}};
  nlohmann::json dilated = base;  // 2x2 outputs too: (3 + 1 + 2 - 5) / 2 + 1, (4 + 1 + 1 - 3) / 2 + 1
  dilated["dilation"] = nlohmann::json::array({2, 1});
  dilated["pad_end"] = nlohmann::json::array({2, 1});
  for (const nlohmann::json& j : {base, dilated}) {
    SCOPED_TRACE(j.dump());
    auto layer = layer_from(j);
    KernelHarness h(*layer, 2, {Shape{16, 3, 4}}, tag::aBcd16b);  // 2x2 outputs
    ASSERT_NE(h.kernel().implementation.find("gemm"), std::string::npos) << h.kernel().implementation;
    h.set_params({ref::random_vector(16 * 16 * 9, 11, -0.2f, 0.2f), ref::random_vector(16, 12)});
    check_gradients(h, {ref::random_vector(2 * 16 * 3 * 4, 13)}, 1e-2, 1e-2, 2e-3);
  }
}

TEST(ConvKernel, OnlyTinyUngroupedOutputsTakeTheGemmWeightGradient) {
  auto conv = [](int64_t groups) {
    return layer_from({{"type", "conv"}, {"channels", 16}, {"kernel", 3}, {"pad", 1}, {"groups", groups}});
  };
  auto ungrouped = conv(1), grouped = conv(4);
  auto implementation = [](const Layer& l, Shape in) {
    return KernelHarness(l, 2, {in}, tag::aBcd16b).kernel().implementation;
  };
  // (The grouped one runs oneDNN's GEMM-based kernel, "gemm:jit", in every pass instead.)
  const std::string by_gemm = "weight gradient by gemm";
  EXPECT_NE(implementation(*ungrouped, Shape{16, 3, 3}).find(by_gemm), std::string::npos);
  EXPECT_EQ(implementation(*ungrouped, Shape{16, 4, 4}).find(by_gemm), std::string::npos);
  EXPECT_EQ(implementation(*grouped, Shape{16, 3, 3}).find(by_gemm), std::string::npos);
}

TEST(ConvKernel, DeclaresWorkspaceAndBlockedLayouts) {
  auto layer = layer_from({{"type", "conv"}, {"channels", 64}, {"kernel", 3}, {"pad", 1}});
  // The input in the channel blocks oneDNN's direct kernels use here: 16 on AVX-512, 8 on AVX2 (given
  // 16-blocked data, AVX2 falls back to a GEMM-based kernel with a plain output).
  KernelHarness h(*layer, 8, {Shape{64, 14, 14}}, cpu_has_avx512() ? tag::aBcd16b : tag::aBcd8b);
  // oneDNN picks a blocked output layout for 64 channels; weights are blocked too.
  EXPECT_NE(h.kernel().out_md, dnnl::memory::desc({8, 64, 14, 14}, dnnl::memory::data_type::f32, tag::nchw));
  EXPECT_FALSE(h.kernel().implementation.empty());
  EXPECT_EQ(h.kernel().implementation.find("ref"), std::string::npos) << h.kernel().implementation;
}

}  // namespace test_conv_kernel
}  // namespace vdnn::test
