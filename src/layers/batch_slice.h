// layers/batch_slice.h — the layers of a graph whose runs of layers compute in slices of the batch
// (rewrites/slice_runs.h; moDNN's idea: Chen et al., "moDNN: Memory Optimal DNN Training on GPUs",
// DATE 2018).
//
// Model: a slice of a layer is the same layer over batch / k samples, a node of its own
// (Node::slices = k) sharing the first slice's parameters (Node::param_owner), so each slice's
// input, output and gradient maps are values of their own that the planner keeps, offloads or
// recomputes one by one. BatchSlice takes slice `index` of a whole value (its samples
// [index * n/k, (index + 1) * n/k)); BatchGather puts k slices back into one value. Per sample
// their shapes are their input's. Neither backward reads a value: slicing and gathering a
// gradient is a copy.
//
//   auto copy = std::make_unique<SliceOfLayer>(*conv, "conv1_1/s2");   // conv1_1, third slice
//   auto in = std::make_unique<BatchSliceLayer>("data/s2", 2, 4);
//   auto out = std::make_unique<BatchGatherLayer>("pool1/gather", 4);
#pragma once

#include "core/layer.h"

namespace vdnn {

// Another slice of `original` under another name: the same kind, type, shapes, parameters and
// memory behaviour. original() is the layer itself, for the kernels (which read its parameters);
// `original` must outlive it.
class SliceOfLayer : public Layer {
 public:
  SliceOfLayer(const Layer& original, std::string name)
      : Layer(std::move(name), original.type(), original.kind()), original_(original) {}
  const Layer& original() const override { return original_; }
  int min_inputs() const override { return original_.min_inputs(); }
  int max_inputs() const override { return original_.max_inputs(); }
  Shape infer_shape(const std::vector<Shape>& in) const override { return original_.infer_shape(in); }
  std::vector<ParamSpec> params(const std::vector<Shape>& in) const override { return original_.params(in); }
  bool backward_reads_input() const override { return original_.backward_reads_input(); }
  bool backward_reads_output() const override { return original_.backward_reads_output(); }
  bool can_run_in_place() const override { return original_.can_run_in_place(); }
  double forward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return original_.forward_flops(in, out);
  }
  double backward_flops(const std::vector<Shape>& in, const Shape& out) const override {
    return original_.backward_flops(in, out);
  }

 private:
  const Layer& original_;
};

class BatchSliceLayer : public Layer {
 public:
  BatchSliceLayer(std::string name, int index, int count);
  int index() const { return index_; }
  int count() const { return count_; }
  Shape infer_shape(const std::vector<Shape>& in) const override { return in.at(0); }
  bool backward_reads_input() const override { return false; }
  double forward_flops(const std::vector<Shape>&, const Shape&) const override { return 0; }

 private:
  int index_, count_;
};

class BatchGatherLayer : public Layer {
 public:
  BatchGatherLayer(std::string name, int count);
  int count() const { return count_; }
  int min_inputs() const override { return count_; }
  int max_inputs() const override { return count_; }
  Shape infer_shape(const std::vector<Shape>& in) const override;
  bool backward_reads_input() const override { return false; }
  double forward_flops(const std::vector<Shape>&, const Shape&) const override { return 0; }

 private:
  int count_;
};

}  // namespace vdnn
