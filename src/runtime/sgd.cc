#include "runtime/sgd.h"

#include <cmath>

#include "backend_api/host_update.h"
#include "util/number_text.h"
#include "vdnn/error.h"

namespace vdnn {

void Sgd::update_all(Backend& backend, std::vector<ParamTensor>& params) {
  backend.sgd_update_all(trainable_updates<SgdUpdate>(params, [&](ParamTensor& p) { return update_of(p); }));
}

void Sgd::update(Backend& backend, ParamTensor& p) { backend.sgd_update(update_of(p)); }

void Sgd::update_on_host(ParamTensor& p) { host_sgd_update_all({update_of(p, /*on_host=*/true)}); }

SgdUpdate Sgd::update_of(ParamTensor& p, bool on_host) const {
  VDNN_CHECK(p.velocity, "parameter '" << p.name << "' has a gradient but no momentum buffer");
  VDNN_CHECK(!on_host || (p.host_data && p.host_grad), "parameter '" << p.name << "' has no host copies to update");
  SgdUpdate u;
  u.weights = on_host ? p.host_data : p.data;
  u.grads = on_host ? p.host_grad : p.grad;
  u.velocity = p.velocity;
  u.count = static_cast<int64_t>(p.bytes / sizeof(float));
  u.lr = static_cast<float>(lr_);
  u.momentum = static_cast<float>(config_.momentum);
  u.weight_decay = decays(p, config_.decay_on) ? static_cast<float>(config_.weight_decay) : 0.0f;
  u.grad_scale = grad_scale_;
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
    VDNN_THROW(names("momentum") << " " << exact_text(momentum) << ": expected 0 to " << kMaxMomentum);
  if (!(weight_decay >= 0 && weight_decay <= kMaxWeightDecay))
    VDNN_THROW(names("weight_decay") << " " << exact_text(weight_decay) << ": expected 0 to " << kMaxWeightDecay);
}

void check_lr(double lr, const OptionNames& names) {
  if (!(lr >= 0 && lr <= kMaxLr)) VDNN_THROW(names("lr") << " " << exact_text(lr) << ": expected 0 to " << kMaxLr);
}

const char* SgdConfig::name(DecayOn d) { return d == DecayOn::kAll ? "all" : "weights"; }

void LrSchedule::check(const OptionNames& names) const {
  check_lr(base, names);
  if (total_steps < 1) VDNN_THROW(names("total_steps") << " " << total_steps << ": expected >= 1");
  if (step_epochs < 1 || step_epochs > kMaxStepEpochs)
    VDNN_THROW(names("step_epochs") << " " << step_epochs << ": expected 1 to " << kMaxStepEpochs);
  if (!(gamma >= 0 && gamma <= 1)) VDNN_THROW(names("gamma") << " " << exact_text(gamma) << ": expected 0 to 1");
  if (warmup_steps < 0 || warmup_steps > kMaxWarmupSteps)
    VDNN_THROW(names("warmup_steps") << " " << warmup_steps << ": expected 0 (none) to " << kMaxWarmupSteps);
  if (!(min_lr >= 0 && min_lr <= base))
    VDNN_THROW(names("min_lr") << " " << exact_text(min_lr) << ": expected 0 to the learning rate (" << names("lr")
                               << " " << exact_text(base) << ")");
  if (min_lr > 0 && kind != kCosine)
    VDNN_THROW(names("min_lr") << " " << exact_text(min_lr) << ": the floor of the cosine schedule, but "
                               << names("schedule") << " is " << name(kind));
}

double LrSchedule::at(int64_t step, int epoch) const {
  if (step < 0 || epoch < 0)
    VDNN_THROW("the learning rate at step " << step << " of epoch " << epoch
                                            << ": both count from 0 (expected step >= 0 and epoch >= 0)");
  if (step < warmup_steps)  // nanoGPT's get_lr: (it + 1) / (warmup_iters + 1)
    return base * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  switch (kind) {
    case kConstant:
      return base;
    case kStep:
      return base * std::pow(gamma, epoch / std::max(1, step_epochs));
    case kCosine: {
      // Without warm-up and floor this is base * 0.5 * (1 + cos(pi * step / total)) to the bit.
      const int64_t span = std::max<int64_t>(1, total_steps - warmup_steps);
      const double t = std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(span));
      return min_lr + (base - min_lr) * 0.5 * (1.0 + std::cos(M_PI * t));
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
