#include "runtime/sgd.h"

#include <cmath>

#include "vdnn/error.h"

namespace vdnn {

void Sgd::step(std::vector<ParamTensor>& params, double lr) {
  const float mu = static_cast<float>(config_.momentum);
  const float rate = static_cast<float>(lr);
  for (ParamTensor& p : params) {
    if (!p.grad) continue;
    const float wd = p.spec.decay ? static_cast<float>(config_.weight_decay) : 0.0f;
    float* w = p.data;
    const float* g = p.grad;
    VDNN_CHECK(p.velocity, "parameter '" << p.name << "' has a gradient but no momentum buffer");
    float* v = p.velocity;
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
