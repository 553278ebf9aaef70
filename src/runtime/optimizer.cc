#include "runtime/optimizer.h"

#include <cmath>
#include <limits>

#include "runtime/adamw.h"
#include "runtime/sgd.h"
#include "util/number_text.h"
#include "vdnn/error.h"

namespace vdnn {

double default_weight_decay(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? 0.01 : 5e-4; }

double default_lr(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? 1e-3 : 0.05; }

// The update runs in float32: a positive setting below float32's smallest normal value (1.2e-38)
// would be 0 or denormal there, so eps would let 0 / 0 into the weights and a clipping norm would
// scale every gradient to 0.
void check_adamw_settings(double beta1, double beta2, double eps, const OptionNames& names) {
  if (!(beta1 >= 0 && beta1 < 1)) VDNN_THROW(names("beta1") << " " << exact_text(beta1) << ": expected 0 <= beta1 < 1");
  if (!(beta2 >= 0 && beta2 < 1)) VDNN_THROW(names("beta2") << " " << exact_text(beta2) << ": expected 0 <= beta2 < 1");
  if (!(eps >= std::numeric_limits<float>::min() && eps <= kMaxEps))
    VDNN_THROW(names("eps") << " " << exact_text(eps) << ": expected " << std::numeric_limits<float>::min()
                            << " (float32's smallest normal value: eps keeps 0 / 0 out of the float32 update) to "
                            << kMaxEps);
}

void check_clip_grad_norm(double max_norm, const OptionNames& names) {
  if (!(max_norm == 0 || (max_norm >= std::numeric_limits<float>::min() && max_norm <= kMaxClipGradNorm)))
    VDNN_THROW(names("clip_grad_norm") << " " << exact_text(max_norm) << ": expected 0 (no clipping) or a norm from "
                                       << std::numeric_limits<float>::min() << " (float32's smallest normal value) to "
                                       << kMaxClipGradNorm);
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c) {
  if (c.kind == OptimizerKind::kAdamW) return std::make_unique<AdamW>(c);
  return std::make_unique<Sgd>(SgdConfig{c.momentum, c.weight_decay, c.decay_on});
}

std::vector<double> gradient_squares(Backend& backend, const std::vector<ParamTensor>& params) {
  std::vector<double> squares(params.size(), 0.0);
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].grad) squares[i] = backend.sum_of_squares(params[i].grad, params[i].bytes);
  return squares;
}

float global_grad_norm(const std::vector<double>& squares) {
  float sum = 0;  // torch.norm(torch.stack(norms)): the fp32 norms' squares summed in fp32
  for (double s : squares) {
    const float norm = static_cast<float>(std::sqrt(s));
    sum += norm * norm;
  }
  return std::sqrt(sum);
}

float clip_scale(double max_norm, float total_norm) {
  if (max_norm <= 0) return 1.0f;
  const float coef = static_cast<float>(max_norm) / (total_norm + 1e-6f);
  return std::min(coef, 1.0f);  // torch.clamp(max=1.0); NaN stays NaN, as there
}

}  // namespace vdnn
