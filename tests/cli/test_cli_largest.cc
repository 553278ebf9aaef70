// `vdnn plan --max-batch` and `--max-seq-len` (planning/largest_fitting.h, tools/plan_largest.h): on a
// device profile, per policy, the largest batch (token input length) that trains in the budget is one
// `vdnn plan --batch B` (`--input T`) says fits, with the next refused or the position table's end;
// the flags they do not use are refused, and so is this CPU (costs measured at one size).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cli_run.h"

namespace vdnn::test {
namespace test_cli_largest {

const std::string kModel = "--model fmnist_cnn --device titan-x-maxwell --device-memory 64MiB";

// Whether `vdnn plan --batch B --policy P` fits: its row (none, conv, all) or its choice (dyn, auto).
bool plan_fits(const std::string& policy, int64_t batch, const std::string& model = kModel,
               const std::string& size = " --batch ") {
  const CliRun r = vdnn("plan " + model + (policy == "auto" ? " --no-slice-search" : "") + " --json --policy " +
                        policy + size + std::to_string(batch));
  if (r.exit_code == 1 && r.output.find("is too small") != std::string::npos) return false;  // dyn, auto
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  return policy == "dyn" || policy == "auto" ? j[policy]["fits"].get<bool>()
                                             : j["configurations"][0]["fits"].get<bool>();
}

TEST(CliLargest, EachPolicysLargestBatchFitsAndTheNextDoesNot) {
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

// GPT-2 small at batch 32 with AdamW in a V100's 16 GiB: none and conv stop short of the 1024
// positions, all reaches them.
TEST(CliLargest, TheLongestSequenceFitsAndTheNextDoesNotOrIsPastThePositions) {
  const std::string gpt2 = "--model gpt2 --device v100-16gb --optimizer adamw --batch 32";
  const CliRun r = vdnn("plan " + gpt2 + " --max-seq-len --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["batch"], 32);
  EXPECT_EQ(j["cap"], "the 1024 positions of 'transformer.wpe'");
  ASSERT_EQ(j["max_seq_len"].size(), 5u);
  std::map<std::string, int64_t> longest;
  for (const auto& row : j["max_seq_len"]) longest[row["policy"]] = row["max_seq_len"];
  EXPECT_LT(longest["none"], 1024);
  EXPECT_EQ(longest["all"], 1024);
  for (const std::string policy : {"none", "all"}) {
    EXPECT_TRUE(plan_fits(policy, longest[policy], gpt2, " --input ")) << policy;
    if (longest[policy] < 1024) EXPECT_FALSE(plan_fits(policy, longest[policy] + 1, gpt2, " --input ")) << policy;
  }
  expect_user_error("plan --model fmnist_cnn --device v100-16gb --max-seq-len", "has no token input");
  expect_user_error("plan " + gpt2 + " --max-seq-len --input 64", "--input applies only without --max-seq-len");
}

// Several devices: each one's table is what that device alone answers, in the order given; and
// the state in host memory (an AdamW GPT-2 on a V100's 16 GiB) fits a larger batch under none.
TEST(CliLargest, SeveralDevicesEachAnswerAsAlone) {
  const std::string model = "--model fmnist_cnn --device-memory 64MiB --max-batch --policy all --json";
  const CliRun both = vdnn("plan " + model + " --device titan-x-maxwell,v100-16gb");
  ASSERT_EQ(both.exit_code, 0) << both.output;
  const auto j = nlohmann::json::parse(both.output);
  ASSERT_EQ(j["devices"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const std::string device = i == 0 ? "titan-x-maxwell" : "v100-16gb";
    const CliRun alone = vdnn("plan " + model + " --device " + device);
    ASSERT_EQ(alone.exit_code, 0) << alone.output;
    EXPECT_EQ(j["devices"][i], nlohmann::json::parse(alone.output)) << device;
  }
  const std::string gpt2 = "plan --model gpt2 --device v100-16gb --optimizer adamw --max-batch --policy none --json";
  const CliRun device = vdnn(gpt2), host = vdnn(gpt2 + " --optimizer-state host");
  ASSERT_EQ(device.exit_code, 0) << device.output;
  ASSERT_EQ(host.exit_code, 0) << host.output;
  const auto on_host = nlohmann::json::parse(host.output);
  EXPECT_EQ(on_host["optimizer_state"], "host");
  EXPECT_GT(on_host["max_batch"][0]["max_batch"], nlohmann::json::parse(device.output)["max_batch"][0]["max_batch"]);
}

TEST(CliLargest, RefusesThisCpuAndTheFlagsItDoesNotUse) {
  expect_user_error("plan --model fmnist_cnn --max-batch", "--max-batch applies only with device profiles");
  expect_user_error("plan --model fmnist_cnn --device v100-16gb,cpu --max-batch",
                    "--max-batch applies only with device profiles");
  expect_user_error("plan " + kModel + " --max-batch --batch 64", "--batch");
  expect_user_error("plan " + kModel + " --max-batch --optimizer-state auto",
                    "--optimizer-state auto plans one batch on one device both ways; with --max-batch give");
  expect_user_error("plan --model fmnist_cnn --device titan-x-maxwell,h100 --optimizer-state auto",
                    "with --device titan-x-maxwell,h100 give --optimizer-state device or host");
  expect_user_error("plan " + kModel + " --scaling --network hdr-infiniband --optimizer-state host",
                    "--optimizer-state host with --scaling: state in host memory is planned for one rank");
  expect_user_error("plan " + kModel + " --max-batch --sweep", "with --max-batch");
  expect_user_error("plan " + kModel + " --max-batch --inference", "--max-batch applies only to training plans");
}

}  // namespace test_cli_largest
}  // namespace vdnn::test
