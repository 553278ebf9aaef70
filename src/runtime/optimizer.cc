#include "runtime/optimizer.h"

#include <cmath>

#include "runtime/adamw.h"
#include "runtime/sgd.h"
#include "vdnn/error.h"

namespace vdnn {

double default_weight_decay(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? 0.01 : 5e-4; }

double default_lr(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? 1e-3 : 0.05; }

void check_adamw_settings(double beta1, double beta2, double eps, const OptionNames& names) {
  if (!(beta1 >= 0 && beta1 < 1)) VDNN_THROW(names("beta1") << " " << beta1 << ": expected 0 <= beta1 < 1");
  if (!(beta2 >= 0 && beta2 < 1)) VDNN_THROW(names("beta2") << " " << beta2 << ": expected 0 <= beta2 < 1");
  if (!(eps > 0 && eps <= kMaxEps))
    VDNN_THROW(names("eps") << " " << eps << ": expected above 0 (it keeps 0 / 0 out of the update) and at most "
                            << kMaxEps);
}

void check_clip_grad_norm(double max_norm, const OptionNames& names) {
  if (!(max_norm >= 0 && max_norm <= kMaxClipGradNorm))
    VDNN_THROW(names("clip_grad_norm") << " " << max_norm << ": expected 0 (no clipping) or a norm above 0, at most "
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
