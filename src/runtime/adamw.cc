#include "runtime/adamw.h"

#include <cmath>

#include "backend_api/host_update.h"
#include "vdnn/error.h"

namespace vdnn {

void AdamW::update_all(Backend& backend, std::vector<ParamTensor>& params) {
  backend.adamw_update_all(trainable_updates<AdamwUpdate>(params, [&](ParamTensor& p) { return update_of(p); }));
}

void AdamW::update(Backend& backend, ParamTensor& p) { backend.adamw_update(update_of(p)); }

void AdamW::update_on_host(ParamTensor& p) { host_adamw_update_all({update_of(p, /*on_host=*/true)}); }

AdamwStep AdamW::scalars(bool decays) const {
  VDNN_CHECK(steps_ >= 1, "AdamW: an update before begin_step");
  const double t = static_cast<double>(steps_), lr = lr_;
  const double weight_decay = decays ? config_.weight_decay : 0.0;
  AdamwStep s;
  s.decay = static_cast<float>(1.0 - lr * weight_decay);
  s.beta1 = static_cast<float>(config_.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - config_.beta1);
  s.beta2 = static_cast<float>(config_.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - config_.beta2);
  const double bias_correction1 = 1.0 - std::pow(config_.beta1, t);
  const double bias_correction2 = 1.0 - std::pow(config_.beta2, t);
  s.neg_step_size = static_cast<float>(-(lr / bias_correction1));
  s.bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  s.eps = static_cast<float>(config_.eps);
  s.grad_scale = grad_scale_;
  return s;
}

AdamwUpdate AdamW::update_of(ParamTensor& p, bool on_host) const {
  VDNN_CHECK(p.exp_avg && p.exp_avg_sq, "parameter '" << p.name
                                                      << "' has a gradient but no AdamW moments (build the Net with "
                                                         "NetOptions::optimizer adamw)");
  VDNN_CHECK(!on_host || (p.host_data && p.host_grad), "parameter '" << p.name << "' has no host copies to update");
  return {on_host ? p.host_data : p.data,
          on_host ? p.host_grad : p.grad,
          p.exp_avg,
          p.exp_avg_sq,
          static_cast<int64_t>(p.bytes / sizeof(float)),
          scalars(decays(p, config_.decay_on))};
}

}  // namespace vdnn
