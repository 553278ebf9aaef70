#include "stress/made_up_costs.h"

#include "vdnn/rng.h"

namespace vdnn::stress {

NetworkCosts made_up_costs(const Graph& graph, const std::vector<NodeFacts>& facts, uint64_t seed, uint64_t stream,
                           ConvAlgo conv_algo) {
  Rng rng(seed, /*stream=*/0xC0570000 + stream);
  NetworkCosts c;
  c.source = "made up for the stress test";
  c.model = graph.name();
  switch (rng.below(4)) {
    case 0:  // copies are free
      break;
    case 1:
      c.link_bytes_per_second = 2e9 + 18e9 * rng.uniform();
      c.link_latency_seconds = 1e-6 * rng.uniform();
      break;
    default:  // slow enough that the compute hides few copies: recomputing is then cheaper
      c.link_bytes_per_second = 5e6 + 45e6 * rng.uniform();
      c.link_latency_seconds = 20e-6 + 30e-6 * rng.uniform();
  }
  c.memory_bytes_per_second = 50e9;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const std::string type = graph.nodes()[i].layer->type();
    const bool heavy = type == "conv" || type == "fc";
    // conv_algos_of (backends/cpu/profiler.h) maps "gemm" to kAuto, what the Net runs otherwise.
    const std::string algo = type != "conv" ? "-" : conv_algo == ConvAlgo::kDirect ? "direct" : "gemm";
    const double bytes_per_second = heavy ? 0.05e9 + 0.95e9 * rng.uniform() : 5e9 + 45e9 * rng.uniform();
    AlgoCost a{algo};
    a.forward_seconds = (heavy ? 5e-6 : 0.2e-6) + static_cast<double>(facts[i].out_bytes) / bytes_per_second;
    a.backward_seconds = a.forward_seconds * (1.5 + 1.5 * rng.uniform());
    a.workspace_bytes = facts[i].scratch_bytes;
    c.nodes.push_back({graph.nodes()[i].layer->name(), type, {a}});
  }
  return c;
}

}  // namespace vdnn::stress
