// plan/budget_sweep.h — `vdnn plan --sweep`: predicted step time against the device budget, for
// every policy.
//
// Model: the budgets run from the largest smallest budget of the policies (none's or conv's: every
// policy fits at the top) down to the floor (the smallest budget any policy trains in), `steps`
// evenly spaced, plus each policy's own smallest budget (so each column starts exactly where that
// policy starts to fit) and `extra` (the device's budget) when it lies in that range; largest
// first. At each budget each policy of sweep_policies() — the one list of them — chooses its
// configuration, and the step `vdnn train` would run with it is planned and simulated
// (Planner::evaluate); a column per policy with vDNN's prefetch rule, and with `prefetch_ahead` a
// second (`ahead`) for each policy that offloads. A cell is the predicted step time, or "does not
// fit".
//
// Cost: a Program's placement, and so its simulated step, does not depend on the budget above its
// smallest (plan/memory_plan.h). A configuration under vDNN's prefetch rule is therefore planned
// and simulated once, whatever the number of budgets at which it is chosen; each budget is a
// comparison with its smallest budget. What depends on the budget is planned at each: a policy's
// choice (dyn's search: a few placements) and the `ahead` look-ahead depth (about log2(layers)
// Programs, fewer from the depth found at the budget before; plan/planned_step.h). VGG-16 b256 on titan-x-maxwell, 20 steps: 0.4 s (docs/design.md).
//
//   Planner planner(graph, value_bytes, facts, costs, SyncMode::kEvent);
//   BudgetSweep s = sweep_budgets(planner, sweep_policies(), {.steps = 20, .prefetch_ahead = true});
//   for (size_t r = 0; r < s.budgets.size(); ++r)
//     for (size_t c = 0; c < s.columns.size(); ++c)
//       if (s.cells[r][c].fits) use(s.budgets[r], s.columns[c].name, s.cells[r][c].step_seconds);
//   add_sliced_column(s, sliced_planner, "auto+slices", 10);   // the graph with slice runs, below the floor
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "plan/planner.h"

namespace vdnn {

// What a policy trains with at one budget. `prefetch`: the rule it chose itself (a policy that
// searches the prefetch rule too, such as `auto`); unset: its column's.
struct SweepChoice {
  Configuration config;
  std::optional<Prefetch> prefetch;
};

// A way to choose a configuration for a budget: a fixed one (none, conv, all with the algorithms
// `vdnn train --policy P` runs: NetworkCosts::defaults()) or a search (dyn). A policy that picks its own prefetch rule
// sets offloads = false (one column) and same_step_above_smallest = false.
struct SweepPolicy {
  std::string name;      // "none", "dyn"
  bool offloads = true;  // false: the `ahead` prefetch rule changes nothing, no column for it
  // The least budget it trains in.
  std::function<size_t(const Planner&)> smallest;
  // Its configuration at `budget` (>= 1 byte); nullopt when it has none. A fixed policy returns its
  // configuration at every budget (the planner says whether it fits).
  std::function<std::optional<SweepChoice>(const Planner&, size_t budget)> choose;
  // true: its configuration fixes the step, which is then the same at every budget from its
  // smallest up (memory_plan.h) and planned once. false: planned at every budget — for a policy
  // whose Configuration leaves decisions to the budget.
  bool same_step_above_smallest = true;
  // true: a search whose answer is not monotone in the budget (auto's greedy): its column is made
  // monotone by construction (monotone_upward).
  bool carry_upward = false;
};

// none, conv, all (train's algorithms), dyn, auto: every policy `vdnn plan` compares. Add a policy here.
std::vector<SweepPolicy> sweep_policies();

struct SweepOptions {
  int steps = 20;               // evenly spaced budgets, top and floor included: kMinSteps..kMaxSteps
  bool prefetch_ahead = false;  // a second column, with `--prefetch ahead`, per policy that offloads
  size_t extra_budget = 0;      // one more row when it lies in the range (0: none)
  static constexpr int kMinSteps = 2, kMaxSteps = 200;
};

struct SweepColumn {
  std::string name;   // "all", "all/ahead"
  size_t policy = 0;  // index into the policies swept (add_sliced_column's: one past them)
  Prefetch prefetch = Prefetch::kVdnn;
  size_t smallest_budget = 0;  // the policy's
  // The costs its configurations index when they are another graph's (add_sliced_column: the
  // sliced graph's, for describe()); unset: the sweep's planner's.
  std::optional<NetworkCosts> costs;
  const NetworkCosts& costs_or(const NetworkCosts& planner_costs) const { return costs ? *costs : planner_costs; }
};

struct SweepCell {
  bool fits = false;
  double step_seconds = 0;              // predicted; meaningful when fits
  Configuration config;                 // what the policy chose (when fits)
  Prefetch prefetch = Prefetch::kVdnn;  // the rule it was planned with
  int prefetch_depth = 0;               // `ahead`: the look-ahead depth at this budget
  // The smaller budget whose plan this is, when a search's own plan here was slower or did not
  // fit (monotone_upward); 0: the plan chosen at this budget.
  size_t found_at = 0;
};

struct BudgetSweep {
  std::vector<SweepColumn> columns;
  std::vector<size_t> budgets;                // bytes, largest first
  std::vector<std::vector<SweepCell>> cells;  // [budget][column]
  size_t top = 0, floor = 0;                  // the range swept
  double oracle_seconds = 0;                  // none, fastest algorithms, unlimited memory
};

// Throws vdnn::Error naming --sweep-steps when options.steps is out of range.
BudgetSweep sweep_budgets(const Planner& planner, const std::vector<SweepPolicy>& policies,
                          const SweepOptions& options);

// One more column, `name`: `auto` on `sliced` (the same network with slice runs, rewrites/slice_runs.h,
// planned by its own Planner) at every budget of the sweep. When the sliced graph trains below the
// sweep's floor, budgets evenly spaced from that floor down to the sliced graph's (`steps` of them
// with both ends, the old floor not repeated) extend the sweep, where the other columns do not fit
// (and `extra_budget`, the device's, when it lies there).
// Each cell is one `auto` search on the sliced graph; the column is then made monotone_upward.
void add_sliced_column(BudgetSweep& sweep, const Planner& sliced, const std::string& name, int steps,
                       size_t extra_budget = 0);

// A searching policy's column (auto's, auto+slices) made monotone in the budget by construction: a
// plan that fits budget b fits every larger one with the same placement and step (memory_plan.h:
// one placement, exact smallest budget; a look-ahead depth that fits b fits above it), so walking
// the budgets upward, a cell whose own plan is slower than the best found below it, or does not
// fit, takes that plan (SweepCell::found_at). `auto`'s greedy is not monotone by itself: the
// auto+slices column of VGG-16 b256 rose at 7 of 31 budgets, by up to 2.5%.
void monotone_upward(BudgetSweep& sweep, size_t column);

}  // namespace vdnn
