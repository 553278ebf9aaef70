#include "runtime/sgd.h"

#include <cmath>

#include "vdnn/error.h"

namespace vdnn {

void Sgd::step(std::vector<ParamTensor>& params, double lr) {
  if (velocity_.empty())
    for (const ParamTensor& p : params)
      velocity_.emplace_back(p.grad && !p.velocity ? p.md.get_size() : 0);
  VDNN_CHECK(velocity_.size() == params.size(), "parameter list changed between steps");
  const float mu = static_cast<float>(config_.momentum);
  const float rate = static_cast<float>(lr);
  for (size_t i = 0; i < params.size(); ++i) {
    ParamTensor& p = params[i];
    if (!p.grad) continue;
    const float wd = p.spec.decay ? static_cast<float>(config_.weight_decay) : 0.0f;
    float* w = p.data;
    const float* g = p.grad;
    float* v = p.velocity ? p.velocity : velocity_[i].as<float>();
    const int64_t n = static_cast<int64_t>(p.md.get_size() / sizeof(float));
#pragma omp parallel for simd schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; ++k) {
      v[k] = mu * v[k] + (g[k] + wd * w[k]);
      w[k] -= rate * v[k];
    }
  }
}

double LrSchedule::at(int64_t step, int epoch) const {
  switch (kind) {
    case kConstant: return base;
    case kStep: return base * std::pow(gamma, epoch / std::max(1, step_epochs));
    case kCosine: {
      const double t = std::min(1.0, static_cast<double>(step) / static_cast<double>(total_steps));
      return base * 0.5 * (1.0 + std::cos(M_PI * t));
    }
  }
  return base;
}

LrSchedule::Kind LrSchedule::parse(const std::string& name) {
  if (name == "constant") return kConstant;
  if (name == "step") return kStep;
  if (name == "cosine") return kCosine;
  VDNN_THROW("--lr-schedule: expected constant, step or cosine, got '" << name << "'");
}

}  // namespace vdnn
