// `vdnn train --optimizer adamw` and its flags, `vdnn plan --optimizer`: a run with AdamW, clipping
// and warm-up reports them; each flag out of its range, or given to the other optimizer, is one
// line naming it; the plan's parameter memory grows by AdamW's second moment.
#include <gtest/gtest.h>

#include <regex>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_adamw {

const std::string kTrain =
    "train --data synthetic --synthetic-samples 8 --batch 2 --iterations 4 --no-eval --progress none ";

TEST(CliAdamw, ARunReportsItsOptimizerAndGradientNorms) {
  const auto dir = temp_dir("adamw");
  const std::string report = (dir / "run.json").string();
  const CliRun r = vdnn(kTrain +
                        "--optimizer adamw --lr 1e-3 --beta2 0.95 --warmup-steps 2 --min-lr 1e-4 "
                        "--clip-grad-norm 0.5 --report " +
                        report);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json_file(report);
  EXPECT_EQ(j["config"]["optimizer"], "adamw");
  EXPECT_EQ(j["config"]["weight_decay"], 0.01) << "AdamW's default weight decay";
  EXPECT_EQ(j["config"]["beta2"], 0.95);
  ASSERT_EQ(j["step_grad_norms"].size(), 4u);
  for (const auto& n : j["step_grad_norms"]) EXPECT_GT(n.get<double>(), 0.0);
  const nlohmann::json& by_class = j["peak_by_class"];  // the memory report, merged in
  EXPECT_EQ(by_class["optimizer_state"].get<size_t>(), 2 * by_class["weight_grads"].get<size_t>()) << by_class;
  std::filesystem::remove_all(dir);
}

TEST(CliAdamw, EachFlagIsCheckedAndBelongsToItsOptimizer) {
  expect_user_error(kTrain + "--optimizer adamw --momentum 0.5", "--momentum applies only with --optimizer sgd");
  expect_user_error(kTrain + "--beta1 0.8", "--beta1 applies only with --optimizer adamw");
  expect_user_error(kTrain + "--eps 1e-6", "--eps applies only with --optimizer adamw");
  expect_user_error(kTrain + "--optimizer adamw --beta1 1", "--beta1 1: expected 0 <= beta1 < 1");
  expect_user_error(kTrain + "--optimizer adamw --eps 0", "--eps 0: expected 1.17549e-38 (float32's smallest normal value");

  expect_user_error(kTrain + "--lr 0.1 --min-lr 0.2", "--min-lr 0.2: expected 0 to the learning rate (--lr 0.1)");
  expect_user_error(kTrain + "--lr-schedule constant --min-lr 0.01",
                    "--min-lr applies only with --lr-schedule cosine (the floor it decays to); it was given with "
                    "--lr-schedule constant");
  // Out of the flag's range: CLI11's line, naming it.
  for (const std::string& bad : {"--optimizer adam", "--clip-grad-norm -1", "--warmup-steps -3", "--beta2 2"}) {
    const CliRun r = vdnn(kTrain + bad);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.rfind(bad.substr(0, bad.find(' ')) + ":", 0), 0u) << r.output;
  }
}

// Was: 0.05 for both, twenty times torch.optim.AdamW's 1e-3 (AdamW's steps are about lr per weight).
TEST(CliAdamw, TheDefaultLearningRateIsTheOptimizers) {
  const auto dir = temp_dir("adamw_lr");
  const std::string report = (dir / "run.json").string();
  const auto lr_of = [&](const std::string& flags) {
    const CliRun r = vdnn(kTrain + flags + " --report " + report);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.exit_code == 0 ? read_json_file(report)["config"]["lr"].get<double>() : -1.0;
  };
  EXPECT_EQ(lr_of("--optimizer adamw"), 1e-3);
  EXPECT_EQ(lr_of("--optimizer sgd"), 0.05);
  EXPECT_EQ(lr_of("--optimizer adamw --lr 0.01"), 0.01) << "a given --lr is kept";
  const CliRun help = vdnn("train --help");
  EXPECT_NE(help.output.find("default: 0.05 with --optimizer sgd, 0.001 with adamw"), std::string::npos) << help.output;
  std::filesystem::remove_all(dir);
}

// The "params" column (weights + gradients + optimizer state, MiB) of the `none` row.
double params_mib(const std::string& table) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(table, m, std::regex(R"(\nnone\S*\s+\S+\s+\S+\s+\S+\s+(\S+))"))) << table;
  return m.empty() ? 0.0 : std::stod(m[1]);
}

TEST(CliAdamw, PlanCountsTheSecondMoment) {
  const std::string plan = "plan --model vgg_cifar --batch 32 --device titan-x-maxwell --policy none";
  const CliRun sgd = vdnn(plan), adamw = vdnn(plan + " --optimizer adamw");
  ASSERT_EQ(sgd.exit_code, 0) << sgd.output;
  ASSERT_EQ(adamw.exit_code, 0) << adamw.output;
  // weights + grads + momentum = 3 parts; AdamW: 4 parts of the same size.
  EXPECT_NEAR(params_mib(adamw.output) / params_mib(sgd.output), 4.0 / 3.0, 1e-3) << sgd.output << adamw.output;
}

}  // namespace test_cli_adamw
}  // namespace vdnn::test
