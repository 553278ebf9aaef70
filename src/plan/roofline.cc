#include "plan/roofline.h"

#include <algorithm>
#include <numeric>

#include "layers/conv.h"
#include "plan/conv_algorithms.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

size_t sum(const std::vector<size_t>& xs) { return std::accumulate(xs.begin(), xs.end(), size_t{0}); }

std::vector<Shape> input_shapes(const Graph& g, const Node& node) {
  std::vector<Shape> in;
  for (ValueId v : node.inputs) in.push_back(g.value(v).shape);
  return in;
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

NetworkCosts roofline_costs(const Graph& graph, int64_t batch, const std::vector<size_t>& value_bytes,
                            const std::vector<NodeFacts>& facts, const DeviceProfile& device,
                            const LinkProfile& link) {
  if (batch < 1) VDNN_THROW("roofline: batch must be >= 1, got " << batch);
  VDNN_CHECK(value_bytes.size() == graph.values().size() && facts.size() == graph.nodes().size(),
             "roofline: sizes for " << value_bytes.size() << " values and " << facts.size()
                                    << " nodes, the graph has " << graph.values().size() << " and "
                                    << graph.nodes().size());
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
                         roofline_seconds(w.backward, efficiency, device), facts[i].scratch_bytes});
    }
    costs.nodes.push_back(std::move(n));
  }
  return costs;
}

}  // namespace vdnn
