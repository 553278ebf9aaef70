// backend_api/adamw_step.h — the scalars of one AdamW step, and the arithmetic every backend's
// update kernel performs with them: torch.optim.AdamW's (foreach=False) in fp32, each operation
// rounded once, in this order, for every element (g the gradient):
//   g = grad_scale * g                                 (gradient clipping; 1: unchanged)
//   w = w * decay                                      decay = 1 - lr * weight_decay
//   m = beta1 * m + one_minus_beta1 * g
//   v = beta2 * v + one_minus_beta2 * g * g
//   w = w + (neg_step_size * m) / (sqrt(v) / bias_correction2_sqrt + eps)
// where neg_step_size = -lr / (1 - beta1^t) and bias_correction2_sqrt = sqrt(1 - beta2^t), t the
// optimizer steps so far including this one: computed in double, as PyTorch's Python floats, then
// rounded to fp32 once (runtime/adamw.h fills them). A plain struct: the CUDA kernels take it too.
//
//   AdamwStep s{.decay = 1 - 1e-3f * 0.01f, .neg_step_size = -1e-3f / 0.1f, .bias_correction2_sqrt = 0.0316f};
//   backend.adamw_update({weights, grads, exp_avg, exp_avg_sq, count, s});
#pragma once

namespace vdnn {

struct AdamwStep {
  float decay = 1;
  float beta1 = 0.9f, one_minus_beta1 = 0.1f;
  float beta2 = 0.999f, one_minus_beta2 = 0.001f;
  float neg_step_size = 0, bias_correction2_sqrt = 1, eps = 1e-8f;
  float grad_scale = 1;
};

}  // namespace vdnn
