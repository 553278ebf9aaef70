// tests/reference/test_reference_self.cc — the reference ops checked against themselves:
// every backward against central differences of its forward (on a fixed random projection of the
// output), plus hand-computed examples and cheap algebraic identities. Small odd shapes, fixed
// seeds; the whole file runs in well under a second.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "reference/finite_difference.h"
#include "reference/reference_ops.h"
#include "vdnn/rng.h"

namespace vdnn::ref {
namespace test_reference_self {

Tensor4 random_tensor(int64_t n, int64_t c, int64_t h, int64_t w, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return Tensor4(n, c, h, w, random_vector(static_cast<size_t>(n * c * h * w), seed, lo, hi));
}

// A tensor whose values are a shuffled grid k * spacing (centered on 0): all distinct and at least
// `spacing` apart, so a finite-difference step below spacing/2 never changes a max or a ReLU sign.
Tensor4 distinct_tensor(int64_t n, int64_t c, int64_t h, int64_t w, uint64_t seed, float spacing) {
  const int64_t size = n * c * h * w;
  std::vector<float> v(size);
  for (int64_t i = 0; i < size; ++i)
    v[i] = static_cast<float>((static_cast<double>(i) - 0.5 * static_cast<double>(size) + 0.5) * spacing);
  vdnn::Rng rng(seed, /*stream=*/1);
  for (int64_t i = size - 1; i > 0; --i) std::swap(v[i], v[rng.below(i + 1)]);
  return Tensor4(n, c, h, w, std::move(v));
}

Tensor4 with_values(const Tensor4& shape, const std::vector<float>& v) {
  return Tensor4(shape.n, shape.c, shape.h, shape.w, v);
}

// ------------------------------------------------------------------------------------------
// Convolution

TEST(ReferenceConv, HandComputedExample) {
  // x = 1..9 as a 3x3 image, w = [[1,2],[3,4]].
  const Tensor4 x(1, 1, 3, 3, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor4 w(1, 1, 2, 2, std::vector<float>{1, 2, 3, 4});

  // Stride 1, no padding: y[i][j] = x[i][j] + 2x[i][j+1] + 3x[i+1][j] + 4x[i+1][j+1], plus bias.
  const Tensor4 y = conv2d_forward(x, w, {0.5f}, Conv2dParams{});
  ASSERT_EQ(y.h, 2);
  ASSERT_EQ(y.w, 2);
  EXPECT_EQ(y.v, (std::vector<float>{37.5f, 47.5f, 67.5f, 77.5f}));

  // Stride 2, padding top 1 / left 1 (bottom/right 0): output (3+1-2)/2+1 = 2 per side.
  //   y00 = x00*w11 = 4;  y01 = x01*w10 + x02*w11 = 6+12 = 18;
  //   y10 = x10*w01 + x20*w11 = 8+28 = 36;  y11 = 5+12+24+36 = 77.
  Conv2dParams p;
  p.sh = p.sw = 2;
  p.pt = p.pl = 1;
  const Tensor4 yp = conv2d_forward(x, w, {}, p);
  ASSERT_EQ(yp.h, 2);
  ASSERT_EQ(yp.w, 2);
  EXPECT_EQ(yp.v, (std::vector<float>{4, 18, 36, 77}));

  // Backward of the unpadded case with dy = 1: db = 4, dw[kh][kw] = sum of the 2x2 block of x
  // starting at (kh, kw), dx[i][j] = sum of the kernel taps that touch (i, j).
  const Conv2dGrads g = conv2d_backward(x, w, Tensor4(1, 1, 2, 2, 1.0f), Conv2dParams{});
  EXPECT_EQ(g.db, (std::vector<float>{4}));
  EXPECT_EQ(g.dw.v, (std::vector<float>{12, 16, 24, 28}));
  EXPECT_EQ(g.dx.v, (std::vector<float>{1, 3, 2, 4, 10, 6, 3, 7, 4}));
}

TEST(ReferenceConv, OutputSizeFormula) {
  EXPECT_EQ(out_size(5, 3, 2, 1, 2), 3);  // floor((5+1+2-3)/2)+1
  EXPECT_EQ(out_size(7, 2, 2, 0, 1), 4);  // floor((7+0+1-2)/2)+1
  EXPECT_EQ(out_size(4, 4, 3, 0, 0), 1);
  EXPECT_THROW(out_size(2, 5, 1, 1, 1), std::invalid_argument);
}

// A grouped convolution equals the per-group convolutions concatenated along channels.
TEST(ReferenceConv, GroupedEqualsPerGroupConcat) {
  const int64_t G = 3, I = 2, OG = 2;
  const Tensor4 x = random_tensor(2, G * I, 5, 7, 11);
  const Tensor4 w = random_tensor(G * OG, I, 3, 2, 12);
  const std::vector<float> bias = random_vector(G * OG, 13);
  Conv2dParams p{.groups = G, .sh = 2, .sw = 2, .pt = 1, .pl = 0, .pb = 2, .pr = 1};
  const Tensor4 y = conv2d_forward(x, w, bias, p);

  std::vector<Tensor4> parts;
  for (int64_t g = 0; g < G; ++g) {
    Tensor4 xg(x.n, I, x.h, x.w), wg(OG, I, w.h, w.w);
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t i = 0; i < I; ++i)
        for (int64_t h = 0; h < x.h; ++h)
          for (int64_t ww = 0; ww < x.w; ++ww) xg.at(n, i, h, ww) = x.at(n, g * I + i, h, ww);
    for (int64_t o = 0; o < OG; ++o)
      for (int64_t i = 0; i < I; ++i)
        for (int64_t h = 0; h < w.h; ++h)
          for (int64_t ww = 0; ww < w.w; ++ww) wg.at(o, i, h, ww) = w.at(g * OG + o, i, h, ww);
    const std::vector<float> bg(bias.begin() + g * OG, bias.begin() + (g + 1) * OG);
    Conv2dParams pg = p;
    pg.groups = 1;
    parts.push_back(conv2d_forward(xg, wg, bg, pg));
  }
  const Tensor4 expected = concat_channels(parts);
  ASSERT_TRUE(y.same_shape(expected));
  EXPECT_EQ(y.v, expected.v);  // same products summed in the same order
}

void check_conv_gradients(const Tensor4& x, const Tensor4& w, const std::vector<float>& bias, const Conv2dParams& p,
                          uint64_t seed) {
  const Tensor4 y = conv2d_forward(x, w, bias, p);
  const std::vector<float> r = random_vector(y.v.size(), seed);
  const Conv2dGrads g = conv2d_backward(x, w, with_values(y, r), p);

  // Convolution is linear in each argument, so a large step has no truncation error.
  const double eps = 0.05, rel = 1e-4, abs = 1e-4;
  auto fx = [&](const std::vector<float>& v) {
    return projection_loss(conv2d_forward(with_values(x, v), w, bias, p).v, r);
  };
  auto fw = [&](const std::vector<float>& v) {
    return projection_loss(conv2d_forward(x, with_values(w, v), bias, p).v, r);
  };
  auto fb = [&](const std::vector<float>& v) { return projection_loss(conv2d_forward(x, w, v, p).v, r); };
  EXPECT_TRUE(gradients_close(g.dx.v, numeric_gradient(fx, x.v, eps), rel, abs)) << "dx";
  EXPECT_TRUE(gradients_close(g.dw.v, numeric_gradient(fw, w.v, eps), rel, abs)) << "dw";
  EXPECT_TRUE(gradients_close(g.db, numeric_gradient(fb, bias, eps), rel, abs)) << "db";
}

TEST(ReferenceConv, BackwardMatchesNumericGroupedStridedAsymmetricPadding) {
  // N=2, C=3, H=5, W=7, groups 3 (depthwise with multiplier 2), kernel 3x2, stride 2,
  // padding top 1, left 0, bottom 2, right 1 -> output 2x6x3x4.
  const Tensor4 x = random_tensor(2, 3, 5, 7, 21);
  const Tensor4 w = random_tensor(6, 1, 3, 2, 22);
  const std::vector<float> bias = random_vector(6, 23);
  const Conv2dParams p{.groups = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 0, .pb = 2, .pr = 1};
  ASSERT_EQ(conv2d_forward(x, w, bias, p).h, 3);
  ASSERT_EQ(conv2d_forward(x, w, bias, p).w, 4);
  check_conv_gradients(x, w, bias, p, 24);
}

TEST(ReferenceConv, BackwardMatchesNumericDenseUnevenStride) {
  // groups 1, 3 -> 4 channels, kernel 3x3, stride (2, 3), padding (0, 2, 1, 0).
  const Tensor4 x = random_tensor(2, 3, 5, 7, 31);
  const Tensor4 w = random_tensor(4, 3, 3, 3, 32);
  const std::vector<float> bias = random_vector(4, 33);
  const Conv2dParams p{.groups = 1, .sh = 2, .sw = 3, .pt = 0, .pl = 2, .pb = 1, .pr = 0};
  check_conv_gradients(x, w, bias, p, 34);
}

TEST(ReferenceConv, DilatedEqualsDenseConvWithAZeroInsertedKernel) {
  // Dilation (2, 3) of a 3x2 kernel: the same as a dense 5x4 kernel with the taps at rows 0, 2,
  // 4 and columns 0, 3, zeros elsewhere; stride (2, 1), asymmetric padding, 2 groups.
  const Tensor4 x = random_tensor(2, 4, 9, 8, 41);
  const Tensor4 w = random_tensor(6, 2, 3, 2, 42);
  const std::vector<float> bias = random_vector(6, 43);
  const Conv2dParams p{.groups = 2, .sh = 2, .sw = 1, .pt = 2, .pl = 1, .pb = 0, .pr = 3, .dh = 2, .dw = 3};
  Tensor4 spread(6, 2, 5, 4);
  for (int64_t o = 0; o < 6; ++o)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 2; ++kw) spread.at(o, i, kh * 2, kw * 3) = w.at(o, i, kh, kw);
  Conv2dParams dense = p;
  dense.dh = dense.dw = 1;
  const Tensor4 y = conv2d_forward(x, w, bias, p);
  ASSERT_EQ(y.h, 4);  // floor((9 + 2 + 0 - 5) / 2) + 1
  ASSERT_EQ(y.w, 9);  // floor((8 + 1 + 3 - 4) / 1) + 1
  EXPECT_TRUE(values_close(y.v, conv2d_forward(x, spread, bias, dense).v, 1e-6, 1e-6));
  const Tensor4 dy = random_tensor(y.n, y.c, y.h, y.w, 44);
  const Conv2dGrads g = conv2d_backward(x, w, dy, p), gd = conv2d_backward(x, spread, dy, dense);
  EXPECT_TRUE(values_close(g.dx.v, gd.dx.v, 1e-6, 1e-6));
  for (int64_t o = 0; o < 6; ++o)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 2; ++kw) EXPECT_NEAR(g.dw.at(o, i, kh, kw), gd.dw.at(o, i, kh * 2, kw * 3), 1e-5);
  check_conv_gradients(x, w, bias, p, 45);
}

// ------------------------------------------------------------------------------------------
// Pooling

TEST(ReferencePool, MaxIgnoresPaddingEvenWhenAllNegative) {
  // 1x1x2x2 of negatives, 2x2 kernel, stride 1, padding 1 on every side -> 3x3 output; each
  // window's max is over its real cells only, never the padding's implicit zero.
  const Tensor4 x(1, 1, 2, 2, std::vector<float>{-1, -2, -3, -4});
  const Pool2dParams p{.kind = PoolKind::max, .kh = 2, .kw = 2, .sh = 1, .sw = 1, .pt = 1, .pl = 1, .pb = 1, .pr = 1};
  const Tensor4 y = pool2d_forward(x, p);
  EXPECT_EQ(y.v, (std::vector<float>{-1, -1, -2, -1, -1, -2, -3, -3, -4}));
}

TEST(ReferencePool, AverageIncludeVersusExcludePadding) {
  // 1x1x3x3 = 1..9, 2x2 kernel, stride 2, padding top/left 1 -> 2x2 output.
  //   windows (real cells): {1}, {2,3}, {4,7}, {5,6,8,9}
  const Tensor4 x(1, 1, 3, 3, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  Pool2dParams p{
      .kind = PoolKind::avg_include_padding, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 0, .pr = 0};
  EXPECT_EQ(pool2d_forward(x, p).v, (std::vector<float>{0.25f, 1.25f, 2.75f, 7.0f}));
  p.kind = PoolKind::avg_exclude_padding;
  EXPECT_EQ(pool2d_forward(x, p).v, (std::vector<float>{1.0f, 2.5f, 5.5f, 7.0f}));
  // Backward with dy = 1 spreads 1/divisor to the real cells of each window.
  const Tensor4 dx = pool2d_backward(x, Tensor4(1, 1, 2, 2, 1.0f), p);
  EXPECT_EQ(dx.v, (std::vector<float>{1.0f, 0.5f, 0.5f, 0.5f, 0.25f, 0.25f, 0.5f, 0.25f, 0.25f}));
}

TEST(ReferencePool, IncludePaddingCountsCellsUpToTheDeclaredEndPadding) {
  // 1x1x3x3 = 1..9, 2x2 kernel, stride 2, no top/left padding, bottom/right 1 (ONNX's pads
  // [0, 0, 1, 1], auto_pad SAME_UPPER) -> 2x2 output; every window lies inside the padded 4x4 input,
  // so each divides by 4: (1+2+4+5)/4, (3+6)/4, (7+8)/4, 9/4.
  const Tensor4 x(1, 1, 3, 3, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  Pool2dParams p{.kind = PoolKind::avg_include_padding, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .pb = 1, .pr = 1};
  p.eh = 1, p.ew = 1;
  EXPECT_EQ(pool2d_forward(x, p).v, (std::vector<float>{3.0f, 2.25f, 3.75f, 2.25f}));
  // Without the declared end padding (eh = pt = 0) pb/pr are ceil mode's overhang: not counted.
  p.eh = -1, p.ew = -1;
  EXPECT_EQ(pool2d_forward(x, p).v, (std::vector<float>{3.0f, 4.5f, 7.5f, 9.0f}));
}

TEST(ReferencePool, MaxBackwardTieGoesToFirstInRowMajorOrder) {
  const Tensor4 x(1, 1, 2, 2, std::vector<float>{1, 3, 3, 3});
  const Pool2dParams p{.kind = PoolKind::max, .kh = 2, .kw = 2, .sh = 2, .sw = 2};
  const Tensor4 dx = pool2d_backward(x, Tensor4(1, 1, 1, 1, 5.0f), p);
  EXPECT_EQ(dx.v, (std::vector<float>{0, 5, 0, 0}));
}

TEST(ReferencePool, BackwardMatchesNumericAllKinds) {
  // N=2, C=3, H=5, W=7, kernel 3x3, stride 2, padding top 1, left 1, bottom 1, right 2
  // -> output 3x4; the last column of windows reaches into the right padding.
  for (PoolKind kind : {PoolKind::max, PoolKind::avg_include_padding, PoolKind::avg_exclude_padding}) {
    SCOPED_TRACE(static_cast<int>(kind));
    const Pool2dParams p{.kind = kind, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 2};
    // Distinct values 0.01 apart, step 1e-3: no max ever changes hands within the difference.
    const Tensor4 x = distinct_tensor(2, 3, 5, 7, 41, 0.01f);
    const Tensor4 y = pool2d_forward(x, p);
    ASSERT_EQ(y.h, 3);
    ASSERT_EQ(y.w, 4);
    const std::vector<float> r = random_vector(y.v.size(), 42);
    const Tensor4 dx = pool2d_backward(x, with_values(y, r), p);
    auto f = [&](const std::vector<float>& v) { return projection_loss(pool2d_forward(with_values(x, v), p).v, r); };
    EXPECT_TRUE(gradients_close(dx.v, numeric_gradient(f, x.v, 1e-3), 1e-3, 1e-4));
  }
}

// ------------------------------------------------------------------------------------------
// LRN

TEST(ReferenceLrn, HandComputedWindow) {
  // One pixel, C = 4 channels x = (1, 2, 3, 4), size 3: window(c) = [c-1, c+1] clipped.
  const Tensor4 x(1, 4, 1, 1, std::vector<float>{1, 2, 3, 4});
  const LrnParams p{.size = 3, .alpha = 0.3, .beta = 0.75, .k = 2.0};
  const Tensor4 y = lrn_forward(x, p);
  const double sums[4] = {1 + 4, 1 + 4 + 9, 4 + 9 + 16, 9 + 16};
  for (int c = 0; c < 4; ++c)
    EXPECT_FLOAT_EQ(y.v[c], static_cast<float>((c + 1) * std::pow(2.0 + 0.1 * sums[c], -0.75))) << "c=" << c;

  // Even size 4 follows oneDNN's reference: half = (4-1)/2 = 1, so the window is still [c-1, c+1]
  // (3 channels) while the divisor is 4.
  const LrnParams p4{.size = 4, .alpha = 0.4, .beta = 0.75, .k = 2.0};
  const Tensor4 y4 = lrn_forward(x, p4);
  for (int c = 0; c < 4; ++c)
    EXPECT_FLOAT_EQ(y4.v[c], static_cast<float>((c + 1) * std::pow(2.0 + 0.1 * sums[c], -0.75))) << "c=" << c;
}

TEST(ReferenceLrn, BackwardMatchesNumeric) {
  // Large alpha so the cross-channel terms matter; C = 7 so borders and interior both appear.
  for (int64_t size : {5, 4, 1}) {
    SCOPED_TRACE(size);
    const LrnParams p{.size = size, .alpha = 2.0, .beta = 0.75, .k = 1.0};
    const Tensor4 x = random_tensor(2, 7, 2, 3, 51);
    const Tensor4 y = lrn_forward(x, p);
    const std::vector<float> r = random_vector(y.v.size(), 52);
    const Tensor4 dx = lrn_backward(x, with_values(y, r), p);
    auto f = [&](const std::vector<float>& v) { return projection_loss(lrn_forward(with_values(x, v), p).v, r); };
    EXPECT_TRUE(gradients_close(dx.v, numeric_gradient(f, x.v, 1e-3), 2e-3, 2e-4));
  }
}

// ------------------------------------------------------------------------------------------
// Batch normalization

TEST(ReferenceBatchNorm, ForwardNormalizesEachChannel) {
  const Tensor4 x = random_tensor(2, 3, 5, 7, 61, -2.0f, 3.0f);
  const std::vector<float> gamma{1.0f, 2.0f, 0.5f}, beta{0.0f, -1.0f, 3.0f};
  const BatchNormForward f = batchnorm_forward_training(x, gamma, beta, 1e-5);
  const double count = 2 * 5 * 7;
  for (int64_t c = 0; c < 3; ++c) {
    double s = 0, ss = 0, xs = 0;
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t h = 0; h < 5; ++h)
        for (int64_t w = 0; w < 7; ++w) {
          s += f.y.at(n, c, h, w);
          ss += (f.y.at(n, c, h, w) - beta[c]) * (f.y.at(n, c, h, w) - beta[c]);
          xs += x.at(n, c, h, w);
        }
    EXPECT_NEAR(f.mean[c], xs / count, 1e-6);
    EXPECT_NEAR(s / count, beta[c], 1e-5);
    EXPECT_NEAR(ss / count, gamma[c] * gamma[c] * f.var[c] / (f.var[c] + 1e-5), 1e-4);
  }
  // Inference mode with the batch statistics reproduces the training output.
  const Tensor4 yi = batchnorm_forward_inference(x, gamma, beta, f.mean, f.var, 1e-5);
  EXPECT_TRUE(values_close(yi.v, f.y.v, 1e-5, 1e-5));
}

TEST(ReferenceBatchNorm, BackwardMatchesNumeric) {
  const Tensor4 x = random_tensor(2, 3, 5, 7, 71);
  const std::vector<float> gamma = random_vector(3, 72, 0.5f, 1.5f);
  const std::vector<float> beta = random_vector(3, 73);
  const double eps = 1e-5;
  const Tensor4 y = batchnorm_forward_training(x, gamma, beta, eps).y;
  const std::vector<float> r = random_vector(y.v.size(), 74);
  const BatchNormGrads g = batchnorm_backward_training(x, with_values(y, r), gamma, eps);

  auto fx = [&](const std::vector<float>& v) {
    return projection_loss(batchnorm_forward_training(with_values(x, v), gamma, beta, eps).y.v, r);
  };
  auto fg = [&](const std::vector<float>& v) {
    return projection_loss(batchnorm_forward_training(x, v, beta, eps).y.v, r);
  };
  auto fb = [&](const std::vector<float>& v) {
    return projection_loss(batchnorm_forward_training(x, gamma, v, eps).y.v, r);
  };
  EXPECT_TRUE(gradients_close(g.dx.v, numeric_gradient(fx, x.v, 1e-2), 5e-3, 5e-4)) << "dx";
  EXPECT_TRUE(gradients_close(g.dgamma, numeric_gradient(fg, gamma, 1e-2), 1e-4, 1e-4)) << "dgamma";
  EXPECT_TRUE(gradients_close(g.dbeta, numeric_gradient(fb, beta, 1e-2), 1e-4, 1e-4)) << "dbeta";
}

// ------------------------------------------------------------------------------------------
// Fully connected

TEST(ReferenceFc, EqualsConvolutionWithFullKernel) {
  // FC over an NCHW input is a convolution whose kernel covers the whole image (weights (M, K)
  // reshaped to OIHW (M, C, H, W)).
  const Tensor4 x = random_tensor(2, 3, 5, 7, 81);
  const int64_t M = 4;
  const Tensor4 w = random_tensor(M, 3, 5, 7, 82);
  const std::vector<float> bias = random_vector(M, 83);
  const Tensor4 y_fc = fc_forward(x, w.v, bias);
  const Tensor4 y_conv = conv2d_forward(x, w, bias, Conv2dParams{});
  ASSERT_TRUE(y_fc.same_shape(y_conv));
  EXPECT_EQ(y_fc.v, y_conv.v);

  const std::vector<float> r = random_vector(y_fc.v.size(), 84);
  const FcGrads gf = fc_backward(x, w.v, with_values(y_fc, r));
  const Conv2dGrads gc = conv2d_backward(x, w, with_values(y_conv, r), Conv2dParams{});
  EXPECT_EQ(gf.dx.v, gc.dx.v);
  EXPECT_EQ(gf.dw, gc.dw.v);
  EXPECT_EQ(gf.db, gc.db);
}

TEST(ReferenceFc, BackwardMatchesNumeric) {
  const Tensor4 x = random_tensor(3, 2, 3, 1, 91);  // K = 6
  const std::vector<float> w = random_vector(5 * 6, 92);
  const std::vector<float> bias = random_vector(5, 93);
  const Tensor4 y = fc_forward(x, w, bias);
  ASSERT_EQ(y.c, 5);
  const std::vector<float> r = random_vector(y.v.size(), 94);
  const FcGrads g = fc_backward(x, w, with_values(y, r));
  auto fx = [&](const std::vector<float>& v) { return projection_loss(fc_forward(with_values(x, v), w, bias).v, r); };
  auto fw = [&](const std::vector<float>& v) { return projection_loss(fc_forward(x, v, bias).v, r); };
  auto fb = [&](const std::vector<float>& v) { return projection_loss(fc_forward(x, w, v).v, r); };
  EXPECT_TRUE(gradients_close(g.dx.v, numeric_gradient(fx, x.v, 0.05), 1e-4, 1e-4)) << "dx";
  EXPECT_TRUE(gradients_close(g.dw, numeric_gradient(fw, w, 0.05), 1e-4, 1e-4)) << "dw";
  EXPECT_TRUE(gradients_close(g.db, numeric_gradient(fb, bias, 0.05), 1e-4, 1e-4)) << "db";
}

// ------------------------------------------------------------------------------------------
// ReLU, softmax cross-entropy, concat, add

TEST(ReferenceRelu, ForwardBackward) {
  const Tensor4 x(1, 1, 1, 4, std::vector<float>{-1.0f, 0.0f, 2.0f, -0.5f});
  EXPECT_EQ(relu_forward(x).v, (std::vector<float>{0, 0, 2, 0}));
  EXPECT_EQ(relu_backward(x, Tensor4(1, 1, 1, 4, 3.0f)).v, (std::vector<float>{0, 0, 3, 0}));

  const Tensor4 xr = distinct_tensor(2, 3, 5, 7, 101, 0.01f);  // |x| >= 0.005, never 0
  const std::vector<float> r = random_vector(xr.v.size(), 102);
  auto f = [&](const std::vector<float>& v) { return projection_loss(relu_forward(with_values(xr, v)).v, r); };
  EXPECT_TRUE(gradients_close(relu_backward(xr, with_values(xr, r)).v, numeric_gradient(f, xr.v, 1e-3), 1e-3, 1e-4));
}

TEST(ReferenceRelu, Relu6ClipsAtSixAndPassesGradientsOnlyStrictlyInside) {
  // PyTorch's hardtanh_backward: the gradient passes where 0 < x < 6, not at 0 or 6 exactly.
  const Tensor4 x(1, 1, 1, 6, std::vector<float>{-1.0f, 0.0f, 2.0f, 6.0f, 7.5f, 5.5f});
  EXPECT_EQ(relu_forward(x, 6.0f).v, (std::vector<float>{0, 0, 2, 6, 6, 5.5f}));
  EXPECT_EQ(relu_backward(x, Tensor4(1, 1, 1, 6, 3.0f), 6.0f).v, (std::vector<float>{0, 0, 3, 0, 0, 3}));

  // Odd multiples of 0.005 (distinct_tensor), scaled: 3.02 + odd multiples of 0.04, in about
  // [-5.3, 11.4], covering both kinks but at least 0.02 from 0 and from 6.
  Tensor4 xr = distinct_tensor(2, 3, 5, 7, 103, 0.01f);
  for (float& v : xr.v) v = v * 8.0f + 3.02f;
  const std::vector<float> r = random_vector(xr.v.size(), 104);
  auto f = [&](const std::vector<float>& v) { return projection_loss(relu_forward(with_values(xr, v), 6.0f).v, r); };
  EXPECT_TRUE(
      gradients_close(relu_backward(xr, with_values(xr, r), 6.0f).v, numeric_gradient(f, xr.v, 1e-3), 1e-3, 1e-4));
}

TEST(ReferenceSoftmaxCrossEntropy, KnownValues) {
  // Equal logits: loss = log(C); gradient = (1/C - onehot) / N.
  const Tensor4 z(2, 4, 1, 1, 0.0f);
  EXPECT_NEAR(softmax_cross_entropy(z, {1, 3}), std::log(4.0), 1e-12);
  const Tensor4 d = softmax_cross_entropy_backward(z, {1, 3});
  EXPECT_EQ(d.v, (std::vector<float>{0.125f, -0.375f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, -0.375f}));
  // Large logits stay finite (max subtraction): a 1000-margin correct class costs ~0.
  const Tensor4 big(1, 3, 1, 1, std::vector<float>{1000.0f, 0.0f, -1000.0f});
  EXPECT_NEAR(softmax_cross_entropy(big, {0}), 0.0, 1e-12);
  EXPECT_NEAR(softmax_cross_entropy(big, {1}), 1000.0, 1e-9);
  const Tensor4 s = softmax_forward(random_tensor(3, 5, 1, 1, 111));
  for (int64_t n = 0; n < 3; ++n)
    EXPECT_NEAR(std::accumulate(s.v.begin() + n * 5, s.v.begin() + (n + 1) * 5, 0.0), 1.0, 1e-6);
}

TEST(ReferenceSoftmaxCrossEntropy, BackwardMatchesNumeric) {
  const Tensor4 z = random_tensor(3, 5, 1, 1, 121, -3.0f, 3.0f);
  const std::vector<int64_t> labels{4, 0, 2};
  const Tensor4 d = softmax_cross_entropy_backward(z, labels);
  // The loss itself is the scalar (already a weighted mix of every logit's effect).
  auto f = [&](const std::vector<float>& v) { return softmax_cross_entropy(with_values(z, v), labels); };
  EXPECT_TRUE(gradients_close(d.v, numeric_gradient(f, z.v, 1e-3), 1e-3, 1e-5));
}

TEST(ReferenceConcatAdd, ForwardBackward) {
  const Tensor4 a = random_tensor(2, 1, 2, 3, 131), b = random_tensor(2, 3, 2, 3, 132);
  const Tensor4 y = concat_channels({a, b});
  ASSERT_EQ(y.c, 4);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t w = 0; w < 3; ++w) {
        EXPECT_EQ(y.at(n, 0, h, w), a.at(n, 0, h, w));
        for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(y.at(n, 1 + c, h, w), b.at(n, c, h, w));
      }
  const std::vector<Tensor4> parts = concat_channels_backward(y, {1, 3});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].v, a.v);
  EXPECT_EQ(parts[1].v, b.v);

  const Tensor4 s = add(b, b);
  for (size_t i = 0; i < s.v.size(); ++i) EXPECT_EQ(s.v[i], 2.0f * b.v[i]);
  EXPECT_THROW(add(a, b), std::invalid_argument);
}

}  // namespace test_reference_self
}  // namespace vdnn::ref
