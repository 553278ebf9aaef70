// Pooling kernels (max, average with and without padding, global, ceil mode) against the reference.
#include "layers/layer_test_util.h"
#include "layers/pool.h"

namespace vdnn::test {
namespace test_pool_kernel {

using tag = dnnl::memory::format_tag;

// Inputs with no ties: a permutation of well-separated values.
std::vector<float> distinct_values(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * 0.05f - static_cast<float>(n) * 0.025f;
  Rng rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
  return v;
}

struct PoolCase {
  nlohmann::json fields;
  int64_t n, c, h, w;
  tag layout;
};

class PoolKernelTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolKernelTest, MatchesReferenceAndFiniteDifferences) {
  const PoolCase pc = GetParam();
  auto layer = layer_from(pc.fields);
  const auto& pool = static_cast<const PoolLayer&>(*layer);
  const Shape in{pc.c, pc.h, pc.w};
  const PoolLayer::Window win = pool.window(in);
  KernelHarness h(*layer, pc.n, {in}, pc.layout);
  const auto x = distinct_values(static_cast<size_t>(pc.n * pc.c * pc.h * pc.w), 11);
  const auto y = h.forward({x});
  ref::Pool2dParams p;
  p.kind = pool.p().max               ? ref::PoolKind::max
           : pool.p().exclude_padding ? ref::PoolKind::avg_exclude_padding
                                      : ref::PoolKind::avg_include_padding;
  p.kh = win.kh, p.kw = win.kw, p.sh = win.sh, p.sw = win.sw;
  p.pt = win.pt, p.pl = win.pl, p.pb = win.pb, p.pr = win.pr, p.eh = win.eh, p.ew = win.ew;
  const ref::Tensor4 rx(pc.n, pc.c, pc.h, pc.w, x);
  const ref::Tensor4 ry = ref::pool2d_forward(rx, p);
  ASSERT_EQ(ry.h, win.oh);
  ASSERT_EQ(ry.w, win.ow);
  EXPECT_TRUE(ref::values_close(y, ry.v, 1e-5, 1e-5));
  const auto dy = ref::random_vector(y.size(), 12);
  const auto g = h.backward(dy);
  const auto rdx = ref::pool2d_backward(rx, ref::Tensor4(ry.n, ry.c, ry.h, ry.w, dy), p);
  EXPECT_TRUE(ref::values_close(g.d_in[0], rdx.v, 1e-5, 1e-5));
  check_gradients(h, {x}, 1e-3, 1e-2, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, PoolKernelTest,
    ::testing::Values(
        PoolCase{{{"type", "max_pool"}, {"kernel", 2}}, 2, 3, 6, 8, tag::nchw},
        PoolCase{{{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}}, 2, 16, 7, 5, tag::aBcd16b},
        PoolCase{{{"type", "max_pool"}, {"kernel", 3}, {"stride", 2}, {"ceil", true}}, 1, 4, 8, 9, tag::nchw},
        PoolCase{{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}}, 2, 3, 7, 6, tag::nchw},
        PoolCase{{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 1}, {"pad", 1}, {"exclude_padding", false}},
                 2,
                 8,
                 5,
                 5,
                 tag::aBcd8b},
        PoolCase{{{"type", "avg_pool"}, {"global", true}}, 3, 16, 5, 3, tag::aBcd16b},
        // Ceil mode: the last windows run past the padding; with padding included they divide by
        // their cells inside the padded input (Caffe, PyTorch), not by kh*kw.
        PoolCase{{{"type", "avg_pool"},
                  {"kernel", 3},
                  {"stride", 2},
                  {"pad", 1},
                  {"ceil", true},
                  {"exclude_padding", false}},
                 1,
                 16,
                 8,
                 7,
                 tag::aBcd16b},
        PoolCase{{{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"ceil", true}, {"exclude_padding", false}},
                 1,
                 3,
                 8,
                 9,
                 tag::nchw},
        PoolCase{{{"type", "avg_pool"},
                  {"kernel", nlohmann::json::array({2, 3})},
                  {"stride", 2},
                  {"pad", 1},
                  {"ceil", true},
                  {"exclude_padding", false}},
                 2,
                 5,
                 6,
                 8,
                 tag::acdb},
        PoolCase{
            {{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 1}, {"ceil", true}}, 2, 5, 7, 8, tag::acdb},
        // Asymmetric padding (ONNX's auto_pad SAME_UPPER / SAME_LOWER, pads [t, l, b, r]): pad_end.
        PoolCase{
            {{"type", "max_pool"}, {"kernel", 2}, {"stride", 1}, {"pad", 0}, {"pad_end", 1}}, 2, 3, 6, 5, tag::nchw},
        PoolCase{{{"type", "max_pool"},
                  {"kernel", 3},
                  {"stride", 2},
                  {"pad", nlohmann::json::array({1, 2})},
                  {"pad_end", nlohmann::json::array({2, 0})}},
                 1,
                 16,
                 7,
                 8,
                 tag::aBcd16b},
        PoolCase{
            {{"type", "avg_pool"}, {"kernel", 3}, {"stride", 2}, {"pad", 0}, {"pad_end", 1}}, 2, 3, 6, 6, tag::nchw},
        // Counted padding to the declared end: bottom 2 > top 1, right 0 < left 1.
        PoolCase{{{"type", "avg_pool"},
                  {"kernel", 3},
                  {"stride", 2},
                  {"pad", 1},
                  {"pad_end", nlohmann::json::array({2, 0})},
                  {"exclude_padding", false}},
                 2,
                 5,
                 7,
                 8,
                 tag::acdb},
        // ... and in ceil mode, where the last window runs past it.
        PoolCase{{{"type", "avg_pool"},
                  {"kernel", 3},
                  {"stride", 2},
                  {"pad", 0},
                  {"pad_end", 1},
                  {"ceil", true},
                  {"exclude_padding", false}},
                 1,
                 3,
                 9,
                 9,
                 tag::nchw}));

TEST(PoolKernel, MaxPoolSavesIndicesNotInput) {
  auto layer = layer_from({{"type", "max_pool"}, {"kernel", 2}});
  EXPECT_FALSE(layer->backward_reads_input());
  KernelHarness h(*layer, 2, {Shape{16, 8, 8}}, tag::aBcd16b);
  ASSERT_EQ(h.kernel().saved_mds.size(), 1u);  // the argmax workspace
  EXPECT_GT(h.kernel().saved_mds[0].get_size(), 0u);
}

}  // namespace test_pool_kernel
}  // namespace vdnn::test
