#include "plan/roofline.h"

#include <algorithm>
#include <numeric>

#include "layers/conv.h"
#include "layers/pool.h"
#include "plan/conv_algorithms.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr size_t kFloatBytes = 4;

size_t sum(const std::vector<size_t>& xs) { return std::accumulate(xs.begin(), xs.end(), size_t{0}); }

std::vector<Shape> input_shapes(const Graph& g, const Node& node) {
  std::vector<Shape> in;
  for (ValueId v : node.inputs) in.push_back(g.value(v).shape);
  return in;
}

// What a cuDNN-style kernel keeps from forward for backward, beyond the values the layer declares
// (Layer::backward_reads_input/output). The sizes are this model's assumptions.
std::vector<size_t> saved_state(const Layer& layer, const Shape& in, const Shape& out, int64_t batch) {
  const size_t n = static_cast<size_t>(batch);
  const std::string& type = layer.type();
  if (type == "batch_norm")  // cudnnBatchNormalizationForwardTraining's saved mean and 1/std
    return {kFloatBytes * static_cast<size_t>(out.channels()),
            kFloatBytes * static_cast<size_t>(out.channels())};
  if (type == "dropout")  // one byte of mask per element
    return {n * static_cast<size_t>(out.elements())};
  if (type == "softmax_cross_entropy")  // the probabilities
    return {kFloatBytes * n * static_cast<size_t>(in.elements())};
  if (type == "lrn")  // cuDNN's LRN backward reads y, which the graph does not keep otherwise
    return {kFloatBytes * n * static_cast<size_t>(out.elements())};
  if (type == "max_pool") {  // the graph keeps neither x nor y for backward: an argmax per output
    const PoolLayer::Window w = static_cast<const PoolLayer&>(layer).window(in);
    const size_t index_bytes = w.kh * w.kw <= 256 ? 1 : 4;
    return {index_bytes * n * static_cast<size_t>(out.elements())};
  }
  return {};
}

// Work of one kernel: arithmetic and memory traffic.
struct Work {
  double flops = 0, bytes = 0;
};

double roofline_seconds(const Work& w, double efficiency, const DeviceProfile& d) {
  const double compute = w.flops / (d.peak_fp32_flops * efficiency);
  const double memory = w.bytes / (d.memory_bytes_per_second * d.efficiency.memory);
  return std::max(compute, memory) + d.kernel_launch_seconds;
}

// Forward and backward work of node `i` with no algorithm choice (workspace excluded).
struct NodeWork {
  Work forward, backward;
};

NodeWork node_work(const Graph& g, int i, int64_t batch, const std::vector<size_t>& value_bytes,
                   const NodeFacts& facts) {
  const Node& node = g.nodes()[i];
  const Layer& layer = *node.layer;
  const std::vector<Shape> in = input_shapes(g, node);
  const Shape& out = g.value(node.output).shape;
  double inputs = 0, input_grads = 0, trainable_params = 0;
  for (ValueId v : node.inputs) {
    inputs += static_cast<double>(value_bytes[v]);
    if (v != 0) input_grads += static_cast<double>(value_bytes[v]);  // the data needs no gradient
  }
  for (size_t k = 0; k < node.params.size(); ++k)
    if (node.params[k].trainable) trainable_params += static_cast<double>(facts.param_bytes[k]);
  const double output = static_cast<double>(value_bytes[node.output]);
  const double params = static_cast<double>(sum(facts.param_bytes));
  const double saved = static_cast<double>(sum(facts.saved_bytes));

  NodeWork w;
  w.forward.flops = layer.forward_flops(in, out) * static_cast<double>(batch);
  w.forward.bytes = inputs + output + params + saved;
  w.backward.flops = layer.backward_flops(in, out) * static_cast<double>(batch);
  w.backward.bytes = output + input_grads + saved + params + trainable_params +
                     (layer.backward_reads_input() ? inputs : 0) +
                     (layer.backward_reads_output() ? output : 0);
  return w;
}

std::vector<AlgoCost> conv_costs(const Graph& g, int i, int64_t batch, const NodeWork& base,
                                 const DeviceProfile& d) {
  const Node& node = g.nodes()[i];
  const auto& conv = static_cast<const ConvLayer&>(*node.layer);
  const ConvProblem p =
      ConvProblem::of(conv, g.value(node.inputs[0]).shape, g.value(node.output).shape, batch);
  const double backward_per_forward = base.backward.flops / base.forward.flops;
  std::vector<AlgoCost> out;
  for (const ConvAlgoEstimate& a : conv_algorithms(p)) {
    const double workspace_traffic = 2.0 * static_cast<double>(a.workspace_bytes);  // written, read
    const Work forward{a.flops, base.forward.bytes + workspace_traffic};
    const Work backward{a.flops * backward_per_forward, base.backward.bytes + workspace_traffic};
    const double efficiency = d.efficiency.conv.at(a.name);
    out.push_back({a.name, roofline_seconds(forward, efficiency, d),
                   roofline_seconds(backward, efficiency, d), a.workspace_bytes});
  }
  return out;
}

}  // namespace

std::vector<size_t> plain_value_bytes(const Graph& graph, int64_t batch) {
  std::vector<size_t> bytes;
  for (const Value& v : graph.values()) {
    const bool is_loss = v.producer >= 0 && graph.nodes()[v.producer].layer->kind() == LayerKind::kLoss;
    bytes.push_back(is_loss ? kFloatBytes : kFloatBytes * static_cast<size_t>(batch * v.shape.elements()));
  }
  return bytes;
}

std::vector<NodeFacts> plain_facts(const Graph& graph, int64_t batch) {
  const std::vector<size_t> value_bytes = plain_value_bytes(graph, batch);
  std::vector<NodeFacts> facts;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& node = graph.nodes()[i];
    NodeFacts f;
    f.out_bytes = value_bytes[node.output];
    f.saved_bytes = saved_state(*node.layer, graph.value(node.inputs[0]).shape,
                                graph.value(node.output).shape, batch);
    for (const ParamSpec& p : node.params)
      f.param_bytes.push_back(kFloatBytes * static_cast<size_t>(p.elements()));
    f.in_place = graph.runs_in_place(static_cast<int>(i));
    facts.push_back(std::move(f));
  }
  return facts;
}

NetworkCosts roofline_costs(const Graph& graph, int64_t batch, const DeviceProfile& device,
                            const LinkProfile& link) {
  if (batch < 1) VDNN_THROW("roofline: batch must be >= 1, got " << batch);
  const std::vector<size_t> value_bytes = plain_value_bytes(graph, batch);
  const std::vector<NodeFacts> facts = plain_facts(graph, batch);
  NetworkCosts costs;
  costs.source = "device profile " + device.name + " + link " + link.name;
  costs.model = graph.name();
  costs.batch = batch;
  costs.link_bytes_per_second = link.bytes_per_second;
  costs.link_latency_seconds = link.latency_seconds;
  costs.memory_bytes_per_second = device.memory_bytes_per_second;
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    const Layer& layer = *graph.nodes()[i].layer;
    const NodeWork w = node_work(graph, i, batch, value_bytes, facts[i]);
    NodeCost n{layer.name(), layer.type(), {}};
    if (layer.kind() == LayerKind::kConv) {
      n.algos = conv_costs(graph, i, batch, w, device);
    } else {
      const double efficiency =
          layer.kind() == LayerKind::kFc ? device.efficiency.fc : device.efficiency.other;
      n.algos.push_back({"-", roofline_seconds(w.forward, efficiency, device),
                         roofline_seconds(w.backward, efficiency, device), 0});
    }
    costs.nodes.push_back(std::move(n));
  }
  return costs;
}

}  // namespace vdnn
