// layers/batch_norm_slices.h — batch normalization inside a slice run (rewrites/slice_runs.h): the whole
// batch's statistics from slices that are never on the device together.
//
// Model: a batch norm over k slices x_0..x_{k-1} of n = N/k samples becomes three layers, each an
// ordinary differentiable node, so the builder's keep/offload/recompute, gradient sums and shared
// parameters apply to them unchanged:
//   bn_stats   (one per slice)  P_s = [mean_s, var_s] of x_s per channel (biased, over n*H*W)
//   bn_combine (one)            S = [mean, var] of the whole batch from the k P_s (equal counts:
//                               mean = avg mean_s, var = avg var_s + avg (mean_s - mean)^2)
//   bn_apply   (one per slice)  y_s = weight * (x_s - mean) / sqrt(var + eps) + bias
// Backward is the chain rule through the three: bn_apply gives x_s its direct gradient and S its
// share (dmean = -weight/sigma * sum dy, dvar = -weight/(2 (var + eps)) * sum dy*xhat); bn_combine
// hands each P_s its share; bn_stats adds dmean_s/m + 2 dvar_s (x_s - mean_s)/m to x_s's gradient.
// The result is batch norm's exact gradient (summation order aside). The slice run computes each
// x_s twice (rewrites/slice_runs.h): once for its statistics, once to normalize it, so no slice waits on
// the device for the others. bn_apply's slices share the batch norm's parameters (the first owns
// them; one node, slice 0 of the run's own pass, updates the running averages from S, PyTorch's
// convention); in evaluation bn_apply
// normalizes with the running averages and the statistics go unused.
// P_s and S are 2 * C floats, not per sample: their per-sample shape [2C] is nominal (kernels and
// targets size them as 2 * C floats whatever the batch).
//
//   const BatchNormLayer& bn = ...;                                   // the user's "bn1"
//   auto stats = std::make_unique<BnStatsLayer>("bn1/stats/s0", bn);
//   auto combine = std::make_unique<BnCombineLayer>("bn1/stats", 4);
//   auto apply = std::make_unique<BnApplyLayer>("bn1/s0", bn, 4, true);  // reads x_0 and the statistics
#pragma once

#include "core/layer.h"
#include "layers/batch_norm.h"

namespace vdnn {

class BnStatsLayer : public Layer {
 public:
  BnStatsLayer(std::string name, const BatchNormLayer& bn)
      : Layer(std::move(name), "bn_stats", LayerKind::kNorm), bn_(bn) {}
  const BatchNormLayer& batch_norm() const { return bn_; }
  Shape infer_shape(const std::vector<Shape>& in) const override { return Shape{2 * in.at(0).channels()}; }
  bool backward_reads_input() const override { return true; }
  bool backward_reads_output() const override { return true; }  // mean_s
  double forward_flops(const std::vector<Shape>& in, const Shape&) const override {
    return 3.0 * static_cast<double>(in.at(0).elements());
  }

 private:
  const BatchNormLayer& bn_;
};

class BnCombineLayer : public Layer {
 public:
  BnCombineLayer(std::string name, int count);
  int count() const { return count_; }
  int min_inputs() const override { return count_; }
  int max_inputs() const override { return count_; }
  Shape infer_shape(const std::vector<Shape>& in) const override;
  bool backward_reads_input() const override { return true; }   // mean_s
  bool backward_reads_output() const override { return true; }  // mean
  double forward_flops(const std::vector<Shape>&, const Shape&) const override { return 0; }

 private:
  int count_;
};

class BnApplyLayer : public Layer {
 public:
  // `updates_running`: this node folds S into the running averages (one node per batch norm).
  BnApplyLayer(std::string name, const BatchNormLayer& bn, int count, bool updates_running);
  const BatchNormLayer& batch_norm() const { return bn_; }
  int count() const { return count_; }
  bool updates_running() const { return updates_running_; }
  int min_inputs() const override { return 2; }
  int max_inputs() const override { return 2; }
  Shape infer_shape(const std::vector<Shape>& in) const override;
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override { return bn_.params({in.at(0)}); }
  bool backward_reads_input() const override { return true; }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return bn_.forward_flops({in.at(0)}, out);
  }

 private:
  const BatchNormLayer& bn_;
  int count_;
  bool updates_running_;
};

}  // namespace vdnn
