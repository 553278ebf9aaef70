#include "plan/roofline.h"

#include <algorithm>
#include <numeric>

#include "layers/conv.h"
#include "plan/batch_efficiency.h"
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
  const double compute = w.flops / (d.peak_fp32_flops * efficiency);  // roofline_costs sets the precision's peak
  const double memory = w.bytes / (d.memory_bytes_per_second * d.efficiency.memory);
  return std::max(compute, memory) + d.kernel_launch_seconds;
}

// Forward and backward work of node `i` with no algorithm choice (workspace excluded).
struct NodeWork {
  Work forward, backward;
};

NodeWork node_work(const Graph& g, int i, int64_t graph_batch, const std::vector<size_t>& value_bytes,
                   const NodeFacts& facts) {
  const Node& node = g.nodes()[i];
  const Layer& layer = *node.layer;
  const int64_t batch = node.batch(graph_batch);  // a slice of a layer: its share of the batch
  const std::vector<Shape> in = input_shapes(g, node);
  const Shape& out = g.value(node.output).shape;
  double inputs = 0, input_grads = 0, trainable_params = 0;
  for (ValueId v : node.inputs) {
    inputs += static_cast<double>(value_bytes[v]);
    if (g.needs_gradient(v)) input_grads += static_cast<double>(value_bytes[v]);  // not the data's
  }
  if (layer.type() == "batch_slice") {  // reads and writes its slice of the value, not all of it
    inputs = static_cast<double>(value_bytes[node.output]);
    input_grads = g.needs_gradient(node.inputs[0]) ? inputs : 0;
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
                     (layer.backward_reads_input() ? inputs : 0) + (layer.backward_reads_output() ? output : 0);
  return w;
}

// One slice of `k` of a node's work: arithmetic and activations divided, the weights (and their
// gradient, in backward) read whole by each slice.
NodeWork slice_of(const NodeWork& w, int k, double forward_weight_bytes, double backward_weight_bytes) {
  auto part = [k](const Work& x, double weights) { return Work{x.flops / k, (x.bytes - weights) / k + weights}; };
  return {part(w.forward, forward_weight_bytes), part(w.backward, backward_weight_bytes)};
}

std::vector<AlgoCost> conv_costs(const Graph& g, int i, int64_t batch, const NodeWork& base, const NodeFacts& facts,
                                 const DeviceProfile& d) {
  const Node& node = g.nodes()[i];
  const auto& conv = static_cast<const ConvLayer&>(node.layer->original());
  batch = node.batch(batch);
  const Shape &in = g.value(node.inputs[0]).shape, &out_shape = g.value(node.output).shape;
  const double backward_per_forward = base.backward.flops / base.forward.flops;
  // Algorithm `a` over `work`, `slices` times, at the efficiency of one slice's batch.
  auto cost = [&](const ConvAlgoEstimate& a, const NodeWork& work, int slices) {
    const double workspace_traffic = 2.0 * static_cast<double>(a.workspace_bytes);  // written, read
    const Work forward{a.flops, work.forward.bytes + workspace_traffic};
    const Work backward{a.flops * backward_per_forward, work.backward.bytes + workspace_traffic};
    const int64_t slice_batch = batch / slices;
    const double efficiency = efficiency_at(d.batch_efficiency, d.efficiency.conv.at(a.name),
                                            a.gemm_outputs / static_cast<double>(slice_batch), slice_batch);
    AlgoCost c{a.name, slices * roofline_seconds(forward, efficiency, d),
               slices * roofline_seconds(backward, efficiency, d), a.workspace_bytes};
    c.sub_batches = slices;
    return c;
  };
  std::vector<AlgoCost> out;
  const double weights = static_cast<double>(sum(facts.param_bytes));
  for (const ConvAlgoEstimate& a : conv_algorithms_with_sub_batches(ConvProblem::of(conv, in, out_shape, batch)))
    if (d.offers(a.name))
      out.push_back(
          cost(a, a.sub_batches > 1 ? slice_of(base, a.sub_batches, weights, 2 * weights) : base, a.sub_batches));
  return out;
}

// The efficiency of a layer other than a convolution: a fully connected layer's GEMM at its batch
// (plan/batch_efficiency.h), every other layer's arithmetic at efficiency.other.
double layer_efficiency(const Graph& g, int i, int64_t graph_batch, const DeviceProfile& d) {
  const Node& node = g.nodes()[i];
  if (node.layer->kind() != LayerKind::kFc) return d.efficiency.other;
  const double outputs_per_sample = static_cast<double>(g.value(node.output).shape.elements());
  return efficiency_at(d.batch_efficiency, d.efficiency.fc, outputs_per_sample, node.batch(graph_batch));
}

}  // namespace

NetworkCosts roofline_costs(const Graph& graph, int64_t batch, const std::vector<size_t>& value_bytes,
                            const std::vector<NodeFacts>& facts, const DeviceProfile& profile, const LinkProfile& link,
                            Precision precision) {
  if (batch < 1) VDNN_THROW("roofline: batch must be >= 1, got " << batch);
  // bf16: every kernel's arithmetic at the tensor cores' bf16 peak (the value bytes are bf16 already).
  DeviceProfile device = profile;
  if (precision == Precision::kBf16) {
    if (profile.peak_bf16_flops <= 0) VDNN_THROW("roofline: device profile '" << profile.name << "' has no bf16 peak");
    device.peak_fp32_flops = profile.peak_bf16_flops;
  }
  VDNN_CHECK(value_bytes.size() == graph.values().size() && facts.size() == graph.nodes().size(),
             "roofline: sizes for " << value_bytes.size() << " values and " << facts.size() << " nodes, the graph has "
                                    << graph.values().size() << " and " << graph.nodes().size());
  NetworkCosts costs;
  costs.source = "device profile " + device.name + " + link " + link.name;
  costs.model = graph.name();
  costs.batch = batch;
  costs.precision = precision;
  costs.link_bytes_per_second = link.bytes_per_second;
  costs.link_latency_seconds = link.latency_seconds;
  costs.memory_bytes_per_second = device.memory_bytes_per_second;
  costs.host_memory_bytes_per_second = device.host_memory_bytes_per_second;
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    const Layer& layer = *graph.nodes()[i].layer;
    const NodeWork w = node_work(graph, i, batch, value_bytes, facts[i]);
    NodeCost n{layer.name(), layer.type(), {}};
    if (layer.kind() == LayerKind::kConv) {
      n.algos = conv_costs(graph, i, batch, w, facts[i], device);
    } else {
      const double efficiency = layer_efficiency(graph, i, batch, device);
      n.algos.push_back({"-", roofline_seconds(w.forward, efficiency, device),
                         roofline_seconds(w.backward, efficiency, device), facts[i].scratch_bytes});
    }
    costs.nodes.push_back(std::move(n));
  }
  return costs;
}

}  // namespace vdnn
