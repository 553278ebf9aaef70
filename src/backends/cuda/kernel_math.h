// backends/cuda/kernel_math.h — the per-element math of the backend's own CUDA kernels, as inline
// functions that nvcc compiles for the device and g++ for the host, so tests check them here.
//
// Model: device_kernels.cu is only grid-stride loops around these functions; each computes one
// output element from plain NCHW inputs and never races (pooling's backward GATHERS, for one input
// cell, the outputs whose windows cover it, in row-major order: no atomics, deterministic).
// Rounding helpers pin each operation to one float rounding (no fused multiply-add), as the CPU
// backend's loops compile on x86-64.
//
//   for (int64_t i = 0; i < planes * w.out_h * w.out_w; ++i) kernel_math::max_pool_forward_at(x, y,
//   idx, w, i); for (int64_t i = 0; i < planes * w.in_h * w.in_w; ++i) dx[i] =
//   kernel_math::max_pool_backward_at(dy, idx, w, i);
#pragma once

#include <cmath>
#include <cstdint>

#include "backends/cuda/device_kernels.h"

#if defined(__CUDACC__)
#define VDNN_HOST_DEVICE __host__ __device__
#else
#define VDNN_HOST_DEVICE
#endif

namespace vdnn::kernel_math {

VDNN_HOST_DEVICE inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
VDNN_HOST_DEVICE inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// a + b, a * b, a - b, each rounded once.
VDNN_HOST_DEVICE inline float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
VDNN_HOST_DEVICE inline float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
VDNN_HOST_DEVICE inline float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// The window of output (oh, ow) clipped to the input: rows [h0, h1), columns [w0, w1).
struct Clip {
  int64_t h0, h1, w0, w1;
};
VDNN_HOST_DEVICE inline Clip clip(const PoolWindow& p, int64_t oh, int64_t ow) {
  const int64_t hs = oh * p.sh - p.pt, ws = ow * p.sw - p.pl;
  return {imax(hs, 0), imin(hs + p.kh, p.in_h), imax(ws, 0), imin(ws + p.kw, p.in_w)};
}

// The outputs whose window (size k, stride s, leading pad) covers input row h: [*lo, *hi].
VDNN_HOST_DEVICE inline void covering(int64_t h, int64_t k, int64_t s, int64_t pad, int64_t out, int64_t* lo,
                                      int64_t* hi) {
  const int64_t top = h + pad - k + 1;  // the first window start that still reaches h
  *lo = top <= 0 ? 0 : (top + s - 1) / s;
  *hi = imin((h + pad) / s, out - 1);
}

// Output element i (over planes x out_h x out_w): the first maximum of its window and its index
// within the plane.
VDNN_HOST_DEVICE inline void max_pool_forward_at(const float* x, float* y, int32_t* argmax, const PoolWindow& p,
                                                 int64_t i) {
  const int64_t per_plane = p.out_h * p.out_w, plane = i / per_plane, o = i % per_plane;
  const Clip c = clip(p, o / p.out_w, o % p.out_w);
  const float* xp = x + plane * p.in_h * p.in_w;
  int64_t best = c.h0 * p.in_w + c.w0;
  for (int64_t h = c.h0; h < c.h1; ++h)
    for (int64_t w = c.w0; w < c.w1; ++w)
      if (xp[h * p.in_w + w] > xp[best]) best = h * p.in_w + w;
  y[i] = xp[best];
  argmax[i] = static_cast<int32_t>(best);
}

// Input gradient element i (over planes x in_h x in_w).
VDNN_HOST_DEVICE inline float max_pool_backward_at(const float* dy, const int32_t* argmax, const PoolWindow& p,
                                                   int64_t i) {
  const int64_t per_plane = p.in_h * p.in_w, plane = i / per_plane, cell = i % per_plane;
  int64_t oh0, oh1, ow0, ow1;
  covering(cell / p.in_w, p.kh, p.sh, p.pt, p.out_h, &oh0, &oh1);
  covering(cell % p.in_w, p.kw, p.sw, p.pl, p.out_w, &ow0, &ow1);
  const int64_t base = plane * p.out_h * p.out_w;
  float sum = 0.0f;
  for (int64_t oh = oh0; oh <= oh1; ++oh)
    for (int64_t ow = ow0; ow <= ow1; ++ow) {
      const int64_t o = base + oh * p.out_w + ow;
      if (argmax[o] == cell) sum += dy[o];
    }
  return sum;
}

// Average pooling divides by the window's real cells (exclude padding) or by its cells inside the
// padded input (include padding; Caffe and PyTorch): rows up to in_h + pt, columns up to in_w + pl,
// so that in ceil mode the cells a last window overhangs past the padding do not count.
VDNN_HOST_DEVICE inline float avg_divisor(const PoolWindow& p, const Clip& c, int64_t oh, int64_t ow) {
  if (p.exclude_padding) return static_cast<float>((c.h1 - c.h0) * (c.w1 - c.w0));
  const int64_t hs = oh * p.sh - p.pt, ws = ow * p.sw - p.pl;
  return static_cast<float>((imin(hs + p.kh, p.in_h + p.pt) - hs) * (imin(ws + p.kw, p.in_w + p.pl) - ws));
}

VDNN_HOST_DEVICE inline float avg_pool_forward_at(const float* x, const PoolWindow& p, int64_t i) {
  const int64_t per_plane = p.out_h * p.out_w, plane = i / per_plane, o = i % per_plane;
  const Clip c = clip(p, o / p.out_w, o % p.out_w);
  const float* xp = x + plane * p.in_h * p.in_w;
  float sum = 0.0f;
  for (int64_t h = c.h0; h < c.h1; ++h)
    for (int64_t w = c.w0; w < c.w1; ++w) sum += xp[h * p.in_w + w];
  return sum / avg_divisor(p, c, o / p.out_w, o % p.out_w);
}

VDNN_HOST_DEVICE inline float avg_pool_backward_at(const float* dy, const PoolWindow& p, int64_t i) {
  const int64_t per_plane = p.in_h * p.in_w, plane = i / per_plane, cell = i % per_plane;
  int64_t oh0, oh1, ow0, ow1;
  covering(cell / p.in_w, p.kh, p.sh, p.pt, p.out_h, &oh0, &oh1);
  covering(cell % p.in_w, p.kw, p.sw, p.pl, p.out_w, &ow0, &ow1);
  const int64_t base = plane * p.out_h * p.out_w;
  float sum = 0.0f;
  for (int64_t oh = oh0; oh <= oh1; ++oh)
    for (int64_t ow = ow0; ow <= ow1; ++ow)
      sum += dy[base + oh * p.out_w + ow] / avg_divisor(p, clip(p, oh, ow), oh, ow);
  return sum;
}

// splitmix64's finalizer: dropout draws element i's number from (seed, step, i) alone, so the mask
// does not depend on the launch shape.
VDNN_HOST_DEVICE inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
VDNN_HOST_DEVICE inline uint64_t dropout_key(uint64_t seed, uint64_t step) {
  return mix(seed ^ mix(step + 0x9E3779B97F4A7C15ULL));
}
// 1/keep with probability keep (24-bit uniform below keep), else 0.
VDNN_HOST_DEVICE inline float dropout_mask_at(uint64_t key, float keep, int64_t i) {
  const float u = static_cast<float>(mix(key + static_cast<uint64_t>(i)) >> 40) * (1.0f / 16777216.0f);
  return u < keep ? 1.0f / keep : 0.0f;
}

// Mean over the first `valid` rows of -log(max(p[label], 1e-30)): logf in float, summed in double
// in row order, as the CPU backend.
VDNN_HOST_DEVICE inline float cross_entropy(const float* p, const int32_t* labels, int64_t valid, int64_t classes) {
  double sum = 0;
  for (int64_t n = 0; n < valid; ++n) sum -= logf(fmaxf(p[n * classes + labels[n]], 1e-30f));
  return static_cast<float>(sum / static_cast<double>(valid));
}

// (p - onehot(label)) / valid for the valid rows, 0 for the padded ones.
VDNN_HOST_DEVICE inline float cross_entropy_backward_at(const float* p, const int32_t* labels, int64_t valid,
                                                        int64_t classes, int64_t i) {
  const int64_t n = i / classes, k = i % classes;
  return n < valid ? (p[i] - (k == labels[n] ? 1.0f : 0.0f)) * (1.0f / static_cast<float>(valid)) : 0.0f;
}

// a / b and sqrt(a), each rounded once (IEEE: as the CPU's).
VDNN_HOST_DEVICE inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
VDNN_HOST_DEVICE inline float sqrt_rn(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// v = momentum * v + (scale * g + decay * w); w -= lr * v, each operation rounded once.
VDNN_HOST_DEVICE inline void sgd_at(float* w, const float* g, float* v, float lr, float momentum, float decay,
                                    float scale, int64_t i) {
  const float vi = add_rn(mul_rn(momentum, v[i]), add_rn(mul_rn(scale, g[i]), mul_rn(decay, w[i])));
  v[i] = vi;
  w[i] = sub_rn(w[i], mul_rn(lr, vi));
}

// One element of AdamW's step (backend_api/adamw_step.h), each operation rounded once in its order.
VDNN_HOST_DEVICE inline void adamw_at(float* w, const float* grad, float* m, float* v, const AdamwStep& s, int64_t i) {
  const float g = mul_rn(s.grad_scale, grad[i]);
  const float decayed = mul_rn(w[i], s.decay);
  const float mi = add_rn(mul_rn(s.beta1, m[i]), mul_rn(s.one_minus_beta1, g));
  const float vi = add_rn(mul_rn(s.beta2, v[i]), mul_rn(mul_rn(s.one_minus_beta2, g), g));
  const float denom = add_rn(div_rn(sqrt_rn(vi), s.bias_correction2_sqrt), s.eps);
  m[i] = mi;
  v[i] = vi;
  w[i] = add_rn(decayed, div_rn(mul_rn(s.neg_step_size, mi), denom));
}

}  // namespace vdnn::kernel_math
