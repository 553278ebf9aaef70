#include "planning/largest_fitting.h"

#include <algorithm>
#include <map>

#include "util/threshold_search.h"
#include "vdnn/error.h"

namespace vdnn {

bool policy_fits(const PlanTable& table, const std::string& policy) {
  if (policy == "dyn") return table.has_dyn && table.dyn.fits;
  if (policy == "auto") return table.has_auto && table.chosen.fits;
  return table.one && !table.rows.empty() && table.rows.front().e.fits;
}

std::vector<PolicyLargest> largest_per_policy(const PlanAt& plan_at, const std::vector<std::string>& policies,
                                              int64_t cap) {
  std::vector<PolicyLargest> rows;
  int64_t largest_so_far = 0;
  for (const std::string& policy : policies) {
    std::map<int64_t, PlanTable> planned;
    auto table = [&](int64_t batch) -> const PlanTable& {
      auto it = planned.find(batch);
      if (it == planned.end()) it = planned.emplace(batch, plan_at(policy, batch)).first;
      return it->second;
    };
    PolicyLargest r{policy};
    const int64_t from = policy == "auto" ? largest_so_far : 0;
    const int64_t hint = std::max<int64_t>(from, 1);  // doubling from it, or from 1
    r.largest = last_true(hint, cap, [&](int64_t b) { return policy_fits(table(b), policy); }, hint);
    if (r.largest > 0) r.at = table(r.largest);
    if (r.largest < cap) r.refused = table(r.largest + 1);  // planned by the search already
    r.plans = static_cast<int>(planned.size());
    largest_so_far = std::max(largest_so_far, r.largest);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace vdnn
