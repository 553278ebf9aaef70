// runtime/optimizer.h — the optimizer a training step updates the parameters with, behind one
// interface: SGD with momentum (runtime/sgd.h) or AdamW (runtime/adamw.h); and gradient clipping
// by the global L2 norm (PyTorch's torch.nn.utils.clip_grad_norm_).
//
// Model: an optimizer's state lives in the device arena beside each trainable parameter (the
// buffers plan/optimizer_state.h names, planned as MemoryClass::kOptimizerState; the Net must be
// built with the same NetOptions::optimizer). A step is begin_step(lr, grad_scale) — which counts
// it (AdamW's t: bias corrections) — then updates: every parameter in one pass (update_all), or
// one parameter at a time (update: data parallel, a gradient bucket as its all-reduce ends).
// Clipping multiplies each gradient by grad_scale inside the update kernel (the gradients in the
// arena keep their unclipped values), which rounds each element as PyTorch's g.mul_(clip_coef) does.
//
//   std::unique_ptr<Optimizer> opt = make_optimizer({.kind = OptimizerKind::kAdamW, .weight_decay = 0.01});
//   net.run_on_compute([&] {
//     const float norm = global_grad_norm(net.backend(), net.params());
//     opt->step(net.backend(), net.params(), 1e-3, clip_scale(1.0, norm));   // clipped to norm 1
//   });
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "plan/optimizer_state.h"
#include "runtime/net.h"
#include "util/option_names.h"

namespace vdnn {

// Which parameters weight decay applies to: kWeights (vdnn's default: conv and fc weights,
// ParamSpec::decay) or kAll (PyTorch's default: every trainable parameter, biases and batch-norm
// weights too). Both optimizers read it alike.
enum class WeightDecayOn { kWeights, kAll };
inline bool decays(const ParamTensor& p, WeightDecayOn on) { return p.spec.decay || on == WeightDecayOn::kAll; }

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  double momentum = 0.9;  // SGD
  double weight_decay = 5e-4;
  WeightDecayOn decay_on = WeightDecayOn::kWeights;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // AdamW
};

// The default --weight-decay of each optimizer: SGD 5e-4 (vdnn's, the CIFAR recipes'), AdamW 0.01
// (torch.optim.AdamW's).
double default_weight_decay(OptimizerKind kind);

// The default --lr of each optimizer: SGD 0.05 (vdnn's, the Fashion-MNIST and CIFAR recipes'),
// AdamW 1e-3 (torch.optim.AdamW's; 0.05 makes AdamW's steps of about lr per weight far too large).
double default_lr(OptimizerKind kind);

// AdamW's ranges (`vdnn train --beta1/--beta2/--eps`, vdnn.Net's keywords): beta1 and beta2 in
// [0, 1) (as PyTorch), eps in (0, kMaxEps] (0 would divide 0 by 0 where a gradient stays 0).
inline constexpr double kMaxEps = 1.0;
// Throws vdnn::Error naming the option by `names` (util/option_names.h) when one is outside its range.
void check_adamw_settings(double beta1, double beta2, double eps, const OptionNames& names);
// --clip-grad-norm: 0 (no clipping) or a norm in (0, kMaxClipGradNorm]; NaN is refused.
inline constexpr double kMaxClipGradNorm = 1e6;
void check_clip_grad_norm(double max_norm, const OptionNames& names);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual OptimizerKind kind() const = 0;
  // Starts an optimizer step at learning rate `lr` with the gradients scaled by `grad_scale`, and
  // counts it (steps()).
  void begin_step(double lr, float grad_scale = 1.0f) {
    lr_ = lr;
    grad_scale_ = grad_scale;
    ++steps_;
  }
  // The current step's update of every trainable parameter, in one pass of the backend's kernel
  // (compute work: inside Net::run_on_compute), or of one parameter (data parallel).
  virtual void update_all(Backend& backend, std::vector<ParamTensor>& params) = 0;
  virtual void update(Backend& backend, ParamTensor& param) = 0;
  // The same update of one parameter whose state is in host memory, over its host copies
  // (ParamTensor::host_data, host_grad and the state), by the host's CPU on any backend
  // (backend_api/host_update.h): runtime/host_optimizer_step.h moves the gradient and weight.
  virtual void update_on_host(ParamTensor& param) = 0;
  // begin_step then update_all.
  void step(Backend& backend, std::vector<ParamTensor>& params, double lr, float grad_scale = 1.0f) {
    begin_step(lr, grad_scale);
    update_all(backend, params);
  }
  // Steps taken (AdamW's t after the last one); a resumed run sets the checkpoint's back.
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  double lr_ = 0;
  float grad_scale_ = 1.0f;
  int64_t steps_ = 0;
};

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

// `of(p)` for every parameter with a gradient, in order: what a backend's one-pass update takes.
template <typename Update, typename Of>
std::vector<Update> trainable_updates(std::vector<ParamTensor>& params, Of of) {
  std::vector<Update> updates;
  for (ParamTensor& p : params)
    if (p.grad) updates.push_back(of(p));
  return updates;
}

// Each parameter's gradient squares summed in double (0 where it has none), read in place on the
// CPU: NaN or Inf exactly where that gradient holds one, so one pass over the gradients serves both
// the finite check and the norm of a clipped step.
std::vector<double> gradient_squares(Backend& backend, const std::vector<ParamTensor>& params);
// The global L2 norm of those gradients, as clip_grad_norm_ computes it: each gradient's norm
// (rounded to fp32, as torch.norm's fp32 result), then the norm of those norms, in fp32.
float global_grad_norm(const std::vector<double>& squares);
inline float global_grad_norm(Backend& backend, const std::vector<ParamTensor>& params) {
  return global_grad_norm(gradient_squares(backend, params));
}
// clip_grad_norm_'s factor: min(1, max_norm / (total_norm + 1e-6)) in fp32; 1 when max_norm <= 0 (no clipping).
float clip_scale(double max_norm, float total_norm);

}  // namespace vdnn
