#include "plan/planned_inference.h"

#include <limits>

#include "plan/program_builder.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {

PlannedInference plan_inference(const Graph& graph, const std::vector<size_t>& value_bytes,
                                const std::vector<NodeFacts>& facts, size_t budget) {
  PlannedInference p;
  ProgramOptions o{Policy::kNone, SyncMode::kEvent, /*training=*/false};
  o.inference = true;
  p.program = build_program(graph, value_bytes, facts, o);
  // One placement whatever the capacity (memory_plan.h): it gives the offsets and the smallest budget.
  p.plan = plan_memory(p.program, budget ? budget : std::numeric_limits<size_t>::max());
  p.smallest_budget = p.plan.smallest_bytes;
  p.capacity = budget ? budget : p.smallest_budget;
  p.plan.capacity_bytes = p.capacity;
  p.fits = p.plan.fits;
  if (!p.fits) {  // the peaks by class as the smallest budget places it, for the refusal
    Program placed = p.program;
    p.plan.by_class = plan_memory(placed, p.smallest_budget).by_class;
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

std::string inference_refusal(const Graph& graph, int64_t batch, const PlannedInference& planned) {
  const InferencePeak peak = inference_peak(planned.plan);
  return VDNN_MSG("--device-memory " << describe_budget(planned.capacity) << " is too small to run model '"
                                     << graph.name() << "' forward at batch " << batch << ": it needs at least "
                                     << describe_budget(planned.smallest_budget) << " (weights "
                                     << format_bytes(peak.weights) << ", activations up to "
                                     << format_bytes(peak.activations) << ", workspace up to "
                                     << format_bytes(peak.workspace)
                                     << (peak.weights > planned.capacity
                                             ? "; the weights alone exceed the budget, and streaming them from "
                                               "host memory is not implemented yet"
                                             : "; a smaller --batch needs less")
                                     << "); the first allocation past it: " << planned.plan.first_misfit);
}

}  // namespace vdnn
