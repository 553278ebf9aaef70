// `vdnn plan --max-batch` (planning/max_batch.h, tools/plan_max_batch.h): on a device profile, per
// policy, the largest batch that trains in the budget is one `vdnn plan --batch B` says fits, with
// B + 1 refused; the flags it does not use are refused, and so is this CPU (costs at one batch).
#include <gtest/gtest.h>

#include <string>

#include "cli_run.h"

namespace vdnn::test {
namespace test_cli_max_batch {

const std::string kModel = "--model fmnist_cnn --device titan-x-maxwell --device-memory 64MiB";

// Whether `vdnn plan --batch B --policy P` fits: its row (none, conv, all) or its choice (dyn, auto).
bool plan_fits(const std::string& policy, int64_t batch) {
  const CliRun r = vdnn("plan " + kModel + (policy == "auto" ? " --no-slice-search" : "") + " --json --policy " +
                        policy + " --batch " + std::to_string(batch));
  if (r.exit_code == 1 && r.output.find("is too small") != std::string::npos) return false;  // dyn, auto
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  return policy == "dyn" || policy == "auto" ? j[policy]["fits"].get<bool>()
                                             : j["configurations"][0]["fits"].get<bool>();
}

TEST(CliMaxBatch, EachPolicysLargestBatchFitsAndTheNextDoesNot) {
  const CliRun r = vdnn("plan " + kModel + " --max-batch --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["device_memory"], size_t{64} << 20);
  ASSERT_EQ(j["max_batch"].size(), 5u);
  int64_t all = 0;
  for (const auto& row : j["max_batch"]) {
    const std::string policy = row["policy"];
    const int64_t b = row["max_batch"];
    ASSERT_GT(b, 0) << policy;
    EXPECT_EQ(row["plan"]["batch"], b) << policy;
    EXPECT_TRUE(plan_fits(policy, b)) << policy << " at " << b;
    EXPECT_FALSE(plan_fits(policy, b + 1)) << policy << " at " << b + 1;
    if (policy == "all") all = b;
    if (policy == "auto") EXPECT_GE(b, all) << "auto fits whatever all fits";
  }
  const CliRun table = vdnn("plan " + kModel + " --max-batch --policy none");
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("the largest batch each policy trains in"), std::string::npos) << table.output;
}

TEST(CliMaxBatch, RefusesThisCpuAndTheFlagsItDoesNotUse) {
  expect_user_error("plan --model fmnist_cnn --max-batch", "--max-batch applies only with a device profile");
  expect_user_error("plan " + kModel + " --max-batch --batch 64", "--batch");
  expect_user_error("plan " + kModel + " --max-batch --sweep", "with --max-batch");
  expect_user_error("plan " + kModel + " --max-batch --inference", "--max-batch applies only to training plans");
}

}  // namespace test_cli_max_batch
}  // namespace vdnn::test
