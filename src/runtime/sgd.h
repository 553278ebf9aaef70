// runtime/sgd.h — stochastic gradient descent with momentum and weight decay (PyTorch semantics),
// one of the optimizers (runtime/optimizer.h), and the learning-rate schedules.
//
//   g = grad_scale * grad + weight_decay * w   (grad_scale: gradient clipping, runtime/optimizer.h)   (decay_on
//   kWeights: weights only, not biases or BN parameters;
//                                  kAll: every trainable parameter, as torch.optim.SGD does)
//   v = momentum * v + g
//   w = w - lr * v
//
//   Sgd sgd({.momentum = 0.9, .weight_decay = 5e-4});
//   LrSchedule schedule{.base = 0.05, .kind = LrSchedule::kCosine, .total_steps = 4690,
//                       .warmup_steps = 100, .min_lr = 0.005};   // nanoGPT's warm-up + cosine
//   net.run_on_compute([&] { sgd.step(net.backend(), net.params(), schedule.at(step, epoch)); });
#pragma once

#include <string>
#include <vector>

#include "runtime/net.h"
#include "runtime/optimizer.h"
#include "util/option_names.h"

namespace vdnn {

struct SgdConfig {
  using DecayOn = WeightDecayOn;
  double momentum = 0.9;
  double weight_decay = 0.0;
  DecayOn decay_on = DecayOn::kWeights;  // vdnn's default; kAll is PyTorch's
  // "weights" | "all"; an error names `option` as the caller spells it (util/option_names.h).
  static DecayOn parse_decay_on(const std::string& name, const std::string& option = "--weight-decay-on");
  static const char* name(DecayOn d);
};

// The settings vdnn takes: `vdnn train --momentum`/`--weight-decay` (their CLI ranges) and
// vdnn.Net's momentum/weight_decay alike.
inline constexpr double kMaxMomentum = 0.999;
inline constexpr double kMaxWeightDecay = 1.0;
inline constexpr double kMaxLr = 100.0;
inline constexpr int kMaxStepEpochs = 100000;
inline constexpr int64_t kMaxWarmupSteps = int64_t{1} << 40;
// Throws vdnn::Error naming the option by `names` (util/option_names.h) when momentum is outside
// [0, kMaxMomentum] or weight_decay outside [0, kMaxWeightDecay] (NaN is outside every range).
void check_sgd_settings(double momentum, double weight_decay, const OptionNames& names);
// The same for a learning rate outside [0, kMaxLr] (`vdnn train --lr`, train_step's lr).
void check_lr(double lr, const OptionNames& names);

// step() (runtime/optimizer.h) updates every trainable parameter with the backend's update kernel,
// all in one pass (compute work: call it inside Net::run_on_compute). Its momentum buffer
// (ParamTensor::velocity) lives with the parameters in the device arena, so the optimizer state
// is counted like every other byte.
class Sgd : public Optimizer {
 public:
  explicit Sgd(SgdConfig config) : config_(config) {}
  OptimizerKind kind() const override { return OptimizerKind::kSgd; }
  void update_all(Backend& backend, std::vector<ParamTensor>& params) override;
  // The same update for one trainable parameter (data parallel: a gradient bucket at a time).
  void update(Backend& backend, ParamTensor& param) override;
  void update_on_host(ParamTensor& param) override;

 private:
  SgdUpdate update_of(ParamTensor& param, bool on_host = false) const;

  SgdConfig config_;
};

struct LrSchedule {
  enum Kind { kConstant, kStep, kCosine };
  double base = 0.05;
  Kind kind = kCosine;
  int64_t total_steps = 1;  // cosine: steps until lr reaches 0
  int step_epochs = 5;      // step: decay every `step_epochs` epochs
  double gamma = 0.1;       // step: by this factor
  // Linear warm-up before any kind (nanoGPT's get_lr): step s < warmup_steps runs at
  // base * (s + 1) / (warmup_steps + 1). Cosine then decays from base at step warmup_steps to
  // min_lr at total_steps (and stays there): min_lr + (base - min_lr) * 0.5 * (1 + cos(pi * r)),
  // r = (s - warmup_steps) / (total_steps - warmup_steps). With both 0 the cosine is the plain one.
  int64_t warmup_steps = 0;
  double min_lr = 0;  // cosine only
  // Throws vdnn::Error naming the option by `names` when base is not a learning rate (check_lr),
  // total_steps < 1, step_epochs outside 1..kMaxStepEpochs, gamma outside [0, 1], warmup_steps
  // outside 0..kMaxWarmupSteps, or min_lr outside [0, base] or given (> 0) with another kind than cosine.
  void check(const OptionNames& names) const;
  // The rate at 0-based `step` of 0-based `epoch`; throws vdnn::Error when either is negative.
  double at(int64_t step, int epoch) const;
  // "constant" | "step" | "cosine"; an error names `option` as the caller spells it.
  static Kind parse(const std::string& name, const std::string& option = "--lr-schedule");
  static const char* name(Kind kind);
};

}  // namespace vdnn
