// layers/join.h — the layers that make a graph a DAG: concat (along channels) and add (residual).
// Concat takes CxHxW images of equal H and W (output: the channels summed) or vectors K, as fc
// layers produce (output: the lengths summed); not a mix of the two.
//
//   {"name": "mix", "type": "concat", "inputs": ["b1", "b2", "b3"]}
//   {"name": "res", "type": "add",    "inputs": ["conv2b", "shortcut"]}
// Neither backward reads any value: concat slices the gradient, add passes it to every input.
#pragma once

#include "core/layer.h"
#include "core/layer_config.h"

namespace vdnn {

class ConcatLayer : public Layer {
 public:
  explicit ConcatLayer(std::string name) : Layer(std::move(name), "concat", LayerKind::kJoin) {}
  int min_inputs() const override { return 2; }
  int max_inputs() const override { return 64; }
  Shape infer_shape(const std::vector<Shape>& in) const override;
  bool backward_reads_input() const override { return false; }
};

class AddLayer : public Layer {
 public:
  explicit AddLayer(std::string name) : Layer(std::move(name), "add", LayerKind::kJoin) {}
  int min_inputs() const override { return 2; }
  int max_inputs() const override { return 64; }
  Shape infer_shape(const std::vector<Shape>& in) const override;
  bool backward_reads_input() const override { return false; }
  // y is written over x0 (ResNet's y = bn3(...) + shortcut): its backward's dx0 is dy itself.
  bool can_run_in_place() const override { return true; }
};

}  // namespace vdnn
