// report/budget_sweep_chart.h — `vdnn plan --sweep-svg`: predicted step time against the device
// budget, one line per policy.
//
// Model: x is the device budget, y the predicted time per training step, both from zero. One
// polyline per column of the sweep (plan/budget_sweep.h) through the budgets at which it fits,
// with a dot at each (its tooltip: budget, time, the configuration chosen); one colour per policy,
// dashed for `--prefetch ahead`. The oracle (none, fastest algorithms, unlimited memory) is a
// horizontal dashed line, the device's budget (when known) a vertical one. The legend names each
// line and the smallest budget it trains in.
//
//   BudgetSweep s = sweep_budgets(planner, sweep_policies(), {.steps = 20});
//   write_text_file("sweep.svg", budget_sweep_svg("vgg16, batch 256, titan-x-maxwell", s, planner.costs(),
//                                                 size_t{12} << 30));
#pragma once

#include <string>

#include "plan/budget_sweep.h"

namespace vdnn {

// The SVG document; `title` names model, batch and device. budget 0: no budget line.
std::string budget_sweep_svg(const std::string& title, const BudgetSweep& sweep, const NetworkCosts& costs,
                             size_t budget_bytes);

}  // namespace vdnn
