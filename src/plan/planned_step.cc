#include "plan/planned_step.h"

#include <algorithm>
#include <limits>

#include "plan/collectives.h"
#include "plan/program_builder.h"
#include "util/size_parse.h"
#include "util/threshold_search.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

Program build(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
              const StepOptions& step, Policy policy, bool training, int prefetch_depth = 0,
              const StepDecisions& decisions = {}) {
  ProgramOptions o{policy, step.sync, training};
  o.optimizer = step.optimizer;
  o.optimizer_state = step.optimizer_state;
  o.prefetch_depth = prefetch_depth;
  if (training) o.decisions = decisions;
  return build_program(graph, value_bytes, facts, o);
}

// The look-ahead depth: the deepest whose training plan fits. Deeper needs more memory, but fitting
// is not monotone in the depth: the live-bytes floor only grows with it (each prefetch is issued no
// later at a deeper look-ahead, so every tensor lives at least as long), while the placement's
// excess over the floor varies from depth to depth (up to 8% on VGG-16's sliced graphs), so a
// bisection on "fits" answers whatever its path met (docs/reliability.md). The depth is defined
// without a path instead:
//   1. the whole pass, when its placement fits (one Program, where the budget holds every prefetch);
//   2. F, the deepest depth whose floor fits: monotone, so a threshold search finds the same F from
//      any hint, and with the depth a similar step found it asks two Programs;
//   3. from F down, the first depth whose placement fits: F, F - 1, ..., F - kWalk, then F - 2·kWalk,
//      F - 4·kWalk, ... (a walk past kWalk stays logarithmic); none: vDNN's rule (depth 0) stays.
// Replaces step.train and step.train_plan by that depth's when one fits.
constexpr int kWalk = 16;

void choose_prefetch_depth(const Graph& graph, const ProgramSource& programs, int hint, PlannedStep& step) {
  const int layers = static_cast<int>(graph.nodes().size());
  auto floor_fits = [&](const Program& p) { return live_bytes_floor(p) <= step.capacity; };
  auto place = [&](int depth, Program candidate) {
    MemoryPlan m = plan_memory(candidate, step.capacity);
    if (!m.fits) return false;
    step.prefetch_depth = depth;
    step.train = std::move(candidate);
    step.train_plan = std::move(m);
    return true;
  };
  Program whole = programs(true, layers);
  const bool whole_floor_fits = floor_fits(whole);
  if (whole_floor_fits && place(layers, std::move(whole))) return;
  if (layers < 2) return;
  const int deepest_floor =
      whole_floor_fits ? layers - 1
                       : static_cast<int>(last_true(hint, layers - 1, [&](int64_t depth) {
                           return floor_fits(programs(true, static_cast<int>(depth)));
                         }));
  for (int below = 0; below < deepest_floor; below = below < kWalk ? below + 1 : 2 * below)
    if (place(deepest_floor - below, programs(true, deepest_floor - below))) return;
}

// What may fit below vDNN's policies: `auto` keeps, offloads or recomputes each tensor and takes
// leaner algorithms, so it fits budgets they do not, down to what stays on the device whatever it
// decides: the parameters, their gradients and momentum.
std::string below_vdnn_policies(const Program& train, size_t budget, const OptionNames& names) {
  size_t persistent = 0;
  for (const auto& t : train.tensors)
    if (t.persistent) persistent += t.bytes;
  if (budget <= persistent)
    return VDNN_MSG("no policy fits it: the parameters, their gradients and optimizer state alone take "
                    << describe_budget(persistent));
  return VDNN_MSG(names("policy") << " auto (keep, offload or recompute per tensor, leaner algorithms) may fit it: "
                                  << "a plan with " << names("policy") << " auto at this budget says whether");
}

}  // namespace

PlannedStep plan_step(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                      const StepOptions& options) {
  const ProgramSource programs = [&](bool training, int depth) {
    return build(graph, value_bytes, facts, options, training ? options.policy : Policy::kNone, training, depth,
                 options.decisions);
  };
  return plan_step(graph, programs, options);
}

PlannedStep plan_step(const Graph& graph, const ProgramSource& programs, const StepOptions& options) {
  PlannedStep s;
  s.train = programs(true, 0);
  s.eval = programs(false, 0);
  // Each Program is placed once: the placement does not depend on the capacity (memory_plan.h),
  // so one plan_memory gives its offsets and its smallest budget, from which every capacity fits.
  const size_t capacity = options.budget ? options.budget : std::numeric_limits<size_t>::max();
  s.train_plan = plan_memory(s.train, capacity);
  s.eval_plan = plan_memory(s.eval, capacity);
  s.smallest_budget = std::max(s.train_plan.smallest_bytes, s.eval_plan.smallest_bytes);
  s.capacity = options.budget ? options.budget : s.smallest_budget;
  s.train_plan.capacity_bytes = s.eval_plan.capacity_bytes = s.capacity;
  s.fits = s.train_plan.fits && s.eval_plan.fits;
  if (s.fits && options.prefetch == Prefetch::kAhead &&
      (options.policy != Policy::kNone || options.decisions.any(StorageAction::kOffload)))
    choose_prefetch_depth(graph, programs, options.prefetch_depth_hint, s);
  // Collectives allocate nothing (buckets all-reduce the persistent gradients in place), so they
  // join the placed Program without changing its plan.
  add_collectives(s.train, options.collectives);
  if (!s.fits) return s;
  // The parameters' tensors come first, in both Programs alike (gradients and state in host memory
  // among them, not persistent there).
  for (size_t i = 0; i < s.train.tensors.size() && i < s.eval.tensors.size(); ++i)
    VDNN_CHECK(!s.train.tensors[i].persistent || (s.eval.tensors[i].name == s.train.tensors[i].name &&
                                                   s.train_plan.persistent_offsets[i] == s.eval_plan.persistent_offsets[i]),
               "parameter '" << s.train.tensors[i].name << "' must not move between plans");
  return s;
}

std::string budget_refusal(const Graph& graph, const std::vector<size_t>& value_bytes,
                           const std::vector<NodeFacts>& facts, const StepOptions& options, int64_t batch,
                           const PlannedStep& step, const OptionNames& names) {
  const Program eval =
      build(graph, value_bytes, facts, options, Policy::kNone, false);  // unplaced
  std::string others;
  for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll})
    others += VDNN_MSG((others.empty() ? "" : ", ")
                       << to_string(p) << " "
                       << format_bytes(minimum_budget(
                              build(graph, value_bytes, facts, options, p, true), eval)));
  return VDNN_MSG(
      names("device_memory") << " " << describe_budget(step.capacity) << " is too small for model '" << graph.name()
                             << "' at batch " << batch << " with policy " << to_string(options.policy)
                             << ": it needs at least " << describe_budget(step.smallest_budget)
                             << " (smallest budget by policy: " << others << "); the first allocation past it: "
                             << (step.train_plan.fits ? step.eval_plan.first_misfit : step.train_plan.first_misfit)
                             << "; " << below_vdnn_policies(step.train, step.capacity, names));
}

}  // namespace vdnn
