#include "backend_api/host_update.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace vdnn {
namespace {

// Elements [begin, end) of one update: v = momentum * v + (g + decay * w), w -= lr * v.
void sgd_range(const SgdUpdate& u, int64_t begin, int64_t end) {
  const float mu = u.momentum, rate = u.lr, wd = u.weight_decay, scale = u.grad_scale;
  float* w = u.weights;
  const float* g = u.grads;
  float* v = u.velocity;
#pragma omp simd
  for (int64_t k = begin; k < end; ++k) {
    v[k] = mu * v[k] + (scale * g[k] + wd * w[k]);
    w[k] -= rate * v[k];
  }
}

// torch.optim.AdamW's single-tensor step, each operation in its order (backend_api/adamw_step.h).
void adamw_range(const AdamwUpdate& u, int64_t begin, int64_t end) {
  const AdamwStep& s = u.step;
  const float decay = s.decay, b1 = s.beta1, c1 = s.one_minus_beta1, b2 = s.beta2, c2 = s.one_minus_beta2;
  const float neg_step = s.neg_step_size, bc2 = s.bias_correction2_sqrt, eps = s.eps, scale = s.grad_scale;
  float* w = u.weights;
  const float* grad = u.grads;
  float* m = u.exp_avg;
  float* v = u.exp_avg_sq;
#pragma omp simd
  for (int64_t k = begin; k < end; ++k) {
    const float g = scale * grad[k];
    const float decayed = w[k] * decay;
    m[k] = b1 * m[k] + c1 * g;
    v[k] = b2 * v[k] + c2 * g * g;
    const float denom = std::sqrt(v[k]) / bc2 + eps;
    w[k] = decayed + (neg_step * m[k]) / denom;
  }
}

// The updates laid end to end, each thread one equal share of all their elements: one parallel
// region per step instead of one per parameter (ResNet-18: 62), and no small parameter left to a
// single thread. Each element's arithmetic is the same as one update at a time, so the weights are.
template <typename Update, typename Range>
void update_in_shares(const std::vector<Update>& updates, Range range) {
  std::vector<int64_t> starts{0};  // updates[i] holds elements [starts[i], starts[i + 1])
  for (const Update& u : updates) starts.push_back(starts.back() + u.count);
  const int64_t total = starts.back();
#pragma omp parallel if (total > 65536)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = total * t / threads, end = total * (t + 1) / threads;
    for (size_t i = 0; i < updates.size(); ++i) {
      const int64_t lo = std::max(begin, starts[i]), hi = std::min(end, starts[i + 1]);
      if (lo < hi) range(updates[i], lo - starts[i], hi - starts[i]);
    }
  }
}

}  // namespace

void host_sgd_update_all(const std::vector<SgdUpdate>& updates) { update_in_shares(updates, sgd_range); }
void host_adamw_update_all(const std::vector<AdamwUpdate>& updates) { update_in_shares(updates, adamw_range); }

}  // namespace vdnn
