#include "planning/largest_fitting.h"

#include <algorithm>
#include <map>

#include "vdnn/error.h"

namespace vdnn {

bool policy_fits(const PlanTable& table, const std::string& policy) {
  if (policy == "dyn") return table.has_dyn && table.dyn.fits;
  if (policy == "auto") return table.has_auto && table.chosen.fits;
  return table.one && !table.rows.empty() && table.rows.front().e.fits;
}

int64_t largest_fitting(int64_t from, int64_t cap, const std::function<bool(int64_t)>& fits) {
  VDNN_CHECK(cap >= 1, "the batch cap must be at least 1");
  int64_t lo = 0, hi = cap + 1;  // lo fits (0: none known), hi does not (cap + 1: past the cap)
  from = std::min(from, cap);
  if (from >= 1) (fits(from) ? lo : hi) = from;
  for (int64_t b = lo ? lo * 2 : 1; b < hi; b *= 2) {  // doubling
    if (!fits(b)) {
      hi = b;
      break;
    }
    lo = b;
    if (b > cap / 2) break;  // the next doubling passes the cap: bisect up to it
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
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
    r.largest = largest_fitting(from, cap, [&](int64_t b) { return policy_fits(table(b), policy); });
    if (r.largest > 0) r.at = table(r.largest);
    if (r.largest < cap) r.refused = table(r.largest + 1);  // planned by the search already
    r.plans = static_cast<int>(planned.size());
    largest_so_far = std::max(largest_so_far, r.largest);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace vdnn
