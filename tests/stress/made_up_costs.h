// tests/stress/made_up_costs.h — a deterministic cost model for planning `auto` on a random network.
//
// Model: `auto` (plan/auto_policy.h) chooses from costs; measured ones differ from run to run, so
// a stress case planned on them could not be replayed. These are drawn from the network's seed
// instead: every node has one algorithm — the one the Net runs (`conv_algo`, so auto's choice
// needs no other reference run), with the workspace its kernel declares — whose forward time is a
// few microseconds plus its output bytes at a drawn rate (convolutions and FCs 2–40x slower than
// the rest, so recomputing them is dear and recomputing a ReLU or a pooling cheap), backward
// 1.5–3x that. The link is free (1 in 4: offloading costs nothing), fast (2–20 GB/s) or slow
// (5–50 MB/s, 20–50 us per copy: the compute hides few copies, recomputing is often cheaper).
// The numbers need not be this machine's: they only steer which tensors `auto` keeps, offloads and
// recomputes, and the weights must not depend on that. `stream` draws another set (one per case).
//
//   NetworkCosts c = made_up_costs(graph, backend->facts(), seed, /*stream=*/k, ConvAlgo::kDirect);
//   Planner planner(graph, backend->value_bytes(), backend->facts(), c, SyncMode::kEvent);
#pragma once

#include <cstdint>
#include <vector>

#include "core/conv_algo.h"
#include "core/graph.h"
#include "plan/network_costs.h"
#include "plan/program.h"

namespace vdnn::stress {

NetworkCosts made_up_costs(const Graph& graph, const std::vector<NodeFacts>& facts, uint64_t seed, uint64_t stream,
                           ConvAlgo conv_algo);

}  // namespace vdnn::stress
