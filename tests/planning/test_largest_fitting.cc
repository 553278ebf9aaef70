// The largest batch each policy trains in (planning/largest_fitting.h): the search (its threshold
// search is tested in tests/util/test_threshold_search.cc) starts `auto` from the others' largest,
// and hands back the plans at the answer and at the refused batch after it. On a device profile the answers are what `vdnn plan --batch B` says: B fits, B + 1 not.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "planning/largest_fitting.h"

namespace vdnn {
namespace test_largest_fitting {

// A fake plan per policy: none fits up to batch 40, all up to 90, auto up to 130.
PlanTable fake_plan(const std::string& policy, int64_t batch) {
  const std::map<std::string, int64_t> largest{{"none", 40}, {"all", 90}, {"auto", 130}};
  const bool fits = batch <= largest.at(policy);
  PlanTable t;
  t.oracle = 1e-3 * static_cast<double>(batch);
  if (policy == "auto") {
    t.has_auto = true;
    t.chosen.fits = fits;
  } else {
    t.one = true;
    t.rows.push_back({policy + "+fastest", {}, "--policy " + policy});
    t.rows.back().e.fits = fits;
    t.rows.back().e.minimum_budget = static_cast<size_t>(batch) << 20;
  }
  return t;
}

TEST(LargestFitting, EachPolicyGetsItsLargestAndTheRefusedPlanAfterIt) {
  std::map<std::string, std::set<int64_t>> planned;
  const PlanAt plan_at = [&](const std::string& policy, int64_t batch) {
    EXPECT_TRUE(planned[policy].insert(batch).second) << policy << " planned twice at " << batch;
    return fake_plan(policy, batch);
  };
  const std::vector<PolicyLargest> rows = largest_per_policy(plan_at, {"none", "all", "auto"}, 1 << 20);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].largest, 40);
  EXPECT_EQ(rows[1].largest, 90);
  EXPECT_EQ(rows[2].largest, 130);
  for (const PolicyLargest& r : rows) {
    ASSERT_TRUE(r.at && r.refused) << r.policy;
    EXPECT_TRUE(policy_fits(*r.at, r.policy)) << r.policy;
    EXPECT_FALSE(policy_fits(*r.refused, r.policy)) << r.policy;
    EXPECT_DOUBLE_EQ(r.at->oracle, 1e-3 * static_cast<double>(r.largest)) << "the plan at the answer";
    EXPECT_EQ(r.plans, static_cast<int>(planned[r.policy].size()));
  }
  EXPECT_EQ(rows[1].refused->rows.front().e.minimum_budget, size_t{91} << 20);
  EXPECT_FALSE(planned["auto"].count(1)) << "auto starts at the largest batch of the policies before it";
  EXPECT_LT(rows[2].plans, rows[0].plans);
}

TEST(LargestFitting, NothingFitsIsBatchZeroWithTheRefusedPlanOfOne) {
  const PlanAt never = [](const std::string&, int64_t) {
    PlanTable t;
    t.one = true;
    t.rows.push_back({"none+fastest", {}, "--policy none"});
    return t;
  };
  const std::vector<PolicyLargest> rows = largest_per_policy(never, {"none"}, 1 << 20);
  EXPECT_EQ(rows[0].largest, 0);
  EXPECT_FALSE(rows[0].at);
  EXPECT_TRUE(rows[0].refused);
  EXPECT_EQ(rows[0].plans, 1);
}

}  // namespace test_largest_fitting
}  // namespace vdnn
