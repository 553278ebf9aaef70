// plan/forward_order.h — an order of the forward pass that lowers the peak of live activations.
//
// Model: in a forward-only pass (plan/planned_inference.h) every activation is freed after its last
// reader, so on a DAG the order of independent branches decides how much is live at once (an
// Inception module's four branches all read its input; a branch run to its end frees its reduced
// maps before the next begins). The list scheduler here walks the graph keeping the ready nodes and
// runs next the one that adds the fewest bytes net (its output less the inputs it is the last
// reader of), ties by the smaller rise during the node, then the model's order: a greedy cousin of
// Serenity's memory-aware scheduling of irregularly wired networks (Ahn et al., MLSys 2020), which
// searches the orders by dynamic programming for the same goal. Sizes
// are fp32 NCHW (batch x elements x 4; an in-place ReLU shares its input's buffer), the kernels'
// layouts are not needed. The model's own order is kept unless the greedy one is strictly lower.
//
//   ForwardOrder o = forward_order(graph, 32);
//   if (o.peak_bytes < o.model_peak_bytes) graph = std::move(graph).reordered(o.order);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/graph.h"

namespace vdnn {

struct ForwardOrder {
  std::vector<int> order;       // node indices, the loss last
  size_t peak_bytes = 0;        // live activations at the worst node of `order`
  size_t model_peak_bytes = 0;  // the same in the model's own order
  int moved = 0;                // nodes whose position differs from the model's order
};

ForwardOrder forward_order(const Graph& graph, int64_t batch);

// The peak of live activations of a forward pass in `order` (fp32 sizes, as above).
size_t forward_peak(const Graph& graph, int64_t batch, const std::vector<int>& order);

}  // namespace vdnn
