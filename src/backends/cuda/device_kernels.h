// backends/cuda/device_kernels.h — the few operations no CUDA library call covers, as host-side
// launchers of small CUDA kernels (device_kernels.cu, the only file nvcc compiles).
//
// Model: each function enqueues one grid-stride kernel onto `stream` and returns; nothing
// synchronizes. The per-element math is in kernel_math.h (checked on the host by
// tests/cuda/test_kernel_math.cc); all of it is deterministic (no atomics). Launch errors throw
// vdnn::Error through VDNN_CUDA_CHECK(cudaGetLastError()).
//
//   PoolWindow w{kh, kw, sh, sw, pt, pl, h, w, oh, ow};
//   launch_max_pool_forward(x, y, argmax, planes, w, stream);      // planes = batch * channels
//   launch_max_pool_backward(dy, argmax, dx, planes, w, stream);
//   launch_sgd_update(w, g, v, n, lr, momentum, weight_decay, grad_scale, stream);
//   launch_adamw_update(w, g, m, v, n, step, stream);
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "backend_api/adamw_step.h"

namespace vdnn {

// One pooling sweep over planes of in_h x in_w; windows start at o*stride - pad_begin and never
// read padding. Average pooling divides by the real cells (exclude_padding) or by the cells inside
// the padded input (include_padding, as Caffe/PyTorch; kh*kw unless a ceil-mode window overhangs).
struct PoolWindow {
  int64_t kh, kw, sh, sw, pt, pl;
  int64_t in_h, in_w, out_h, out_w;
  bool exclude_padding = true;
};

void launch_max_pool_forward(const float* x, float* y, int32_t* argmax, int64_t planes, const PoolWindow& w,
                             cudaStream_t stream);
void launch_max_pool_backward(const float* dy, const int32_t* argmax, float* dx, int64_t planes, const PoolWindow& w,
                              cudaStream_t stream);
void launch_avg_pool_forward(const float* x, float* y, int64_t planes, const PoolWindow& w, cudaStream_t stream);
void launch_avg_pool_backward(const float* dy, float* dx, int64_t planes, const PoolWindow& w, cudaStream_t stream);

// Dropout: mask[i] = scale or 0 (kept with probability keep, from a hash of seed, step and i),
// y = x * mask. And the plain product y = a * b (dropout's backward).
void launch_dropout_forward(const float* x, float* mask, float* y, int64_t n, uint64_t seed, uint64_t step, float keep,
                            cudaStream_t stream);
void launch_multiply(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream);

// Cross-entropy of softmax probabilities p (batch x classes) against labels (device memory):
// *loss = mean over the first `valid` rows of -log(max(p[label], 1e-30)), summed in double;
// dx = (p - onehot(label)) / valid for the valid rows, 0 for the rest.
void launch_cross_entropy_loss(const float* p, const int32_t* labels, int64_t valid, int64_t classes, float* loss,
                               cudaStream_t stream);
void launch_cross_entropy_backward(const float* p, const int32_t* labels, int64_t batch, int64_t valid, int64_t classes,
                                   float* dx, cudaStream_t stream);

// v = momentum * v + (grad_scale * g + weight_decay * w); w -= lr * v — each operation rounded as
// the CPU backend's loop (no fused multiply-add), so one step matches it bit for bit.
void launch_sgd_update(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay,
                       float grad_scale, cudaStream_t stream);
// AdamW (backend_api/adamw_step.h) on n elements: m and v its moments, rounded as the CPU's loop.
void launch_adamw_update(float* w, const float* g, float* m, float* v, int64_t n, const AdamwStep& step,
                         cudaStream_t stream);

}  // namespace vdnn
