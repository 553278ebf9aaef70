// core/graph.h — the network as a DAG of layers and named values, with per-sample shapes.
//
// Model: value 0 is the input ("data"); every layer produces exactly one value named after it.
// Layers are added in an order where inputs exist before use, so insertion order is topological.
// A layer's input defaults to the previous layer's output. The last layer is the loss.
// A token input (InputType::kTokens) has per-sample shape [T]: T token ids, int32 on the device
// (floats holding exact ids on the host); only layers that take tokens (embedding) may read it.
//
//   Graph g("tiny", Shape{1, 28, 28}, 10);
//   g.add(std::make_unique<ReluLayer>("r"), {});          // input: "data"
//   g.add(std::make_unique<FcLayer>("fc", FcLayer::Params{10}), {"r"});
//   g.add(std::make_unique<SoftmaxCrossEntropyLayer>("loss"), {});
//   g.finalize();   // checks: one loss, last; every value used
//   Graph lm("lm", Shape{256}, 50257, InputType::kTokens);   // labels_per_sample(): 256 with a
//                                                            // token_cross_entropy over [256, 50257]
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/layer.h"

namespace vdnn {

using ValueId = int;

// What the graph input holds: values (floats), or token ids (int32 on the device).
enum class InputType { kFloat, kTokens };

struct Value {
  std::string name;
  Shape shape;                 // per sample
  int producer = -1;           // node index; -1 for the graph input
  std::vector<int> consumers;  // node indices, in forward order
};

struct Node {
  std::unique_ptr<Layer> layer;
  std::vector<ValueId> inputs;
  ValueId output = -1;
  std::vector<ParamSpec> params;
  // A node of a graph whose layers run in slices of the batch (rewrites/slice_runs.h): it computes
  // batch / slices samples (its output holds that many), and `param_owner` >= 0 names the earlier
  // node whose parameters it uses (another slice of the same layer; its own `params` repeat them).
  int slices = 1;
  int param_owner = -1;
  // The node of the graph this one was made from (a sliced graph's copy of a layer); -1: none.
  // Kernels seed their randomness (dropout masks) by it, so slicing leaves the masks as they were.
  int origin = -1;
  int seed_index(int own) const { return origin >= 0 ? origin : own; }
  int64_t batch(int64_t graph_batch) const { return graph_batch / slices; }  // the samples it computes
};

class Graph {
 public:
  Graph(std::string name, Shape input_shape, int classes, InputType input_type = InputType::kFloat);
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // Adds a layer; empty `inputs` means the previous layer's output (or "data" for the first).
  // Throws vdnn::Error naming the layer on unknown inputs, duplicate names or shape mismatch.
  int add(std::unique_ptr<Layer> layer, const std::vector<std::string>& inputs);
  // The same for a layer that runs on batch / `slices` samples, sharing the parameters of node
  // `param_owner` (-1: its own), made from node `origin` of another graph (Node::origin); throws
  // vdnn::Error when the owner is not an earlier node with the same parameters.
  int add_sliced(std::unique_ptr<Layer> layer, const std::vector<std::string>& inputs, int slices, int param_owner,
                 int origin = -1);
  // Checks the whole graph: exactly one loss, it is last, its logits match `classes` (K logits, or
  // [T, classes] per token), no dead ends.
  void finalize();

  const std::string& name() const { return name_; }
  const Shape& input_shape() const { return values_[0].shape; }
  int classes() const { return classes_; }
  InputType input_type() const { return input_type_; }
  bool token_input() const { return input_type_ == InputType::kTokens; }
  // Labels per sample the loss reads: T when its logits are [T, classes] (one per token), else 1.
  int64_t labels_per_sample() const;
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Value& value(ValueId id) const { return values_.at(id); }
  ValueId find_value(const std::string& name) const;  // -1 if absent

  // A layer that can (ReLU; an add, over its first input) writes its output over its first input
  // when nothing else reads it: that input has no other consumer and its producer's backward does
  // not read its own output. The two values are then one storage, and so are their gradients.
  bool runs_in_place(int node) const;
  // Whether `node` runs in place over value `v` (v is its first input): a walk along one storage.
  bool runs_in_place_over(int node, ValueId v) const;
  // Whether backward computes the gradient of value v: not for the input, nor for slices of it
  // (layers/batch_slice.h), so a first convolution skips its data gradient.
  bool needs_gradient(ValueId v) const;
  // Whether some layer runs in slices of the batch (rewrites/slice_runs.h made this graph). A layer
  // that only shares another's parameters (a tied language-model head) does not make it sliced.
  bool is_sliced() const;

  // Consumes the graph and hands back its layers in node order, so a changed graph can be built
  // from them (rewrites/inference_rewrites.h drops and replaces some): the graph itself is append-only.
  std::vector<std::unique_ptr<Layer>> release_layers() &&;

  // The same layers in another topological order (`order`: every node index once, each after the
  // producers of its inputs; the loss stays last), for an order that needs less memory
  // (plan/forward_order.h). Consumes this graph; throws vdnn::Error naming a misplaced layer.
  Graph reordered(const std::vector<int>& order) &&;

  int64_t parameter_count(bool trainable_only = true) const;  // shared parameters counted once
  double forward_flops_per_sample() const;
  // fp32 bytes of every value with a buffer of its own (in-place ReLU outputs share their input's).
  int64_t feature_map_bytes_per_sample() const;

 private:
  std::string name_;
  int classes_;
  InputType input_type_ = InputType::kFloat;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, ValueId> value_ids_;  // by name: add() is O(1), not a scan of every value
};

}  // namespace vdnn
