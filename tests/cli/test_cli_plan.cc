// `vdnn plan` and `vdnn profile` end to end: every configuration with a predicted time, dyn's
// choice and its reason, an impossible budget that names the minimum, measured costs that
// round-trip through a file, and one clear line for every kind of bad input.
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace {

TEST(CliPlan, AnswersForVgg16OnTheTitanXWithEveryConfigurationAndDynsChoice) {
  const CliRun r = vdnn("plan --model vgg16 --batch 256 --device titan-x-maxwell --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["device"], "titan-x-maxwell");
  EXPECT_EQ(j["device_memory"], size_t{12} << 30) << "the profile's memory is the default budget";
  std::vector<std::string> labels;
  for (const auto& c : j["configurations"]) {
    labels.push_back(c["configuration"]);
    EXPECT_GT(c["iteration_seconds"].get<double>(), 0.0);
    EXPECT_GE(c["ratio_to_bound"].get<double>(), 1.0 - 1e-9);
    EXPECT_GE(c["overhead_vs_oracle"].get<double>(), -1e-9);
  }
  for (const char* want : {"none+leanest", "none+fastest", "conv+fastest", "all+fastest"})
    EXPECT_NE(std::find(labels.begin(), labels.end(), want), labels.end()) << want;
  EXPECT_TRUE(j["dyn"]["fits"]);
  EXPECT_GE(j["dyn"]["step"].get<int>(), 5) << "VGG-16 at 256 fits 12 GiB only with offloading and leaner algorithms";
  EXPECT_EQ(j["configurations"].back()["fits"], true);
}

TEST(CliPlan, AGenerousBudgetKeepsEverythingAndAnImpossibleOneNamesTheMinimum) {
  const CliRun easy = vdnn("plan --model vgg16 --batch 32 --device h200");
  ASSERT_EQ(easy.exit_code, 0) << easy.output;
  EXPECT_NE(easy.output.find("dyn picks none+fastest (step 2)"), std::string::npos) << easy.output;
  const CliRun hard = vdnn("plan --model vgg16 --batch 256 --device titan-x-maxwell --device-memory 2GiB");
  EXPECT_EQ(hard.exit_code, 1) << hard.output;
  EXPECT_NE(hard.output.find("error: --device-memory 2.00 GiB (2147483648 bytes) is too small"), std::string::npos) << hard.output;
  EXPECT_NE(hard.output.find("needs at least"), std::string::npos) << hard.output;
}

TEST(CliPlan, MeasuredCostsRoundTripThroughAFile) {
  const auto dir = temp_dir("costs");
  const std::string file = (dir / "costs.json").string();
  const CliRun p = vdnn("profile --model fmnist_dag --batch 8 --repeats 1 --save " + file);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  for (const char* f : {"stem", "winograd", "fwd ms", "link"}) EXPECT_NE(p.output.find(f), std::string::npos) << f;
  const CliRun r = vdnn("plan --model fmnist_dag --batch 8 --costs " + file + " --device-memory 64MiB");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"none+fastest", "conv+fastest", "all+fastest", "dyn picks", "measured on cpu"})
    EXPECT_NE(r.output.find(f), std::string::npos) << f << " not in " << r.output;
  expect_user_error("plan --model fmnist_dag --batch 16 --costs " + file, "measured at batch 8");
  expect_user_error("plan --model fmnist_cnn --batch 8 --costs " + file, "does not match model");
  std::ofstream(dir / "broken.json") << "{\"source\": 1}";
  expect_user_error("plan --model fmnist_dag --batch 8 --costs " + (dir / "broken.json").string(), "broken.json");
}

TEST(CliPlan, BadDevicesProfilesAndModelsGetOneClearLine) {
  expect_user_error("plan --model vgg16 --device titan-z", "titan-x-maxwell");
  const auto dir = temp_dir("profiles");
  std::ofstream(dir / "gpu.json") << "{ not json";
  expect_user_error("plan --model vgg16 --device " + (dir / "gpu.json").string(), "gpu.json");
  expect_user_error("plan --model vgg16 --device titan-x-maxwell --link pcie9", "pcie3");
  expect_user_error("plan --model vgg16 --input 3x8x8 --device titan-x-maxwell", "vgg16");
  expect_user_error("train --data synthetic --policy dyn --iterations 1", "--policy dyn needs --device-memory");
  const CliRun small = vdnn("train --data synthetic --policy dyn --device-memory 1MiB --iterations 1");
  EXPECT_EQ(small.exit_code, 1) << small.output;
  EXPECT_NE(small.output.find("error: --device-memory 1.00 MiB (1048576 bytes) is too small"), std::string::npos) << small.output;
  EXPECT_NE(small.output.find("needs at least"), std::string::npos) << small.output;
}

TEST(CliTrain, DynPicksAConfigurationThatTrainsInTheBudget) {
  const CliRun r = vdnn("train --data synthetic --policy dyn --device-memory 48MiB --iterations 2 --no-eval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dyn picks all"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("device memory 48.00 MiB"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace vdnn::test
