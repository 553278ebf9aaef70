#include "plan/planned_inference.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "plan/program_builder.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {

namespace {

// One placement whatever the capacity (memory_plan.h): it gives the offsets and the smallest budget.
struct Placed {
  Program program;
  MemoryPlan plan;
};

Placed place_values(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                    const std::vector<bool>& streamed, size_t budget) {
  ProgramOptions o{Policy::kNone, SyncMode::kEvent, /*training=*/false};
  o.inference = true;
  o.streamed_weights = streamed;
  Placed p{build_program(graph, value_bytes, facts, o), {}};
  p.plan = plan_memory(p.program, budget ? budget : std::numeric_limits<size_t>::max());
  return p;
}

size_t weight_bytes(const NodeFacts& f) {
  return std::accumulate(f.param_bytes.begin(), f.param_bytes.end(), size_t{0});
}

// The largest layers' weights streamed first, one more at a time, until the pass fits; every weight
// streamed when no prefix fits (look-ahead copies overlap, so it is not monotone).
Placed stream_largest_first(const Graph& graph, const std::vector<size_t>& value_bytes,
                            const std::vector<NodeFacts>& facts, size_t budget, std::vector<bool>& streamed) {
  const size_t n = graph.nodes().size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weight_bytes(facts[a]) > weight_bytes(facts[b]); });
  streamed.assign(n, false);
  Placed placed;
  for (size_t k = 0; k < n && !placed.plan.fits && weight_bytes(facts[order[k]]) > 0; ++k) {
    streamed[order[k]] = true;
    placed = place_values(graph, value_bytes, facts, streamed, budget);
  }
  if (placed.plan.fits) return placed;
  streamed.assign(n, true);
  return place_values(graph, value_bytes, facts, streamed, budget);
}

}  // namespace

PlannedInference plan_inference(const Graph& graph, const std::vector<size_t>& value_bytes,
                                const std::vector<NodeFacts>& facts, size_t budget, bool streaming) {
  PlannedInference p;
  Placed placed = place_values(graph, value_bytes, facts, {}, budget);
  p.smallest_budget = placed.plan.smallest_bytes;
  p.streaming = streaming;
  p.smallest_streamed_budget = p.smallest_budget;
  if (streaming) {  // placed even when the resident pass fits: its smallest budget is reported
    const std::vector<bool> all(graph.nodes().size(), true);
    Placed all_streamed = place_values(graph, value_bytes, facts, all, budget);
    p.smallest_streamed_budget = std::min(all_streamed.plan.smallest_bytes, p.smallest_budget);
    if (!placed.plan.fits && all_streamed.plan.fits) {
      placed = stream_largest_first(graph, value_bytes, facts, budget, p.streamed);
    } else if (!placed.plan.fits && all_streamed.plan.smallest_bytes < p.smallest_budget) {
      p.streamed = all;  // nothing fits: the refusal says what streaming all of them needs
      placed = std::move(all_streamed);
    }  // else streaming needs no less (activations set the peak): the refusal is the resident plan's
  }
  p.program = std::move(placed.program);
  p.plan = std::move(placed.plan);
  p.capacity = budget ? budget : p.smallest_budget;
  p.plan.capacity_bytes = p.capacity;
  p.fits = p.plan.fits;
  if (!p.fits) {  // the peaks by class as the smallest budget places it, for the refusal
    Program copy = p.program;
    p.plan.by_class = plan_memory(copy, p.smallest_streamed_budget).by_class;
  }
  return p;
}

InferencePeak inference_peak(const MemoryPlan& plan) {
  InferencePeak peak;
  peak.weights = plan.by_class.peak(MemoryClass::kWeights);
  peak.activations = plan.by_class.peak(MemoryClass::kFeatureMaps);
  peak.workspace = plan.by_class.peak(MemoryClass::kWorkspace);
  peak.total = plan.by_class.total_peak;
  peak.budget = plan.smallest_bytes;
  return peak;
}

std::string inference_refusal(const Graph& graph, int64_t batch, const PlannedInference& planned,
                              const OptionNames& names) {
  const InferencePeak peak = inference_peak(planned.plan);
  int widest = 0;  // the layer with the most weight bytes
  auto layer_weights = [&](int i) {
    size_t bytes = 0;
    for (int t : planned.program.nodes[i].params) bytes += planned.program.tensors[t].bytes;
    return bytes;
  };
  for (int i = 0; i < static_cast<int>(planned.program.nodes.size()); ++i)
    if (layer_weights(i) > layer_weights(widest)) widest = i;
  const size_t widest_bytes = planned.program.nodes.empty() ? 0 : layer_weights(widest);
  return VDNN_MSG(
      names("device_memory")
      << " " << describe_budget(planned.capacity) << " is too small to run model '" << graph.name()
      << "' forward at batch " << batch << ": it needs at least " << describe_budget(planned.smallest_streamed_budget)
      << " (weights " << format_bytes(peak.weights) << ", activations up to " << format_bytes(peak.activations)
      << ", workspace up to " << format_bytes(peak.workspace)
      << (planned.streamed.empty() ? ""
                                   : ", every weight streamed from host memory, two "
                                     "weighted layers' at a time")
      << (!planned.streaming ? std::string("; every weight on the device: streaming them from host memory is off")
          : widest_bytes > planned.capacity
              ? "; layer '" + planned.program.node_names[widest] + "' alone holds " + format_bytes(widest_bytes) +
                    " of weights, more than the budget (vdnn infer cuts an fc layer "
                    "that wide into column blocks unless --keep-graph)"
              : "; a smaller " + names("batch") + " needs less")
      << "); the first allocation past it: " << planned.plan.first_misfit);
}

}  // namespace vdnn
