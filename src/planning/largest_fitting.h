// planning/largest_fitting.h — "what is the largest batch (or sequence) this network trains in on
// this device?": `vdnn plan --max-batch` and `--max-seq-len`, per policy, with the step against the
// oracle at that size.
//
// Model: a configuration's tensors grow with the batch and the sequence length, so one that fits
// size n is expected to fit every smaller size. The search assumes it without relying on it: it
// gallops from a size expected to fit, then bisects (util/threshold_search.h). The answer always fits
// and the size after it was planned and refused (or is past the cap); where fitting is monotone in
// the size it is the largest. Each size is a whole plan (`plan_at`: a Planner at that size and planning/plan_report.h's
// table for one policy), memoised, so a size is planned once per policy. `auto` fits every budget
// that `all` and `dyn` fit (plan/auto_policy.h), so its search starts at the largest size of the
// policies searched before it, which saves most of its costly searches.
//
//   const PlanAt plan_at = [&](const std::string& policy, int64_t batch) {
//     const PlanInputs in = plan_inputs(graph, batch, {.device = "titan-x-maxwell"});
//     const Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
//     return plan_table(planner, in.device_memory_bytes, policy, Prefetch::kVdnn);
//   };
//   std::vector<PolicyLargest> rows = largest_per_policy(plan_at, {"none", "conv", "all", "dyn", "auto"}, 1 << 20);
//   rows[4].largest;                 // auto's largest batch (0: not even one sample fits)
//   rows[4].at->rows.front().label;  // its configuration at that batch
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planning/plan_report.h"

namespace vdnn {

// The plan of one policy ("none", "conv", "all", "dyn" or "auto") at one size (a batch, a length).
using PlanAt = std::function<PlanTable(const std::string& policy, int64_t size)>;

// Whether the policy's configuration fits the table's budget (dyn and auto: their choice).
bool policy_fits(const PlanTable& table, const std::string& policy);

struct PolicyLargest {
  std::string policy;
  int64_t largest = 0;               // the largest size that fits; 0: size 1 does not fit
  std::optional<PlanTable> at;       // its plan at `largest` (largest > 0)
  std::optional<PlanTable> refused;  // the plan at largest + 1, which does not fit (none past the cap)
  int plans = 0;                     // sizes planned for this policy
};

// One row per policy, in order; `auto` starts from the largest batch of the others.
std::vector<PolicyLargest> largest_per_policy(const PlanAt& plan_at, const std::vector<std::string>& policies,
                                              int64_t cap);

}  // namespace vdnn
