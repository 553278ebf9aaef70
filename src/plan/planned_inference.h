// plan/planned_inference.h — the planned forward pass of a Net that only infers (`vdnn infer`).
//
// Model: an inference Program (program_builder.h, ProgramOptions::inference) runs the forward pass
// only: every activation is freed after its last reader, ReLUs run in place on their input, and the
// device holds no gradient or momentum at all — the seed's edge-device case: what inference needs
// is the weights plus the working set. The same memory planner as training places it
// (memory_plan.h) in an arena of the budget (0: exactly the smallest that works), so the smallest
// budget is exact to the byte and a budget below it is refused before anything runs.
// Its peak splits into the classes a deployment asks about: weights, activations (feature maps,
// with the kernels' transient saved state) and workspace (InferencePeak).
// Weights that do not fit: when the Program with every weight resident does not fit the budget,
// layers' weights are streamed from host memory (program_builder.h: prefetched one weighted layer
// ahead, freed after their forward kernel), the largest layers first, one more at a time until the
// pass fits; the smallest budget that runs at all is then the one with every weight streamed. (A
// layer larger than the budget must be split first: rewrites/fc_split.h.)
// Workspace that does not fit: when even every weight streamed does not fit, the convolution with
// the widest forward workspace goes direct, one at a time, until the pass fits
// (plan/direct_convolutions.h: Winograd's transformed tiles need 890 MiB for one VGG-16 layer at
// batch 32; a Net that infers under a budget rebuilds its kernels so).
//
//   PlannedInference p = plan_inference(graph, backend.value_bytes(), backend.facts(), 64 << 20);
//   if (!p.fits) throw Error(inference_refusal(graph, batch, p));
//   InferencePeak peak = inference_peak(p.plan);   // weights, activations, workspace, total
#pragma once

#include <string>
#include <vector>

#include "core/conv_algo.h"
#include "core/graph.h"
#include "plan/memory_plan.h"
#include "plan/program.h"
#include "util/option_names.h"

namespace vdnn {

struct PlannedInference {
  bool fits = false;           // the Program fits `capacity`
  size_t smallest_budget = 0;  // exact, every weight resident: every budget from it up fits
  // Exact, every weight streamed: the smallest budget that runs at all (<= smallest_budget).
  size_t smallest_streamed_budget = 0;
  size_t capacity = 0;         // the budget asked, or smallest_budget without one
  std::vector<bool> streamed;  // per node: its weights are streamed; empty: none is
  bool streaming = true;       // streaming was allowed (else smallest_streamed_budget == smallest_budget)
  Program program;             // placed (offsets filled) when fits
  MemoryPlan plan;             // when it does not fit: by_class as the smallest budget places it
};

// Peak device bytes of one forward pass by class; `total` is the peak of the sum (the classes'
// peaks need not coincide), `budget` the smallest arena the placement needs (>= total).
struct InferencePeak {
  size_t weights = 0, activations = 0, workspace = 0, total = 0, budget = 0;
};

// Plans the forward pass in `budget` bytes (0: the smallest with every weight resident), streaming
// weights when they do not fit and `streaming` allows it.
PlannedInference plan_inference(const Graph& graph, const std::vector<size_t>& value_bytes,
                                const std::vector<NodeFacts>& facts, size_t budget, bool streaming = true);

InferencePeak inference_peak(const MemoryPlan& plan);

// Why an inference plan that does not fit is refused, in one sentence: the budget asked, the
// smallest that works, the peak by class, and where the first allocation past the budget lands.
// `names` spells the options it names (util/option_names.h: flags or keywords).
std::string inference_refusal(const Graph& graph, int64_t batch, const PlannedInference& planned,
                              const OptionNames& names = {});

}  // namespace vdnn
