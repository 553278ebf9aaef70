#include "core/graph.h"

#include <algorithm>

#include "vdnn/error.h"

namespace vdnn {

Graph::Graph(std::string name, Shape input_shape, int classes, InputType input_type)
    : name_(std::move(name)), classes_(classes), input_type_(input_type) {
  if (input_type == InputType::kTokens && input_shape.rank() != 1)
    VDNN_THROW("model '" << name_ << "': a token input must be [T] (T token ids per sample), got "
                         << input_shape.to_string());
  if (input_shape.rank() != 3 && input_shape.rank() != 1)
    VDNN_THROW("model '" << name_ << "': input must be [C, H, W] or [K], got " << input_shape.to_string());
  for (int64_t d : input_shape.dims)
    if (d < 1) VDNN_THROW("model '" << name_ << "': input dims must be >= 1, got " << input_shape.to_string());
  if (elements_up_to(input_shape.dims) < 0)
    VDNN_THROW("model '" << name_ << "': input " << input_shape.to_string()
                         << " has more than 2^36 elements per sample");
  if (classes < 2)
    VDNN_THROW("model '" << name_ << "': classes must be >= 2 (with one class the loss is 0 and the accuracy 1 "
                         << "for any weights), got " << classes);
  values_.push_back(Value{"data", std::move(input_shape), -1, {}});
  value_ids_["data"] = 0;
}

ValueId Graph::find_value(const std::string& name) const {
  const auto it = value_ids_.find(name);
  return it == value_ids_.end() ? -1 : it->second;
}

int Graph::add(std::unique_ptr<Layer> layer, const std::vector<std::string>& inputs) {
  const std::string& name = layer->name();
  if (name.empty()) VDNN_THROW("a layer of type '" << layer->type() << "' has an empty name");
  if (find_value(name) >= 0) layer->fail("the name is already used by an earlier layer or input");
  if (!nodes_.empty() && nodes_.back().layer->kind() == LayerKind::kLoss)
    layer->fail("comes after the loss layer '" + nodes_.back().layer->name() + "'; the loss must be last");

  Node node;
  if (inputs.empty()) {
    node.inputs = {static_cast<ValueId>(values_.size() - 1)};
  } else {
    for (const auto& in : inputs) {
      ValueId id = find_value(in);
      if (id < 0) layer->fail("input '" + in + "' is not defined by an earlier layer (or \"data\")");
      node.inputs.push_back(id);
    }
  }
  for (ValueId id : node.inputs) {
    if (token_input() && id == 0 && !layer->takes_tokens())
      layer->fail("reads the token input \"data\" (int32 token ids); only an embedding layer may");
    if (layer->takes_tokens() && (id != 0 || !token_input()))
      layer->fail(VDNN_MSG("reads '" << values_[id].name
                                     << "', but it takes token ids: its input must be the model's token input "
                                        "(\"input_type\": \"tokens\")"));
  }
  const int n = static_cast<int>(node.inputs.size());
  if (n < layer->min_inputs() || n > layer->max_inputs())
    layer->fail(VDNN_MSG("takes " << layer->min_inputs() << ".." << layer->max_inputs() << " inputs, got " << n));
  std::vector<Shape> in_shapes;
  for (ValueId id : node.inputs) in_shapes.push_back(values_[id].shape);
  Shape out = layer->infer_shape(in_shapes);
  if (elements_up_to(out.dims) < 0)
    layer->fail(VDNN_MSG("its output " << out.to_string() << " has more than 2^36 elements per sample"));
  node.params = layer->params(in_shapes);
  for (const ParamSpec& p : node.params)
    if (elements_up_to(p.dims) < 0)
      layer->fail(VDNN_MSG("its " << p.name << " " << Shape(p.dims).to_string() << " has more than 2^36 elements"));

  const int index = static_cast<int>(nodes_.size());
  for (ValueId id : node.inputs) values_[id].consumers.push_back(index);
  node.output = static_cast<ValueId>(values_.size());
  value_ids_[name] = node.output;
  values_.push_back(Value{name, out, index, {}});
  node.layer = std::move(layer);
  nodes_.push_back(std::move(node));
  return index;
}

int Graph::add_sliced(std::unique_ptr<Layer> layer, const std::vector<std::string>& inputs, int slices, int param_owner,
                      int origin) {
  const std::string name = layer->name();
  if (slices < 1) VDNN_THROW("layer '" << name << "': slices must be >= 1, got " << slices);
  if (param_owner >= static_cast<int>(nodes_.size()))
    VDNN_THROW("layer '" << name << "': its parameters' owner must be an earlier node, got node " << param_owner);
  const int index = add(std::move(layer), inputs);
  Node& node = nodes_[index];
  node.slices = slices;
  node.param_owner = param_owner;
  node.origin = origin;
  if (param_owner < 0) return index;
  const std::vector<ParamSpec>& owned = nodes_[param_owner].params;
  bool same = owned.size() == node.params.size();
  for (size_t k = 0; same && k < owned.size(); ++k)
    same = owned[k].dims == node.params[k].dims && owned[k].trainable == node.params[k].trainable;
  if (!same || nodes_[param_owner].param_owner >= 0)
    node.layer->fail("shares the parameters of '" + nodes_[param_owner].layer->name() +
                     "', which has other parameters or shares another layer's");
  return index;
}

std::vector<std::unique_ptr<Layer>> Graph::release_layers() && {
  std::vector<std::unique_ptr<Layer>> layers;
  for (Node& node : nodes_) layers.push_back(std::move(node.layer));
  nodes_.clear();
  values_.resize(1);
  values_[0].consumers.clear();
  value_ids_ = {{"data", 0}};
  return layers;
}

void Graph::finalize() {
  if (nodes_.empty()) VDNN_THROW("model '" << name_ << "' has no layers");
  const Node& last = nodes_.back();
  if (last.layer->kind() != LayerKind::kLoss)
    VDNN_THROW("model '" << name_ << "': the last layer '" << last.layer->name()
                         << "' must be a loss (softmax_cross_entropy, or token_cross_entropy)");
  const Shape& logits = values_[last.inputs[0]].shape;
  const int64_t per_label = logits.is_sequence() ? logits.dims[1] : logits.elements();
  if (per_label != classes_)
    last.layer->fail(VDNN_MSG("receives " << per_label << " logits" << (logits.is_sequence() ? " per token" : "")
                                          << " but the model has " << classes_ << " classes"));
  for (const Value& v : values_)
    if (v.consumers.empty() && v.producer != static_cast<int>(nodes_.size()) - 1)
      VDNN_THROW("model '" << name_ << "': the output of '" << v.name
                           << "' is never used (every value must lead to the loss)");
}

Graph Graph::reordered(const std::vector<int>& order) && {
  for (const Node& n : nodes_)  // node numbers name the owners of shared parameters
    if (n.slices > 1 || n.param_owner >= 0)
      VDNN_THROW("model '" << name_ << "': a graph with slice runs or tied parameters keeps its order");
  if (order.size() != nodes_.size())
    VDNN_THROW("model '" << name_ << "': a new order must list its " << nodes_.size() << " layers, got "
                         << order.size());
  Graph out(name_, values_[0].shape, classes_, input_type_);
  std::vector<bool> placed(nodes_.size(), false);
  for (int n : order) {
    if (n < 0 || n >= static_cast<int>(nodes_.size()) || placed[n])
      VDNN_THROW("model '" << name_ << "': a new order lists node " << n << " twice or out of 0.."
                           << nodes_.size() - 1);
    placed[n] = true;
    std::vector<std::string> inputs;
    for (ValueId in : nodes_[n].inputs) inputs.push_back(values_[in].name);  // an unplaced producer: add() names it
    out.add(std::move(nodes_[n].layer), inputs);
  }
  out.finalize();
  return out;
}

int64_t Graph::labels_per_sample() const {
  if (nodes_.empty() || nodes_.back().layer->kind() != LayerKind::kLoss) return 1;
  const Shape& logits = values_[nodes_.back().inputs[0]].shape;
  return logits.is_sequence() ? logits.dims[0] : 1;
}

int64_t Graph::parameter_count(bool trainable_only) const {
  int64_t n = 0;
  for (const Node& node : nodes_)
    for (const ParamSpec& p : node.params)
      if (node.param_owner < 0 && (p.trainable || !trainable_only)) n += p.elements();
  return n;
}

double Graph::forward_flops_per_sample() const {
  double f = 0;
  for (const Node& node : nodes_) {
    std::vector<Shape> in;
    for (ValueId id : node.inputs) in.push_back(values_[id].shape);
    f += node.layer->forward_flops(in, values_[node.output].shape);
  }
  return f;
}

bool Graph::runs_in_place(int node) const {
  const Node& n = nodes_.at(node);
  if (!n.layer->can_run_in_place()) return false;
  if (std::count(n.inputs.begin(), n.inputs.end(), n.inputs[0]) != 1) return false;  // add(x, x)
  const Value& in = values_[n.inputs[0]];
  if (in.producer < 0 || in.consumers.size() != 1) return false;
  return !nodes_[in.producer].layer->backward_reads_output();
}

bool Graph::runs_in_place_over(int node, ValueId v) const {
  return nodes_.at(node).inputs[0] == v && runs_in_place(node);
}

int64_t Graph::feature_map_bytes_per_sample() const {
  int64_t bytes = 0;
  for (const Value& v : values_)
    if (v.producer < 0 || !runs_in_place(v.producer)) bytes += v.shape.elements() * 4;
  return bytes;
}

bool Graph::is_sliced() const {
  for (const Node& n : nodes_)
    if (n.slices > 1) return true;
  return false;
}

bool Graph::needs_gradient(ValueId v) const {
  while (v != 0) {
    const Node& producer = nodes_.at(values_.at(v).producer);
    if (producer.layer->type() != "batch_slice") return true;
    v = producer.inputs[0];
  }
  return false;
}

}  // namespace vdnn
