#include "plan/planned_step.h"

#include <algorithm>
#include <limits>

#include "plan/collectives.h"
#include "plan/program_builder.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

Program build(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
              OptimizerKind optimizer, Policy policy, SyncMode sync, bool training, int prefetch_depth = 0,
              const StepDecisions& decisions = {}) {
  ProgramOptions o{policy, sync, training};
  o.optimizer = optimizer;
  o.prefetch_depth = prefetch_depth;
  if (training) o.decisions = decisions;
  return build_program(graph, value_bytes, facts, o);
}

// The deepest look-ahead whose training plan still fits (deeper needs more memory: binary search).
// Replaces step.train and step.train_plan by that depth's when one fits. The whole pass is tried
// first: where the budget holds every prefetch at once, one Program answers instead of log2(layers)
// of them (each as large as the network: a 40,000-layer chain took 14 s).
void choose_prefetch_depth(const Graph& graph, const ProgramSource& programs, PlannedStep& step) {
  const int layers = static_cast<int>(graph.nodes().size());
  auto fits_at = [&](int depth) {
    Program candidate = programs(true, depth);
    if (live_bytes_floor(candidate) > step.capacity) return false;  // cannot fit: no need to place it
    MemoryPlan m = plan_memory(candidate, step.capacity);
    if (!m.fits) return false;
    step.prefetch_depth = depth;
    step.train = std::move(candidate);
    step.train_plan = std::move(m);
    return true;
  };
  if (fits_at(layers)) return;
  int lo = 1, hi = layers - 1;
  while (lo <= hi) {
    const int mid = lo + (hi - lo) / 2;
    if (fits_at(mid))
      lo = mid + 1;
    else
      hi = mid - 1;
  }
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
    return build(graph, value_bytes, facts, options.optimizer, training ? options.policy : Policy::kNone, options.sync,
                 training, depth, options.decisions);
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
    choose_prefetch_depth(graph, programs, s);
  // Collectives allocate nothing (buckets all-reduce the persistent gradients in place), so they
  // join the placed Program without changing its plan.
  add_collectives(s.train, options.collectives);
  if (!s.fits) return s;
  for (size_t i = 0; i < s.train.tensors.size() && s.train.tensors[i].persistent; ++i)
    VDNN_CHECK(s.eval.tensors[i].name == s.train.tensors[i].name &&
                   s.train_plan.persistent_offsets[i] == s.eval_plan.persistent_offsets[i],
               "parameter '" << s.train.tensors[i].name << "' must not move between plans");
  return s;
}

std::string budget_refusal(const Graph& graph, const std::vector<size_t>& value_bytes,
                           const std::vector<NodeFacts>& facts, const StepOptions& options, int64_t batch,
                           const PlannedStep& step, const OptionNames& names) {
  const Program eval =
      build(graph, value_bytes, facts, options.optimizer, Policy::kNone, options.sync, false);  // unplaced
  std::string others;
  for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll})
    others += VDNN_MSG((others.empty() ? "" : ", ")
                       << to_string(p) << " "
                       << format_bytes(minimum_budget(
                              build(graph, value_bytes, facts, options.optimizer, p, options.sync, true), eval)));
  return VDNN_MSG(
      names("device_memory") << " " << describe_budget(step.capacity) << " is too small for model '" << graph.name()
                             << "' at batch " << batch << " with policy " << to_string(options.policy)
                             << ": it needs at least " << describe_budget(step.smallest_budget)
                             << " (smallest budget by policy: " << others << "); the first allocation past it: "
                             << (step.train_plan.fits ? step.eval_plan.first_misfit : step.train_plan.first_misfit)
                             << "; " << below_vdnn_policies(step.train, step.capacity, names));
}

}  // namespace vdnn
