// tests/reference/reference_ops.cc — see reference_ops.h. Plain loops, double accumulation.
#include "reference/reference_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace vdnn::ref {

namespace {

void require(bool cond, const std::string& what) {
  if (!cond) throw std::invalid_argument("vdnn::ref: " + what);
}

std::string shape_str(const Tensor4& t) {
  std::ostringstream os;
  os << "(" << t.n << "," << t.c << "," << t.h << "," << t.w << ")";
  return os.str();
}

void require_same_shape(const Tensor4& a, const Tensor4& b, const char* op, const char* an, const char* bn) {
  require(a.same_shape(b), std::string(op) + ": " + an + " " + shape_str(a) + " and " + bn + " " + shape_str(b) +
                               " must have the same shape");
}

// Per-channel batch statistics in double (mean and biased variance over N, H, W).
void channel_stats(const Tensor4& x, std::vector<double>& mean, std::vector<double>& var) {
  const double count = static_cast<double>(x.n * x.h * x.w);
  mean.assign(x.c, 0.0);
  var.assign(x.c, 0.0);
  for (int64_t c = 0; c < x.c; ++c) {
    double s = 0.0;
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w) s += x.at(n, c, h, w);
    const double m = s / count;
    double ss = 0.0;
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w) {
          const double d = x.at(n, c, h, w) - m;
          ss += d * d;
        }
    mean[c] = m;
    var[c] = ss / count;
  }
}

}  // namespace

Tensor4::Tensor4(int64_t n_, int64_t c_, int64_t h_, int64_t w_, float fill) : n(n_), c(c_), h(h_), w(w_) {
  require(n >= 0 && c >= 0 && h >= 0 && w >= 0, "Tensor4: negative dimension");
  v.assign(static_cast<size_t>(n * c * h * w), fill);
}

Tensor4::Tensor4(int64_t n_, int64_t c_, int64_t h_, int64_t w_, std::vector<float> data)
    : n(n_), c(c_), h(h_), w(w_), v(std::move(data)) {
  require(n >= 0 && c >= 0 && h >= 0 && w >= 0, "Tensor4: negative dimension");
  require(static_cast<int64_t>(v.size()) == n * c * h * w,
          "Tensor4: data has " + std::to_string(v.size()) + " values, shape needs " + std::to_string(n * c * h * w));
}

int64_t out_size(int64_t in, int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi) {
  require(k >= 1 && stride >= 1 && pad_lo >= 0 && pad_hi >= 0,
          "out_size: kernel and stride must be >= 1, padding >= 0");
  const int64_t span = in + pad_lo + pad_hi - k;
  require(span >= 0, "out_size: padded input (" + std::to_string(in + pad_lo + pad_hi) +
                         ") is smaller than the kernel (" + std::to_string(k) + ")");
  return span / stride + 1;
}

// ---------------------------------------------------------------------------------------------
// Convolution

namespace {

struct ConvGeom {
  int64_t N, C, H, W, O, I, KH, KW, OH, OW, G, OG;  // OG = output channels per group
};

ConvGeom conv_geom(const Tensor4& x, const Tensor4& w, const Conv2dParams& p) {
  require(p.groups >= 1, "conv2d: groups must be >= 1");
  require(p.sh >= 1 && p.sw >= 1, "conv2d: strides must be >= 1");
  require(p.pt >= 0 && p.pl >= 0 && p.pb >= 0 && p.pr >= 0, "conv2d: padding must be >= 0");
  ConvGeom g{};
  g.N = x.n;
  g.C = x.c;
  g.H = x.h;
  g.W = x.w;
  g.O = w.n;
  g.I = w.c;
  g.KH = w.h;
  g.KW = w.w;
  g.G = p.groups;
  require(g.C == g.G * g.I, "conv2d: input channels " + std::to_string(g.C) + " != groups " + std::to_string(g.G) +
                                " * weight I " + std::to_string(g.I));
  require(g.O % g.G == 0,
          "conv2d: output channels " + std::to_string(g.O) + " not divisible by groups " + std::to_string(g.G));
  g.OG = g.O / g.G;
  require(p.dh >= 1 && p.dw >= 1, "conv2d: dilation must be >= 1");
  g.OH = out_size(g.H, p.dh * (g.KH - 1) + 1, p.sh, p.pt, p.pb);
  g.OW = out_size(g.W, p.dw * (g.KW - 1) + 1, p.sw, p.pl, p.pr);
  return g;
}

}  // namespace

Tensor4 conv2d_forward(const Tensor4& x, const Tensor4& w, const std::vector<float>& bias, const Conv2dParams& p) {
  const ConvGeom g = conv_geom(x, w, p);
  require(bias.empty() || static_cast<int64_t>(bias.size()) == g.O,
          "conv2d_forward: bias must be empty or have O entries");
  Tensor4 y(g.N, g.O, g.OH, g.OW);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o) {
      const int64_t grp = o / g.OG;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          double acc = bias.empty() ? 0.0 : static_cast<double>(bias[o]);
          for (int64_t i = 0; i < g.I; ++i)
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              const int64_t ih = oh * p.sh - p.pt + kh * p.dh;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t iw = ow * p.sw - p.pl + kw * p.dw;
                if (iw < 0 || iw >= g.W) continue;
                acc += static_cast<double>(x.at(n, grp * g.I + i, ih, iw)) * static_cast<double>(w.at(o, i, kh, kw));
              }
            }
          y.at(n, o, oh, ow) = static_cast<float>(acc);
        }
    }
  return y;
}

Conv2dGrads conv2d_backward(const Tensor4& x, const Tensor4& w, const Tensor4& dy, const Conv2dParams& p) {
  const ConvGeom g = conv_geom(x, w, p);
  require(dy.n == g.N && dy.c == g.O && dy.h == g.OH && dy.w == g.OW,
          "conv2d_backward: dy " + shape_str(dy) + " does not match the forward output shape");
  // Accumulate in double, round once at the end.
  std::vector<double> dx(x.v.size(), 0.0), dw(w.v.size(), 0.0), db(g.O, 0.0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t o = 0; o < g.O; ++o) {
      const int64_t grp = o / g.OG;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const double d = dy.at(n, o, oh, ow);
          db[o] += d;
          for (int64_t i = 0; i < g.I; ++i)
            for (int64_t kh = 0; kh < g.KH; ++kh) {
              const int64_t ih = oh * p.sh - p.pt + kh * p.dh;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t iw = ow * p.sw - p.pl + kw * p.dw;
                if (iw < 0 || iw >= g.W) continue;
                const int64_t xi = x.index(n, grp * g.I + i, ih, iw);
                const int64_t wi = w.index(o, i, kh, kw);
                dx[xi] += d * static_cast<double>(w.v[wi]);
                dw[wi] += d * static_cast<double>(x.v[xi]);
              }
            }
        }
    }
  Conv2dGrads r;
  r.dx = Tensor4(x.n, x.c, x.h, x.w);
  r.dw = Tensor4(w.n, w.c, w.h, w.w);
  r.db.resize(g.O);
  for (size_t i = 0; i < dx.size(); ++i) r.dx.v[i] = static_cast<float>(dx[i]);
  for (size_t i = 0; i < dw.size(); ++i) r.dw.v[i] = static_cast<float>(dw[i]);
  for (int64_t o = 0; o < g.O; ++o) r.db[o] = static_cast<float>(db[o]);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Pooling

namespace {

struct PoolGeom {
  int64_t OH, OW;
};

PoolGeom pool_geom(const Tensor4& x, const Pool2dParams& p) {
  require(p.kh >= 1 && p.kw >= 1 && p.sh >= 1 && p.sw >= 1, "pool2d: kernel and stride >= 1");
  require(p.pt >= 0 && p.pl >= 0 && p.pb >= 0 && p.pr >= 0, "pool2d: padding must be >= 0");
  return {out_size(x.h, p.kh, p.sh, p.pt, p.pb), out_size(x.w, p.kw, p.sw, p.pl, p.pr)};
}

// Real (unpadded) input range of the window of output (oh, ow): rows [h0, h1), cols [w0, w1).
// `padded` counts the window's cells inside the padded input, rows -pt .. H+eh-1 and columns
// -pl .. W+ew-1 (Caffe's and PyTorch's divisor with padding included).
struct Window {
  int64_t h0, h1, w0, w1;
  int64_t padded;
  int64_t count() const { return (h1 - h0) * (w1 - w0); }
};

Window pool_window(const Tensor4& x, const Pool2dParams& p, int64_t oh, int64_t ow) {
  const int64_t hs = oh * p.sh - p.pt, ws = ow * p.sw - p.pl;
  const int64_t eh = p.eh < 0 ? p.pt : p.eh, ew = p.ew < 0 ? p.pl : p.ew;
  Window win{std::max<int64_t>(hs, 0), std::min<int64_t>(hs + p.kh, x.h), std::max<int64_t>(ws, 0),
             std::min<int64_t>(ws + p.kw, x.w),
             (std::min<int64_t>(hs + p.kh, x.h + eh) - hs) * (std::min<int64_t>(ws + p.kw, x.w + ew) - ws)};
  require(win.h1 > win.h0 && win.w1 > win.w0,
          "pool2d: a window covers only padding (padding must be smaller than the kernel)");
  return win;
}

double pool_divisor(const Pool2dParams& p, const Window& win) {
  return p.kind == PoolKind::avg_include_padding ? static_cast<double>(win.padded) : static_cast<double>(win.count());
}

}  // namespace

Tensor4 pool2d_forward(const Tensor4& x, const Pool2dParams& p) {
  const PoolGeom g = pool_geom(x, p);
  Tensor4 y(x.n, x.c, g.OH, g.OW);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const Window win = pool_window(x, p, oh, ow);
          if (p.kind == PoolKind::max) {
            float best = x.at(n, c, win.h0, win.w0);
            for (int64_t ih = win.h0; ih < win.h1; ++ih)
              for (int64_t iw = win.w0; iw < win.w1; ++iw) best = std::max(best, x.at(n, c, ih, iw));
            y.at(n, c, oh, ow) = best;
          } else {
            double s = 0.0;
            for (int64_t ih = win.h0; ih < win.h1; ++ih)
              for (int64_t iw = win.w0; iw < win.w1; ++iw) s += x.at(n, c, ih, iw);
            y.at(n, c, oh, ow) = static_cast<float>(s / pool_divisor(p, win));
          }
        }
  return y;
}

Tensor4 pool2d_backward(const Tensor4& x, const Tensor4& dy, const Pool2dParams& p) {
  const PoolGeom g = pool_geom(x, p);
  require(dy.n == x.n && dy.c == x.c && dy.h == g.OH && dy.w == g.OW,
          "pool2d_backward: dy " + shape_str(dy) + " does not match the forward output shape");
  std::vector<double> dx(x.v.size(), 0.0);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const Window win = pool_window(x, p, oh, ow);
          const double d = dy.at(n, c, oh, ow);
          if (p.kind == PoolKind::max) {
            // First maximum in row-major order: only a strictly larger value replaces it.
            int64_t bh = win.h0, bw = win.w0;
            for (int64_t ih = win.h0; ih < win.h1; ++ih)
              for (int64_t iw = win.w0; iw < win.w1; ++iw)
                if (x.at(n, c, ih, iw) > x.at(n, c, bh, bw)) {
                  bh = ih;
                  bw = iw;
                }
            dx[x.index(n, c, bh, bw)] += d;
          } else {
            const double share = d / pool_divisor(p, win);
            for (int64_t ih = win.h0; ih < win.h1; ++ih)
              for (int64_t iw = win.w0; iw < win.w1; ++iw) dx[x.index(n, c, ih, iw)] += share;
          }
        }
  Tensor4 r(x.n, x.c, x.h, x.w);
  for (size_t i = 0; i < dx.size(); ++i) r.v[i] = static_cast<float>(dx[i]);
  return r;
}

// ---------------------------------------------------------------------------------------------
// LRN across channels

namespace {

void check_lrn(const LrnParams& p) {
  require(p.size >= 1, "lrn: size must be >= 1");
  require(p.k > 0.0 || p.alpha > 0.0, "lrn: k + alpha/size*sum must stay positive");
}

// Inclusive channel window [lo, hi] of channel c (oneDNN: half = (size-1)/2 on both sides).
std::pair<int64_t, int64_t> lrn_window(int64_t c, int64_t C, int64_t size) {
  const int64_t half = (size - 1) / 2;
  return {std::max<int64_t>(c - half, 0), std::min<int64_t>(c + half, C - 1)};
}

// omega = k + alpha/size * sum_{c' in window(c)} x[c']^2, in double.
double lrn_omega(const Tensor4& x, const LrnParams& p, int64_t n, int64_t c, int64_t h, int64_t w) {
  const auto [lo, hi] = lrn_window(c, x.c, p.size);
  double s = 0.0;
  for (int64_t cc = lo; cc <= hi; ++cc) {
    const double v = x.at(n, cc, h, w);
    s += v * v;
  }
  return p.k + p.alpha / static_cast<double>(p.size) * s;
}

}  // namespace

Tensor4 lrn_forward(const Tensor4& x, const LrnParams& p) {
  check_lrn(p);
  Tensor4 y(x.n, x.c, x.h, x.w);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t c = 0; c < x.c; ++c)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w) {
          const double omega = lrn_omega(x, p, n, c, h, w);
          y.at(n, c, h, w) = static_cast<float>(static_cast<double>(x.at(n, c, h, w)) * std::pow(omega, -p.beta));
        }
  return y;
}

Tensor4 lrn_backward(const Tensor4& x, const Tensor4& dy, const LrnParams& p) {
  check_lrn(p);
  require_same_shape(x, dy, "lrn_backward", "x", "dy");
  // y_c = x_c * omega_c^-beta, omega_c = k + alpha/size * sum_{j in window(c)} x_j^2, so
  //   dy_c/dx_j = [c == j] * omega_c^-beta
  //               - beta * x_c * omega_c^(-beta-1) * 2 * alpha/size * x_j   for j in window(c).
  // Loop over outputs c and scatter into every input j of their window.
  std::vector<double> dx(x.v.size(), 0.0);
  const double a_n = p.alpha / static_cast<double>(p.size);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t h = 0; h < x.h; ++h)
      for (int64_t w = 0; w < x.w; ++w)
        for (int64_t c = 0; c < x.c; ++c) {
          const double omega = lrn_omega(x, p, n, c, h, w);
          const double g = dy.at(n, c, h, w);
          const double xc = x.at(n, c, h, w);
          dx[x.index(n, c, h, w)] += g * std::pow(omega, -p.beta);
          const double common = -g * p.beta * xc * std::pow(omega, -p.beta - 1.0) * 2.0 * a_n;
          const auto [lo, hi] = lrn_window(c, x.c, p.size);
          for (int64_t j = lo; j <= hi; ++j) dx[x.index(n, j, h, w)] += common * static_cast<double>(x.at(n, j, h, w));
        }
  Tensor4 r(x.n, x.c, x.h, x.w);
  for (size_t i = 0; i < dx.size(); ++i) r.v[i] = static_cast<float>(dx[i]);
  return r;
}

// ---------------------------------------------------------------------------------------------
// Batch normalization

namespace {
void check_channel_vec(const std::vector<float>& v, int64_t C, const char* op, const char* name) {
  require(static_cast<int64_t>(v.size()) == C, std::string(op) + ": " + name + " has " + std::to_string(v.size()) +
                                                   " entries, need C = " + std::to_string(C));
}
}  // namespace

BatchNormForward batchnorm_forward_training(const Tensor4& x, const std::vector<float>& gamma,
                                            const std::vector<float>& beta, double eps) {
  check_channel_vec(gamma, x.c, "batchnorm_forward_training", "gamma");
  check_channel_vec(beta, x.c, "batchnorm_forward_training", "beta");
  require(x.n * x.h * x.w > 0, "batchnorm_forward_training: empty batch");
  std::vector<double> mean, var;
  channel_stats(x, mean, var);
  BatchNormForward r;
  r.y = Tensor4(x.n, x.c, x.h, x.w);
  r.mean.resize(x.c);
  r.var.resize(x.c);
  for (int64_t c = 0; c < x.c; ++c) {
    r.mean[c] = static_cast<float>(mean[c]);
    r.var[c] = static_cast<float>(var[c]);
    const double inv_std = 1.0 / std::sqrt(var[c] + eps);
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w)
          r.y.at(n, c, h, w) =
              static_cast<float>(gamma[c] * (x.at(n, c, h, w) - mean[c]) * inv_std + static_cast<double>(beta[c]));
  }
  return r;
}

Tensor4 batchnorm_forward_inference(const Tensor4& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                                    const std::vector<float>& mean, const std::vector<float>& var, double eps) {
  const char* op = "batchnorm_forward_inference";
  check_channel_vec(gamma, x.c, op, "gamma");
  check_channel_vec(beta, x.c, op, "beta");
  check_channel_vec(mean, x.c, op, "mean");
  check_channel_vec(var, x.c, op, "var");
  Tensor4 y(x.n, x.c, x.h, x.w);
  for (int64_t c = 0; c < x.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + eps);
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w)
          y.at(n, c, h, w) = static_cast<float>(gamma[c] * (static_cast<double>(x.at(n, c, h, w)) - mean[c]) * inv_std +
                                                static_cast<double>(beta[c]));
  }
  return y;
}

BatchNormGrads batchnorm_backward_training(const Tensor4& x, const Tensor4& dy, const std::vector<float>& gamma,
                                           double eps) {
  check_channel_vec(gamma, x.c, "batchnorm_backward_training", "gamma");
  require_same_shape(x, dy, "batchnorm_backward_training", "x", "dy");
  require(x.n * x.h * x.w > 0, "batchnorm_backward_training: empty batch");
  std::vector<double> mean, var;
  channel_stats(x, mean, var);
  const double count = static_cast<double>(x.n * x.h * x.w);
  BatchNormGrads r;
  r.dx = Tensor4(x.n, x.c, x.h, x.w);
  r.dgamma.resize(x.c);
  r.dbeta.resize(x.c);
  for (int64_t c = 0; c < x.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(var[c] + eps);
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w) {
          const double d = dy.at(n, c, h, w);
          const double xhat = (x.at(n, c, h, w) - mean[c]) * inv_std;
          sum_dy += d;
          sum_dy_xhat += d * xhat;
        }
    r.dbeta[c] = static_cast<float>(sum_dy);
    r.dgamma[c] = static_cast<float>(sum_dy_xhat);
    const double mean_dy = sum_dy / count, mean_dy_xhat = sum_dy_xhat / count;
    for (int64_t n = 0; n < x.n; ++n)
      for (int64_t h = 0; h < x.h; ++h)
        for (int64_t w = 0; w < x.w; ++w) {
          const double xhat = (x.at(n, c, h, w) - mean[c]) * inv_std;
          r.dx.at(n, c, h, w) =
              static_cast<float>(gamma[c] * inv_std * (dy.at(n, c, h, w) - mean_dy - xhat * mean_dy_xhat));
        }
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Fully connected

namespace {
int64_t fc_outputs(const Tensor4& x, const std::vector<float>& w, const char* op) {
  const int64_t K = x.c * x.h * x.w;
  require(K > 0, std::string(op) + ": x has no features per sample");
  require(static_cast<int64_t>(w.size()) % K == 0 && !w.empty(),
          std::string(op) + ": weight size " + std::to_string(w.size()) +
              " is not a positive multiple of K = " + std::to_string(K));
  return static_cast<int64_t>(w.size()) / K;
}
}  // namespace

Tensor4 fc_forward(const Tensor4& x, const std::vector<float>& w, const std::vector<float>& bias) {
  const int64_t K = x.c * x.h * x.w;
  const int64_t M = fc_outputs(x, w, "fc_forward");
  require(bias.empty() || static_cast<int64_t>(bias.size()) == M, "fc_forward: bias must be empty or have M entries");
  Tensor4 y(x.n, M, 1, 1);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double acc = bias.empty() ? 0.0 : static_cast<double>(bias[m]);
      for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(x.v[n * K + k]) * static_cast<double>(w[m * K + k]);
      y.v[n * M + m] = static_cast<float>(acc);
    }
  return y;
}

FcGrads fc_backward(const Tensor4& x, const std::vector<float>& w, const Tensor4& dy) {
  const int64_t K = x.c * x.h * x.w;
  const int64_t M = fc_outputs(x, w, "fc_backward");
  require(dy.n == x.n && dy.c * dy.h * dy.w == M,
          "fc_backward: dy " + shape_str(dy) + " must be (N, M) with M = " + std::to_string(M));
  FcGrads r;
  r.dx = Tensor4(x.n, x.c, x.h, x.w);
  r.dw.assign(w.size(), 0.0f);
  r.db.assign(M, 0.0f);
  for (int64_t n = 0; n < x.n; ++n)
    for (int64_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (int64_t m = 0; m < M; ++m) acc += static_cast<double>(dy.v[n * M + m]) * static_cast<double>(w[m * K + k]);
      r.dx.v[n * K + k] = static_cast<float>(acc);
    }
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      double acc = 0.0;
      for (int64_t n = 0; n < x.n; ++n)
        acc += static_cast<double>(dy.v[n * M + m]) * static_cast<double>(x.v[n * K + k]);
      r.dw[m * K + k] = static_cast<float>(acc);
    }
    double acc = 0.0;
    for (int64_t n = 0; n < x.n; ++n) acc += dy.v[n * M + m];
    r.db[m] = static_cast<float>(acc);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// ReLU

Tensor4 relu_forward(const Tensor4& x, float ceiling) {
  Tensor4 y(x.n, x.c, x.h, x.w);
  for (size_t i = 0; i < x.v.size(); ++i) y.v[i] = x.v[i] > 0.0f ? (x.v[i] < ceiling ? x.v[i] : ceiling) : 0.0f;
  return y;
}

Tensor4 relu_backward(const Tensor4& x, const Tensor4& dy, float ceiling) {
  require_same_shape(x, dy, "relu_backward", "x", "dy");
  Tensor4 dx(x.n, x.c, x.h, x.w);
  for (size_t i = 0; i < x.v.size(); ++i) dx.v[i] = x.v[i] > 0.0f && x.v[i] < ceiling ? dy.v[i] : 0.0f;
  return dx;
}

// ---------------------------------------------------------------------------------------------
// Softmax and cross-entropy

namespace {

void check_logits(const Tensor4& z, const char* op) {
  require(z.h == 1 && z.w == 1, std::string(op) + ": logits " + shape_str(z) + " must be (N, C, 1, 1)");
  require(z.c >= 1, std::string(op) + ": logits need at least one class");
}

void check_labels(const Tensor4& z, const std::vector<int64_t>& labels, const char* op) {
  require(static_cast<int64_t>(labels.size()) == z.n,
          std::string(op) + ": " + std::to_string(labels.size()) + " labels for batch " + std::to_string(z.n));
  for (int64_t l : labels)
    require(l >= 0 && l < z.c,
            std::string(op) + ": label " + std::to_string(l) + " outside [0, " + std::to_string(z.c) + ")");
}

// Softmax of row n in double.
std::vector<double> softmax_row(const Tensor4& z, int64_t n) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < z.c; ++c) mx = std::max(mx, static_cast<double>(z.v[n * z.c + c]));
  std::vector<double> e(z.c);
  double s = 0.0;
  for (int64_t c = 0; c < z.c; ++c) {
    e[c] = std::exp(static_cast<double>(z.v[n * z.c + c]) - mx);
    s += e[c];
  }
  for (double& v : e) v /= s;
  return e;
}

}  // namespace

Tensor4 softmax_forward(const Tensor4& logits) {
  check_logits(logits, "softmax_forward");
  Tensor4 y(logits.n, logits.c, 1, 1);
  for (int64_t n = 0; n < logits.n; ++n) {
    const std::vector<double> p = softmax_row(logits, n);
    for (int64_t c = 0; c < logits.c; ++c) y.v[n * logits.c + c] = static_cast<float>(p[c]);
  }
  return y;
}

double softmax_cross_entropy(const Tensor4& logits, const std::vector<int64_t>& labels) {
  check_logits(logits, "softmax_cross_entropy");
  check_labels(logits, labels, "softmax_cross_entropy");
  require(logits.n >= 1, "softmax_cross_entropy: empty batch");
  double total = 0.0;
  for (int64_t n = 0; n < logits.n; ++n) {
    // -log softmax[l] = log(sum exp(z - max)) - (z_l - max), stable for large logits.
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t c = 0; c < logits.c; ++c) mx = std::max(mx, static_cast<double>(logits.v[n * logits.c + c]));
    double s = 0.0;
    for (int64_t c = 0; c < logits.c; ++c) s += std::exp(static_cast<double>(logits.v[n * logits.c + c]) - mx);
    total += std::log(s) - (static_cast<double>(logits.v[n * logits.c + labels[n]]) - mx);
  }
  return total / static_cast<double>(logits.n);
}

Tensor4 softmax_cross_entropy_backward(const Tensor4& logits, const std::vector<int64_t>& labels) {
  check_logits(logits, "softmax_cross_entropy_backward");
  check_labels(logits, labels, "softmax_cross_entropy_backward");
  Tensor4 d(logits.n, logits.c, 1, 1);
  const double inv_n = 1.0 / static_cast<double>(logits.n);
  for (int64_t n = 0; n < logits.n; ++n) {
    const std::vector<double> p = softmax_row(logits, n);
    for (int64_t c = 0; c < logits.c; ++c)
      d.v[n * logits.c + c] = static_cast<float>((p[c] - (c == labels[n] ? 1.0 : 0.0)) * inv_n);
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Concat and add

Tensor4 concat_channels(const std::vector<Tensor4>& xs) {
  require(!xs.empty(), "concat_channels: no inputs");
  int64_t C = 0;
  for (const Tensor4& t : xs) {
    require(
        t.n == xs[0].n && t.h == xs[0].h && t.w == xs[0].w,
        "concat_channels: input " + shape_str(t) + " differs from " + shape_str(xs[0]) + " outside the channel axis");
    C += t.c;
  }
  Tensor4 y(xs[0].n, C, xs[0].h, xs[0].w);
  for (int64_t n = 0; n < y.n; ++n) {
    int64_t c0 = 0;
    for (const Tensor4& t : xs) {
      for (int64_t c = 0; c < t.c; ++c)
        for (int64_t h = 0; h < t.h; ++h)
          for (int64_t w = 0; w < t.w; ++w) y.at(n, c0 + c, h, w) = t.at(n, c, h, w);
      c0 += t.c;
    }
  }
  return y;
}

std::vector<Tensor4> concat_channels_backward(const Tensor4& dy, const std::vector<int64_t>& channels) {
  int64_t C = 0;
  for (int64_t c : channels) {
    require(c >= 0, "concat_channels_backward: negative channel count");
    C += c;
  }
  require(C == dy.c,
          "concat_channels_backward: channel counts sum to " + std::to_string(C) + ", dy has " + std::to_string(dy.c));
  std::vector<Tensor4> out;
  int64_t c0 = 0;
  for (int64_t cc : channels) {
    Tensor4 t(dy.n, cc, dy.h, dy.w);
    for (int64_t n = 0; n < dy.n; ++n)
      for (int64_t c = 0; c < cc; ++c)
        for (int64_t h = 0; h < dy.h; ++h)
          for (int64_t w = 0; w < dy.w; ++w) t.at(n, c, h, w) = dy.at(n, c0 + c, h, w);
    c0 += cc;
    out.push_back(std::move(t));
  }
  return out;
}

Tensor4 add(const Tensor4& a, const Tensor4& b) {
  require_same_shape(a, b, "add", "a", "b");
  Tensor4 y(a.n, a.c, a.h, a.w);
  for (size_t i = 0; i < a.v.size(); ++i)
    y.v[i] = static_cast<float>(static_cast<double>(a.v[i]) + static_cast<double>(b.v[i]));
  return y;
}

namespace {

// The probabilities P[n][h][i][j] of attention_forward, in double.
std::vector<double> attention_probabilities(const std::vector<float>& x, const AttentionParams& p) {
  require(p.heads > 0 && p.c % p.heads == 0, "attention: heads must divide C");
  require(x.size() == static_cast<size_t>(p.n * p.t * 3 * p.c), "attention: x must hold N*T*3C values");
  const int64_t D = p.c / p.heads, T = p.t, row = 3 * p.c;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> P(static_cast<size_t>(p.n * p.heads * T * T), 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < T; ++i) {
        double* Pi = &P[static_cast<size_t>(((n * p.heads + h) * T + i) * T)];
        const int64_t last = p.causal ? i : T - 1;
        double top = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j <= last; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += static_cast<double>(x[(n * T + i) * row + h * D + d]) *
                 static_cast<double>(x[(n * T + j) * row + p.c + h * D + d]);
          Pi[j] = s * scale;
          top = std::max(top, Pi[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j <= last; ++j) sum += (Pi[j] = std::exp(Pi[j] - top));
        for (int64_t j = 0; j <= last; ++j) Pi[j] /= sum;
      }
  return P;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Sequences

Tensor4 embedding_forward(const std::vector<int64_t>& ids, const Tensor4& table) {
  Tensor4 y(static_cast<int64_t>(ids.size()), table.c, 1, 1);
  for (size_t r = 0; r < ids.size(); ++r) {
    require(ids[r] >= 0 && ids[r] < table.n, "embedding_forward: id " + std::to_string(ids[r]) + " outside the table");
    for (int64_t c = 0; c < table.c; ++c) y.v[r * table.c + c] = table.v[ids[r] * table.c + c];
  }
  return y;
}

Tensor4 embedding_backward(const std::vector<int64_t>& ids, const Tensor4& dy, int64_t vocab) {
  require(dy.n == static_cast<int64_t>(ids.size()), "embedding_backward: one row of dy per id");
  std::vector<double> acc(static_cast<size_t>(vocab * dy.c), 0.0);
  for (size_t r = 0; r < ids.size(); ++r)
    for (int64_t c = 0; c < dy.c; ++c) acc[ids[r] * dy.c + c] += dy.v[r * dy.c + c];
  Tensor4 dw(vocab, dy.c, 1, 1);
  for (size_t i = 0; i < acc.size(); ++i) dw.v[i] = static_cast<float>(acc[i]);
  return dw;
}

Tensor4 position_embedding_forward(const Tensor4& x, int64_t positions, const Tensor4& table) {
  require(positions <= table.n && x.n % positions == 0 && x.c == table.c, "position_embedding_forward: shapes");
  Tensor4 y = x;
  for (int64_t r = 0; r < x.n; ++r)
    for (int64_t c = 0; c < x.c; ++c)
      y.v[r * x.c + c] = static_cast<float>(static_cast<double>(x.v[r * x.c + c]) +
                                            static_cast<double>(table.v[(r % positions) * x.c + c]));
  return y;
}

Tensor4 position_embedding_backward(const Tensor4& dy, int64_t positions, int64_t max_positions) {
  std::vector<double> acc(static_cast<size_t>(max_positions * dy.c), 0.0);
  for (int64_t r = 0; r < dy.n; ++r)
    for (int64_t c = 0; c < dy.c; ++c) acc[(r % positions) * dy.c + c] += dy.v[r * dy.c + c];
  Tensor4 dw(max_positions, dy.c, 1, 1);
  for (size_t i = 0; i < acc.size(); ++i) dw.v[i] = static_cast<float>(acc[i]);
  return dw;
}

namespace {

// Row r's normalized values and 1 / sqrt(var + eps).
std::vector<double> normalized_row(const Tensor4& x, int64_t r, double eps, double* inv_std) {
  double mean = 0, var = 0;
  for (int64_t c = 0; c < x.c; ++c) mean += x.v[r * x.c + c];
  mean /= static_cast<double>(x.c);
  for (int64_t c = 0; c < x.c; ++c) var += (x.v[r * x.c + c] - mean) * (x.v[r * x.c + c] - mean);
  var /= static_cast<double>(x.c);
  *inv_std = 1.0 / std::sqrt(var + eps);
  std::vector<double> xhat(static_cast<size_t>(x.c));
  for (int64_t c = 0; c < x.c; ++c) xhat[c] = (x.v[r * x.c + c] - mean) * *inv_std;
  return xhat;
}

}  // namespace

std::vector<float> attention_forward(const std::vector<float>& x, const AttentionParams& p,
                                     const std::vector<float>& drop) {
  const std::vector<double> P = attention_probabilities(x, p);
  require(drop.empty() || drop.size() == P.size(), "attention_forward: drop must be empty or hold N*H*T*T factors");
  const int64_t D = p.c / p.heads, T = p.t, row = 3 * p.c;
  std::vector<float> y(static_cast<size_t>(p.n * T * p.c));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t d = 0; d < D; ++d) {
          double s = 0;
          for (int64_t j = 0; j < T; ++j) {
            const size_t at = static_cast<size_t>(((n * p.heads + h) * T + i) * T + j);
            s += P[at] * (drop.empty() ? 1.0 : drop[at]) *
                 static_cast<double>(x[(n * T + j) * row + 2 * p.c + h * D + d]);
          }
          y[(n * T + i) * p.c + h * D + d] = static_cast<float>(s);
        }
  return y;
}

std::vector<float> attention_backward(const std::vector<float>& x, const std::vector<float>& dy,
                                      const AttentionParams& p, const std::vector<float>& drop) {
  const std::vector<double> P = attention_probabilities(x, p);
  require(drop.empty() || drop.size() == P.size(), "attention_backward: drop must be empty or hold N*H*T*T factors");
  require(dy.size() == static_cast<size_t>(p.n * p.t * p.c), "attention_backward: dy must hold N*T*C values");
  const int64_t D = p.c / p.heads, T = p.t, row = 3 * p.c;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> dx(x.size(), 0.0), dP(static_cast<size_t>(T * T));
  auto X = [&](int64_t n, int64_t t, int64_t col) { return static_cast<double>(x[(n * T + t) * row + col]); };
  auto dY = [&](int64_t n, int64_t t, int64_t col) { return static_cast<double>(dy[(n * T + t) * p.c + col]); };
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t h = 0; h < p.heads; ++h) {
      const size_t base = static_cast<size_t>((n * p.heads + h) * T * T);
      auto factor = [&](int64_t i, int64_t j) { return drop.empty() ? 1.0 : drop[base + i * T + j]; };
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          const double pd = P[base + i * T + j] * factor(i, j);
          double dp = 0;
          for (int64_t d = 0; d < D; ++d) {
            dx[(n * T + j) * row + 2 * p.c + h * D + d] += pd * dY(n, i, h * D + d);  // dV = (P*drop)^T dY
            dp += dY(n, i, h * D + d) * X(n, j, 2 * p.c + h * D + d);
          }
          dP[i * T + j] = dp * factor(i, j);
        }
      for (int64_t i = 0; i < T; ++i) {
        double dot = 0;  // rowsum(dP * P)
        for (int64_t j = 0; j < T; ++j) dot += dP[i * T + j] * P[base + i * T + j];
        for (int64_t j = 0; j < T; ++j) {
          const double ds = P[base + i * T + j] * (dP[i * T + j] - dot) * scale;
          for (int64_t d = 0; d < D; ++d) {
            dx[(n * T + i) * row + h * D + d] += ds * X(n, j, p.c + h * D + d);  // dQ = dS K
            dx[(n * T + j) * row + p.c + h * D + d] += ds * X(n, i, h * D + d);  // dK = dS^T Q
          }
        }
      }
    }
  return std::vector<float>(dx.begin(), dx.end());
}

Tensor4 layer_norm_forward(const Tensor4& x, const std::vector<float>& gamma, const std::vector<float>& beta,
                           double eps) {
  require(gamma.empty() || (static_cast<int64_t>(gamma.size()) == x.c && beta.size() == gamma.size()),
          "layer_norm_forward: gamma and beta need C entries");
  Tensor4 y(x.n, x.c, 1, 1);
  for (int64_t r = 0; r < x.n; ++r) {
    double inv_std = 0;
    const std::vector<double> xhat = normalized_row(x, r, eps, &inv_std);
    for (int64_t c = 0; c < x.c; ++c)
      y.v[r * x.c + c] = static_cast<float>(gamma.empty() ? xhat[c] : xhat[c] * gamma[c] + beta[c]);
  }
  return y;
}

LayerNormGrads layer_norm_backward(const Tensor4& x, const Tensor4& dy, const std::vector<float>& gamma, double eps) {
  require(x.same_shape(dy), "layer_norm_backward: dy must have x's shape");
  LayerNormGrads g{Tensor4(x.n, x.c, 1, 1), {}, {}};
  std::vector<double> dgamma(static_cast<size_t>(x.c), 0.0), dbeta(static_cast<size_t>(x.c), 0.0);
  for (int64_t r = 0; r < x.n; ++r) {
    double inv_std = 0;
    const std::vector<double> xhat = normalized_row(x, r, eps, &inv_std);
    std::vector<double> dxhat(static_cast<size_t>(x.c));
    double mean_dxhat = 0, mean_dxhat_xhat = 0;
    for (int64_t c = 0; c < x.c; ++c) {
      const double d = dy.v[r * x.c + c];
      dxhat[c] = d * (gamma.empty() ? 1.0 : gamma[c]);
      mean_dxhat += dxhat[c] / static_cast<double>(x.c);
      mean_dxhat_xhat += dxhat[c] * xhat[c] / static_cast<double>(x.c);
      dgamma[c] += d * xhat[c];
      dbeta[c] += d;
    }
    for (int64_t c = 0; c < x.c; ++c)
      g.dx.v[r * x.c + c] = static_cast<float>(inv_std * (dxhat[c] - mean_dxhat - xhat[c] * mean_dxhat_xhat));
  }
  for (int64_t c = 0; c < x.c; ++c) {
    g.dgamma.push_back(static_cast<float>(dgamma[c]));
    g.dbeta.push_back(static_cast<float>(dbeta[c]));
  }
  return g;
}

namespace {

constexpr double kGeluTanhCubic = 0.044715;

// gelu(x) and its derivative in double.
std::pair<double, double> gelu_and_slope(double x, bool tanh) {
  if (!tanh) {
    const double cdf = 0.5 * (1.0 + std::erf(x / std::sqrt(2.0)));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    return {x * cdf, cdf + x * pdf};
  }
  const double k = std::sqrt(2.0 / M_PI), u = k * (x + kGeluTanhCubic * x * x * x), t = std::tanh(u);
  return {0.5 * x * (1.0 + t), 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * kGeluTanhCubic * x * x)};
}

}  // namespace

Tensor4 gelu_forward(const Tensor4& x, bool tanh) {
  Tensor4 y = x;
  for (size_t i = 0; i < x.v.size(); ++i) y.v[i] = static_cast<float>(gelu_and_slope(x.v[i], tanh).first);
  return y;
}

Tensor4 gelu_backward(const Tensor4& x, const Tensor4& dy, bool tanh) {
  require(x.same_shape(dy), "gelu_backward: dy must have x's shape");
  Tensor4 dx = x;
  for (size_t i = 0; i < x.v.size(); ++i) dx.v[i] = static_cast<float>(dy.v[i] * gelu_and_slope(x.v[i], tanh).second);
  return dx;
}

namespace {

int64_t counted_rows(const Tensor4& logits, const std::vector<int64_t>& labels, int64_t ignore_index, const char* op) {
  require(static_cast<int64_t>(labels.size()) == logits.n, std::string(op) + ": one label per row");
  int64_t count = 0;
  for (int64_t label : labels) {
    if (label == ignore_index) continue;
    require(label >= 0 && label < logits.c, std::string(op) + ": label out of range");
    ++count;
  }
  return count;
}

}  // namespace

double token_cross_entropy(const Tensor4& logits, const std::vector<int64_t>& labels, int64_t ignore_index) {
  const int64_t count = counted_rows(logits, labels, ignore_index, "token_cross_entropy");
  double loss = 0;
  for (int64_t r = 0; r < logits.n; ++r)
    if (labels[r] != ignore_index) loss -= std::log(softmax_row(logits, r)[labels[r]]);
  return count ? loss / static_cast<double>(count) : 0.0;
}

Tensor4 token_cross_entropy_backward(const Tensor4& logits, const std::vector<int64_t>& labels, int64_t ignore_index) {
  const int64_t count = counted_rows(logits, labels, ignore_index, "token_cross_entropy_backward");
  Tensor4 d(logits.n, logits.c, 1, 1);
  for (int64_t r = 0; r < logits.n; ++r) {
    if (labels[r] == ignore_index) continue;
    const std::vector<double> p = softmax_row(logits, r);
    for (int64_t c = 0; c < logits.c; ++c)
      d.v[r * logits.c + c] = static_cast<float>((p[c] - (c == labels[r] ? 1.0 : 0.0)) / static_cast<double>(count));
  }
  return d;
}

}  // namespace vdnn::ref
