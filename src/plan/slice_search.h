// plan/slice_search.h — `auto` with slice runs: how many slices of the batch each block runs in.
//
// Model (moDNN's per-layer split, Chen et al. DATE 2018, chosen the way μ-cuDNN chooses its
// micro-batches: by planning each candidate): the candidates are rewrites/slice_runs.h's blocks whose
// largest input plus output is at least an eighth of the network's largest. Starting from no
// slices, each block in turn tries 2, 4, 8 and 16 slices (dividing the batch); a count is kept
// when `auto` (plan/auto_policy.h) on the sliced graph fits where the current choice does not, or
// is faster; when nothing fits yet, a smaller smallest budget (all, leanest algorithms) counts as
// better. Passes repeat until no count changes; none runs when the whole graph's `auto` is at its
// oracle already (everything fits with the fastest algorithms). A try is a full `auto` search on the sliced
// graph (its own Program, placement and simulation), so the prediction is the Program's, unless
// something cheaper settles it: a set of counts tried before is answered from memory; below
// all + leanest's smallest budget nothing fits; and a sliced graph whose lower bound at the budget
// (plan/step_bound.h: its oracle plus what the budget forces onto leaner algorithms) is no faster
// than the best plan so far cannot beat it, so it is not searched (pruned). A sliced
// layer reads its weights once per slice and launches k kernels: slices cost time, and the search
// takes them only where they buy a fit or a faster step than what the memory costs without them.
//
//   SliceRunChoice c = choose_slice_runs(graph, 256, inputs_of, SyncMode::kEvent, size_t{12} << 30);
//   c.runs;            // e.g. {conv1_1:pool1:2, conv2_1:pool2:2}; empty: no slices
//   c.choice.config;   // auto's configuration on slice_runs(graph, 256, c.runs).graph
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "plan/auto_policy.h"
#include "plan/optimizer_state.h"
#include "plan/step_bound.h"
#include "rewrites/slice_runs.h"

namespace vdnn {

// What a Planner needs for one graph (a backend target's sizes and costs for it).
struct PlannerInputs {
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  NetworkCosts costs;
};
using InputsOf = std::function<PlannerInputs(const Graph&)>;

struct SliceRunChoice {
  std::vector<SliceRun> runs;      // the counts chosen (slices >= 2); empty: none helps
  AutoChoice choice;               // `auto` on the graph sliced by `runs`
  std::vector<std::string> tried;  // each try and its outcome, in order
  int evaluations = 0;             // `auto` searches run (a try below all + leanest's smallest budget runs none)
  int pruned = 0;                  // tries not searched: their lower bound is no faster than the best plan
  StepBound bound;                 // of the graph sliced by `runs`, at the budget (plan/step_bound.h)
};

// `optimizer`: whose state every planned step keeps (Planner::set_optimizer).
SliceRunChoice choose_slice_runs(const Graph& graph, int64_t batch, const InputsOf& inputs_of, SyncMode sync,
                                 size_t budget, size_t host_budget = 0, OptimizerKind optimizer = OptimizerKind::kSgd);

}  // namespace vdnn
