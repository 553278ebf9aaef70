// runtime/adamw.h — AdamW with torch.optim.AdamW's arithmetic (foreach=False, amsgrad=False):
//
//   t = t + 1
//   w = w * (1 - lr * weight_decay)          (decoupled decay: where decay_on says, as SGD's)
//   m = beta1 * m + (1 - beta1) * g          (":exp_avg", fp32)
//   v = beta2 * v + (1 - beta2) * g * g      (":exp_avg_sq", fp32)
//   w = w - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
//
// in PyTorch's order of operations (backend_api/adamw_step.h): the scalars in double, each
// element's operations in fp32, so a step matches torch's to within its own rounding. The two
// moments live beside each parameter in the device arena (MemoryClass::kOptimizerState: twice the
// parameters' bytes, where SGD's momentum is once); build the Net with NetOptions::optimizer =
// OptimizerKind::kAdamW so the planner places them.
//
//   AdamW adamw({.kind = OptimizerKind::kAdamW, .weight_decay = 0.01, .decay_on = WeightDecayOn::kAll});
//   net.run_on_compute([&] { adamw.step(net.backend(), net.params(), 1e-3); });
//   adamw.steps();   // 1: t of the bias corrections
#pragma once

#include <vector>

#include "runtime/optimizer.h"

namespace vdnn {

class AdamW : public Optimizer {
 public:
  explicit AdamW(OptimizerConfig config) : config_(config) {}
  OptimizerKind kind() const override { return OptimizerKind::kAdamW; }
  void update_all(Backend& backend, std::vector<ParamTensor>& params) override;
  void update(Backend& backend, ParamTensor& param) override;
  void update_on_host(ParamTensor& param) override;
  // The step's scalars for a parameter that decays or not (tests compare kernels with them).
  AdamwStep scalars(bool decays) const;

 private:
  AdamwUpdate update_of(ParamTensor& param, bool on_host = false) const;

  OptimizerConfig config_;
};

}  // namespace vdnn
