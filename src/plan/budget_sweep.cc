#include "plan/budget_sweep.h"

#include <algorithm>
#include <functional>

#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

SweepPolicy fixed(Policy policy) {
  // The algorithms `vdnn train --policy P` runs, as the plan's rows (planning/plan_report.h).
  auto config = [policy](const Planner& p) { return Configuration{policy, p.costs().defaults()}; };
  return {to_string(policy), policy != Policy::kNone,
          [config](const Planner& p) { return p.minimum_budget(config(p)); },
          [config](const Planner& p, size_t) {
            return std::optional<SweepChoice>({config(p), std::nullopt});
          }};
}

// Every step of a configuration under vDNN's prefetch rule is the same step from its smallest
// budget up (memory_plan.h): planned and simulated once.
class OncePerConfiguration {
 public:
  explicit OncePerConfiguration(const Planner& planner) : planner_(planner) {}
  const Evaluation& at_smallest(const Configuration& c) {
    for (const Evaluation& e : seen_)
      if (e.config == c) return e;
    return seen_.emplace_back(planner_.evaluate(c, 0));
  }

 private:
  const Planner& planner_;
  std::vector<Evaluation> seen_;
};

std::vector<size_t> budgets_between(size_t top, size_t floor, int steps, const std::vector<size_t>& also) {
  std::vector<size_t> out;
  const size_t range = top - floor, n = static_cast<size_t>(steps - 1);
  for (size_t i = 0; i <= n; ++i) out.push_back(top - (range / n * i + range % n * i / n));  // range * i / n
  for (size_t b : also)
    if (b >= floor && b <= top) out.push_back(b);
  std::sort(out.begin(), out.end(), std::greater<>());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::vector<SweepPolicy> sweep_policies() {
  SweepPolicy dyn{"dyn", true,
                  [](const Planner& p) {
                    return p.minimum_budget({Policy::kAll, p.costs().leanest()});
                  },
                  [](const Planner& p, size_t budget) -> std::optional<SweepChoice> {
                    const DynChoice d = choose_dyn(p, budget);
                    if (!d.fits) return std::nullopt;
                    return SweepChoice{d.config, std::nullopt};
                  }};
  // auto fits wherever all with the leanest algorithms does (its last resort is dyn's) and chooses
  // its prefetch rule per budget: one column (no /ahead), planned at every budget.
  SweepPolicy chosen{"auto", false,
                     [](const Planner& p) {
                       return p.minimum_budget({Policy::kAll, p.costs().leanest()});
                     },
                     [](const Planner& p, size_t budget) -> std::optional<SweepChoice> {
                       const AutoChoice a = choose_auto(p, budget);
                       if (!a.fits) return std::nullopt;
                       return SweepChoice{a.config, a.prefetch};
                     },
                     false, true};
  return {fixed(Policy::kNone), fixed(Policy::kConv), fixed(Policy::kAll), std::move(dyn), std::move(chosen)};
}

BudgetSweep sweep_budgets(const Planner& planner, const std::vector<SweepPolicy>& policies,
                          const SweepOptions& options) {
  if (options.steps < SweepOptions::kMinSteps || options.steps > SweepOptions::kMaxSteps)
    VDNN_THROW("--sweep-steps: expected " << SweepOptions::kMinSteps << " to " << SweepOptions::kMaxSteps
                                          << " budgets, got " << options.steps);
  VDNN_CHECK(!policies.empty(), "a sweep needs a policy");
  BudgetSweep s;
  s.oracle_seconds = planner.oracle_seconds();
  std::vector<size_t> smallest;
  for (const SweepPolicy& p : policies) smallest.push_back(p.smallest(planner));
  for (size_t i = 0; i < policies.size(); ++i) s.columns.push_back({policies[i].name, i, Prefetch::kVdnn, smallest[i]});
  if (options.prefetch_ahead)
    for (size_t i = 0; i < policies.size(); ++i)
      if (policies[i].offloads) s.columns.push_back({policies[i].name + "/ahead", i, Prefetch::kAhead, smallest[i]});
  s.top = *std::max_element(smallest.begin(), smallest.end());
  s.floor = *std::min_element(smallest.begin(), smallest.end());
  std::vector<size_t> also = smallest;
  if (options.extra_budget) also.push_back(options.extra_budget);
  s.budgets = budgets_between(s.top, s.floor, options.steps, also);

  OncePerConfiguration once(planner);
  for (size_t budget : s.budgets) {
    std::vector<std::optional<SweepChoice>> chosen;
    for (const SweepPolicy& p : policies) chosen.push_back(p.choose(planner, budget));
    std::vector<SweepCell>& row = s.cells.emplace_back();
    for (const SweepColumn& c : s.columns) {
      SweepCell& cell = row.emplace_back();
      if (!chosen[c.policy]) continue;
      cell.config = chosen[c.policy]->config;
      cell.prefetch = chosen[c.policy]->prefetch.value_or(c.prefetch);
      if (!policies[c.policy].same_step_above_smallest) {
        const Evaluation e = planner.evaluate(cell.config, budget, cell.prefetch);
        cell.fits = e.fits;
        cell.step_seconds = e.time.iteration_seconds;
        cell.prefetch_depth = e.prefetch_depth;
        continue;
      }
      const Evaluation& e = once.at_smallest(cell.config);
      cell.fits = budget >= e.minimum_budget && e.host_fits;
      cell.step_seconds = e.time.iteration_seconds;
      if (cell.fits && cell.prefetch == Prefetch::kAhead && cell.config.policy != Policy::kNone) {
        const Evaluation ahead = planner.evaluate(cell.config, budget, cell.prefetch);  // depth for this budget
        VDNN_CHECK(ahead.fits, "prefetch ahead fits wherever vDNN's rule does");
        cell.step_seconds = ahead.time.iteration_seconds;
        cell.prefetch_depth = ahead.prefetch_depth;
      }
    }
  }
  for (size_t c = 0; c < s.columns.size(); ++c)
    if (policies[s.columns[c].policy].carry_upward) monotone_upward(s, c);
  return s;
}

void monotone_upward(BudgetSweep& s, size_t column) {
  std::optional<SweepCell> best;
  size_t best_budget = 0;
  for (size_t r = s.budgets.size(); r-- > 0;) {  // smallest budget first
    SweepCell& cell = s.cells[r][column];
    if (cell.fits && (!best || cell.step_seconds <= best->step_seconds)) {
      best = cell;
      best_budget = s.budgets[r];
    } else if (best) {
      cell = *best;
      cell.found_at = best->found_at ? best->found_at : best_budget;
    }
  }
}

void add_sliced_column(BudgetSweep& s, const Planner& sliced, const std::string& name, int steps, size_t extra_budget) {
  const size_t floor = sliced.minimum_budget({Policy::kAll, sliced.costs().leanest()});
  if (floor < s.floor) {
    std::vector<size_t> also;
    if (extra_budget) also.push_back(extra_budget);
    for (size_t b : budgets_between(s.floor, floor, std::max(steps, SweepOptions::kMinSteps), also))
      if (b < s.floor) {
        s.budgets.push_back(b);
        s.cells.emplace_back(s.columns.size());  // the whole graph's columns: they do not fit there
      }
    s.floor = floor;
  }
  size_t policy = 0;
  for (const SweepColumn& c : s.columns) policy = std::max(policy, c.policy + 1);
  s.columns.push_back({name, policy, Prefetch::kVdnn, floor, sliced.costs()});
  for (size_t r = 0; r < s.budgets.size(); ++r) {
    const AutoChoice a = choose_auto(sliced, s.budgets[r]);
    SweepCell& cell = s.cells[r].emplace_back();
    if (!a.fits) continue;
    const Evaluation e = sliced.evaluate(a.config, s.budgets[r], a.prefetch);  // as the auto column's cells
    cell = {e.fits, e.time.iteration_seconds, a.config, a.prefetch, e.prefetch_depth};
  }
  monotone_upward(s, s.columns.size() - 1);
}

}  // namespace vdnn
