// The small CUDA kernels of the CUDA backend (device_kernels.h): grid-stride loops around the
// per-element math of kernel_math.h. The only file nvcc compiles; keep it short.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_kernels.h"
#include "backends/cuda/kernel_math.h"

namespace vdnn {
namespace {

namespace km = kernel_math;

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 20;  // the grid-stride loop covers the rest

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > kMaxBlocks ? kMaxBlocks : b));
}

#define VDNN_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{blockDim.x} * gridDim.x)

__global__ void max_pool_forward(const float* x, float* y, int32_t* argmax, int64_t n, PoolWindow p) {
  VDNN_GRID_STRIDE(i, n) { km::max_pool_forward_at(x, y, argmax, p, i); }
}

__global__ void max_pool_backward(const float* dy, const int32_t* argmax, float* dx, int64_t n, PoolWindow p) {
  VDNN_GRID_STRIDE(i, n) { dx[i] = km::max_pool_backward_at(dy, argmax, p, i); }
}

__global__ void avg_pool_forward(const float* x, float* y, int64_t n, PoolWindow p) {
  VDNN_GRID_STRIDE(i, n) { y[i] = km::avg_pool_forward_at(x, p, i); }
}

__global__ void avg_pool_backward(const float* dy, float* dx, int64_t n, PoolWindow p) {
  VDNN_GRID_STRIDE(i, n) { dx[i] = km::avg_pool_backward_at(dy, p, i); }
}

__global__ void dropout_forward(const float* x, float* mask, float* y, int64_t n, uint64_t key, float keep) {
  VDNN_GRID_STRIDE(i, n) {
    mask[i] = km::dropout_mask_at(key, keep, i);
    y[i] = x[i] * mask[i];
  }
}

__global__ void multiply(const float* a, const float* b, float* y, int64_t n) {
  VDNN_GRID_STRIDE(i, n) { y[i] = a[i] * b[i]; }
}

__global__ void cross_entropy_loss(const float* p, const int32_t* labels, int64_t valid, int64_t classes, float* loss) {
  *loss = km::cross_entropy(p, labels, valid, classes);  // one thread: a fixed summation order
}

__global__ void cross_entropy_backward(const float* p, const int32_t* labels, int64_t n, int64_t valid, int64_t classes,
                                       float* dx) {
  VDNN_GRID_STRIDE(i, n) { dx[i] = km::cross_entropy_backward_at(p, labels, valid, classes, i); }
}

__global__ void sgd_update(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float decay,
                           float scale) {
  VDNN_GRID_STRIDE(i, n) { km::sgd_at(w, g, v, lr, momentum, decay, scale, i); }
}

__global__ void adamw_update(float* w, const float* g, float* m, float* v, int64_t n, AdamwStep step) {
  VDNN_GRID_STRIDE(i, n) { km::adamw_at(w, g, m, v, step, i); }
}

void check_launch() { VDNN_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

void launch_max_pool_forward(const float* x, float* y, int32_t* argmax, int64_t planes, const PoolWindow& w,
                             cudaStream_t stream) {
  const int64_t n = planes * w.out_h * w.out_w;
  max_pool_forward<<<blocks_for(n), kThreads, 0, stream>>>(x, y, argmax, n, w);
  check_launch();
}

void launch_max_pool_backward(const float* dy, const int32_t* argmax, float* dx, int64_t planes, const PoolWindow& w,
                              cudaStream_t stream) {
  const int64_t n = planes * w.in_h * w.in_w;
  max_pool_backward<<<blocks_for(n), kThreads, 0, stream>>>(dy, argmax, dx, n, w);
  check_launch();
}

void launch_avg_pool_forward(const float* x, float* y, int64_t planes, const PoolWindow& w, cudaStream_t stream) {
  const int64_t n = planes * w.out_h * w.out_w;
  avg_pool_forward<<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, w);
  check_launch();
}

void launch_avg_pool_backward(const float* dy, float* dx, int64_t planes, const PoolWindow& w, cudaStream_t stream) {
  const int64_t n = planes * w.in_h * w.in_w;
  avg_pool_backward<<<blocks_for(n), kThreads, 0, stream>>>(dy, dx, n, w);
  check_launch();
}

void launch_dropout_forward(const float* x, float* mask, float* y, int64_t n, uint64_t seed, uint64_t step, float keep,
                            cudaStream_t stream) {
  dropout_forward<<<blocks_for(n), kThreads, 0, stream>>>(x, mask, y, n, km::dropout_key(seed, step), keep);
  check_launch();
}

void launch_multiply(const float* a, const float* b, float* y, int64_t n, cudaStream_t stream) {
  multiply<<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
  check_launch();
}

void launch_cross_entropy_loss(const float* p, const int32_t* labels, int64_t valid, int64_t classes, float* loss,
                               cudaStream_t stream) {
  cross_entropy_loss<<<1, 1, 0, stream>>>(p, labels, valid, classes, loss);
  check_launch();
}

void launch_cross_entropy_backward(const float* p, const int32_t* labels, int64_t batch, int64_t valid, int64_t classes,
                                   float* dx, cudaStream_t stream) {
  const int64_t n = batch * classes;
  cross_entropy_backward<<<blocks_for(n), kThreads, 0, stream>>>(p, labels, n, valid, classes, dx);
  check_launch();
}

void launch_sgd_update(float* w, const float* g, float* v, int64_t n, float lr, float momentum, float weight_decay,
                       float grad_scale, cudaStream_t stream) {
  sgd_update<<<blocks_for(n), kThreads, 0, stream>>>(w, g, v, n, lr, momentum, weight_decay, grad_scale);
  check_launch();
}

void launch_adamw_update(float* w, const float* g, float* m, float* v, int64_t n, const AdamwStep& step,
                         cudaStream_t stream) {
  adamw_update<<<blocks_for(n), kThreads, 0, stream>>>(w, g, m, v, n, step);
  check_launch();
}

}  // namespace vdnn
