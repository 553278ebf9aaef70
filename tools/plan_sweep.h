// tools/plan_sweep.h — how `vdnn plan --sweep` shows a budget sweep (plan/budget_sweep.h): a
// table on stdout, one row per budget and one column per policy (predicted ms per step, "—" where
// it does not fit, the oracle last), or the same as JSON.
//
//   BudgetSweep s = sweep_budgets(planner, sweep_policies(), {.steps = 20});
//   print_sweep_table(s, size_t{12} << 30);          // the device's budget is marked "*"
//   out["sweep"] = sweep_json(s, planner.costs());
#pragma once

#include <nlohmann/json.hpp>

#include "plan/budget_sweep.h"

namespace vdnn::cli {

void print_sweep_table(const BudgetSweep& sweep, size_t device_budget);
nlohmann::json sweep_json(const BudgetSweep& sweep, const NetworkCosts& costs);

}  // namespace vdnn::cli
