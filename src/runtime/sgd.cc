#include "runtime/sgd.h"

#include <cmath>

#include "vdnn/error.h"

namespace vdnn {

void Sgd::step(Backend& backend, std::vector<ParamTensor>& params, double lr) {
  std::vector<SgdUpdate> updates;
  for (ParamTensor& p : params)
    if (p.grad) updates.push_back(update_of(p, lr));
  backend.sgd_update_all(updates);
}

void Sgd::update(Backend& backend, ParamTensor& p, double lr) { backend.sgd_update(update_of(p, lr)); }

SgdUpdate Sgd::update_of(ParamTensor& p, double lr) const {
  VDNN_CHECK(p.velocity, "parameter '" << p.name << "' has a gradient but no momentum buffer");
  SgdUpdate u;
  u.weights = p.data;
  u.grads = p.grad;
  u.velocity = p.velocity;
  u.count = static_cast<int64_t>(p.bytes / sizeof(float));
  u.lr = static_cast<float>(lr);
  u.momentum = static_cast<float>(config_.momentum);
  const bool decays = p.spec.decay || config_.decay_on == SgdConfig::DecayOn::kAll;
  u.weight_decay = decays ? static_cast<float>(config_.weight_decay) : 0.0f;
  return u;
}

SgdConfig::DecayOn SgdConfig::parse_decay_on(const std::string& name, const std::string& option) {
  if (name == "weights") return DecayOn::kWeights;
  if (name == "all") return DecayOn::kAll;
  VDNN_THROW(option << " '" << name << "': expected weights (vdnn: weights only) or all (PyTorch: every "
                    << "trainable parameter, biases and batch-norm weight/bias too)");
}

void check_sgd_settings(double momentum, double weight_decay, const OptionNames& names) {
  if (!(momentum >= 0 && momentum <= kMaxMomentum))  // NaN too
    VDNN_THROW(names("momentum") << " " << momentum << ": expected 0 to " << kMaxMomentum);
  if (!(weight_decay >= 0 && weight_decay <= kMaxWeightDecay))
    VDNN_THROW(names("weight_decay") << " " << weight_decay << ": expected 0 to " << kMaxWeightDecay);
}

void check_lr(double lr, const OptionNames& names) {
  if (!(lr >= 0 && lr <= kMaxLr)) VDNN_THROW(names("lr") << " " << lr << ": expected 0 to " << kMaxLr);
}

const char* SgdConfig::name(DecayOn d) { return d == DecayOn::kAll ? "all" : "weights"; }

void LrSchedule::check(const OptionNames& names) const {
  check_lr(base, names);
  if (total_steps < 1) VDNN_THROW(names("total_steps") << " " << total_steps << ": expected >= 1");
  if (step_epochs < 1 || step_epochs > kMaxStepEpochs)
    VDNN_THROW(names("step_epochs") << " " << step_epochs << ": expected 1 to " << kMaxStepEpochs);
  if (!(gamma >= 0 && gamma <= 1)) VDNN_THROW(names("gamma") << " " << gamma << ": expected 0 to 1");
}

double LrSchedule::at(int64_t step, int epoch) const {
  if (step < 0 || epoch < 0)
    VDNN_THROW("the learning rate at step " << step << " of epoch " << epoch
                                            << ": both count from 0 (expected step >= 0 and epoch >= 0)");
  switch (kind) {
    case kConstant:
      return base;
    case kStep:
      return base * std::pow(gamma, epoch / std::max(1, step_epochs));
    case kCosine: {
      const double t = std::min(1.0, static_cast<double>(step) / static_cast<double>(total_steps));
      return base * 0.5 * (1.0 + std::cos(M_PI * t));
    }
  }
  return base;
}

LrSchedule::Kind LrSchedule::parse(const std::string& name, const std::string& option) {
  if (name == "constant") return kConstant;
  if (name == "step") return kStep;
  if (name == "cosine") return kCosine;
  VDNN_THROW(option << ": expected constant, step or cosine, got '" << name << "'");
}

const char* LrSchedule::name(Kind kind) { return kind == kConstant ? "constant" : kind == kStep ? "step" : "cosine"; }

}  // namespace vdnn
