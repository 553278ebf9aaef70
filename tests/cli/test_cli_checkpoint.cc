// `vdnn train --save/--checkpoint-every/--resume` and `vdnn infer` end to end: saved weights give
// the accuracy training printed, a resumed run ends where a straight one does, and bad files or
// flag combinations give one clear error line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace test_cli_checkpoint {

namespace fs = std::filesystem;

using vdnn::parse_json_text;
using vdnn::test::CliRun;
using vdnn::test::expect_user_error;
using vdnn::test::read_json_file;
using vdnn::test::temp_dir;
using vdnn::test::vdnn;

const std::string kTrain = "train --data synthetic --synthetic-samples 256 --batch 32 --progress none ";

// The hash a `vdnn train` run printed.
std::string printed_hash(const CliRun& r) {
  const std::string key = "weights_sha256 ";
  const size_t at = r.output.find(key);
  return at == std::string::npos ? "" : r.output.substr(at + key.size(), 64);
}

class CliCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir("checkpoint"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // 12 steps straight, and 6 saved then resumed to 12, with `flags`: the same weights.
  void expect_resumed_run_ends_with_the_straight_runs_weights(const std::string& flags) {
    const CliRun straight = vdnn(flags + "--iterations 12");
    ASSERT_EQ(straight.exit_code, 0) << straight.output;
    const CliRun first = vdnn(flags + "--iterations 6 --save " + path("half.safetensors"));
    ASSERT_EQ(first.exit_code, 0) << first.output;
    const CliRun resumed = vdnn(flags + "--iterations 12 --resume " + path("half.safetensors"));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_NE(resumed.output.find("at step 6 (epoch 1, 6 of its 8 batches done)"), std::string::npos) << resumed.output;
    EXPECT_EQ(printed_hash(resumed), printed_hash(straight));
    EXPECT_EQ(printed_hash(straight).size(), 64u);
  }
  fs::path dir_;
};

TEST_F(CliCheckpoint, InferOfSavedWeightsGivesTheAccuracyTrainingPrinted) {
  const CliRun t = vdnn(kTrain + "--iterations 6 --save " + path("w.safetensors") + " --report " + path("r.json"));
  ASSERT_EQ(t.exit_code, 0) << t.output;
  EXPECT_NE(t.output.find("saved " + path("w.safetensors") + " (step 6)"), std::string::npos) << t.output;
  const nlohmann::json report = read_json_file(path("r.json"));
  const CliRun i =
      vdnn("infer --model fmnist_cnn --data synthetic --synthetic-samples 256 --batch 32 --json --weights " +
           path("w.safetensors"));
  ASSERT_EQ(i.exit_code, 0) << i.output;
  const nlohmann::json j = parse_json_text(i.output, "vdnn infer --json");
  EXPECT_EQ(j["test_accuracy"].get<double>(), report["test_accuracy"].get<double>());
  EXPECT_EQ(j["weights_sha256"], report["weights_sha256"]);
  EXPECT_EQ(j["samples"], 64);
  EXPECT_EQ(j["step"], "6");
  const CliRun text = vdnn("infer --model fmnist_cnn --data synthetic --synthetic-samples 256 --batch 32 --weights " +
                           path("w.safetensors"));
  ASSERT_EQ(text.exit_code, 0) << text.output;
  char acc[16];
  std::snprintf(acc, sizeof acc, "%.4f", report["test_accuracy"].get<double>());
  EXPECT_NE(text.output.find(std::string("test acc ") + acc), std::string::npos) << text.output;
}

TEST_F(CliCheckpoint, ResumedRunEndsWithTheStraightRunsWeights) {
  expect_resumed_run_ends_with_the_straight_runs_weights(kTrain + "--lr-schedule constant --no-eval ");
}

TEST_F(CliCheckpoint, AnAugmentedRunResumesToTheStraightRunsWeightsAndRefusesAnotherAugment) {
  // The crops and flips follow (seed, epoch, position), so a resumed run draws the straight run's.
  expect_resumed_run_ends_with_the_straight_runs_weights(kTrain + "--lr-schedule constant --no-eval --augment cifar ");
  expect_user_error(kTrain + "--lr-schedule constant --no-eval --iterations 12 --resume " + path("half.safetensors"),
                    "the checkpoint was trained with --augment cifar but this run has --augment none");
}

TEST_F(CliCheckpoint, BadFilesAndFlagsGiveOneLine) {
  const std::string file = path("w.safetensors");
  ASSERT_EQ(vdnn(kTrain + "--iterations 2 --no-eval --save " + file).exit_code, 0);
  const std::string whole = [&] {
    std::ifstream in(file, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }();
  std::ofstream(path("cut.safetensors"), std::ios::binary) << whole.substr(0, whole.size() / 2);
  expect_user_error("infer --model fmnist_cnn --data synthetic --weights " + path("cut.safetensors"), "truncated");
  expect_user_error(kTrain + "--resume " + path("cut.safetensors"), "truncated");
  expect_user_error(kTrain + "--resume " + path("none.safetensors"), "does not exist");
  expect_user_error(kTrain + "--checkpoint-every 5", "--checkpoint-every applies only with --save");
  expect_user_error(kTrain + "--save " + path("no/such/dir/w.safetensors"), "does not exist");
  expect_user_error(kTrain + "--batch 16 --resume " + file, "--batch 32");
  expect_user_error("train --data synthetic --model vgg_cifar --resume " + file, "'fmnist_cnn'");
  expect_user_error("infer --model vgg_cifar --data synthetic --batch 4 --weights " + file, "vgg_cifar");
  const CliRun no_weights = vdnn("infer --model fmnist_cnn");
  EXPECT_NE(no_weights.exit_code, 0);
  EXPECT_LT(no_weights.exit_code, 128);
  EXPECT_NE(no_weights.output.find("--weights"), std::string::npos) << no_weights.output;
}

}  // namespace test_cli_checkpoint
