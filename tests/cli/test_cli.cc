// The `vdnn` binary end to end: bad input gives one clear line and a non-zero exit, never a crash;
// a short synthetic run writes the report fields.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "cli/cli_run.h"

namespace test_cli {

namespace fs = std::filesystem;

using vdnn::test::CliRun;
using vdnn::test::expect_user_error;
using vdnn::test::read_json_file;
using vdnn::test::temp_dir;
using vdnn::test::vdnn;

TEST(Cli, NonsenseFlagValuesAreRejected) {
  for (const char* args : {"train --batch abc", "train --batch 0", "train --lr -1", "train --lr-schedule sometimes",
                           "train --epochs 1.5", "train --bogus", "frobnicate"}) {
    const CliRun r = vdnn(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_LT(r.exit_code, 128) << "crashed: " << args;
    EXPECT_FALSE(r.output.empty()) << args;
  }
  const CliRun r = vdnn("train --batch abc");
  EXPECT_NE(r.output.find("--batch"), std::string::npos) << r.output;
}

TEST(Cli, MissingDataFolder) { expect_user_error("train --data /nonexistent/fmnist", "/nonexistent/fmnist"); }

TEST(Cli, TruncatedIdxFile) {
  const fs::path dir = temp_dir("trunc");
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                           "t10k-labels-idx1-ubyte.gz"}) {
    gzFile f = gzopen((dir / name).c_str(), "wb");
    const unsigned char header[] = {0, 0, 8, 3, 0, 0, 0, 100, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3};
    gzwrite(f, header, sizeof header);
    gzclose(f);
  }
  expect_user_error("train --data " + dir.string(), "truncated");
  fs::remove_all(dir);
}

TEST(Cli, MalformedAndInconsistentModelFiles) {
  const fs::path dir = temp_dir("models");
  std::ofstream(dir / "broken.json") << "{\"name\": \"x\", \"layers\": [";
  expect_user_error("train --data synthetic --model " + (dir / "broken.json").string(), "not valid JSON");
  std::ofstream(dir / "wrong.json") << R"({"input": [1, 28, 28], "classes": 10, "layers": [
             {"name": "c", "type": "conv", "channels": 4, "kernel": 3},
             {"name": "fc", "type": "fc", "units": 9},
             {"name": "loss", "type": "softmax_cross_entropy"}]})";
  expect_user_error("train --data synthetic --model " + (dir / "wrong.json").string(), "9 logits");
  expect_user_error("train --model no_such_model", "no_such_model");
  fs::remove_all(dir);
}

TEST(Cli, DataThatDoesNotFitTheModel) {
  expect_user_error("train --model vgg_cifar --iterations 1", "expects 3x32x32");
}

TEST(Cli, SyntheticRunWritesTheReport) {
  const fs::path dir = temp_dir("report");
  const fs::path report = dir / "r.json";
  const CliRun r =
      vdnn("train --data synthetic --synthetic-samples 256 --batch 32 --iterations 5 --report " + report.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json_file(report);
  for (const char* key : {"final_loss", "test_accuracy", "images_per_second", "iterations", "weights_sha256"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["iterations"], 5);
  EXPECT_EQ(j["weights_sha256"].get<std::string>().size(), 64u);
  EXPECT_GT(j["images_per_second"].get<double>(), 0.0);
  fs::remove_all(dir);
}

TEST(Cli, TooSmallBudgetNamesTheSmallestThatWorks) {
  const CliRun r = vdnn("train --data synthetic --device-memory 4MiB --policy all --iterations 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  for (const char* f :
       {"error: --device-memory 4.00 MiB (4194304 bytes) is too small", "needs at least", "smallest budget by policy"})
    EXPECT_NE(r.output.find(f), std::string::npos) << f << " not in: " << r.output;
  const CliRun bad = vdnn("train --data synthetic --device-memory 12parsecs");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("--device-memory"), std::string::npos) << bad.output;
}

TEST(Cli, HostMemoryBelowThePlansHostCopiesIsRefusedBeforeTrainingAndExactlyItTrains) {
  const fs::path dir = temp_dir("host");
  const std::string args =
      "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 2 --no-eval "
      "--policy all --report " +
      (dir / "r.json").string();
  const CliRun r = vdnn(args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json_file(dir / "r.json");
  const size_t host = j["host_bytes"].get<size_t>();
  ASSERT_GT(host, 0u) << j.dump();
  const CliRun small = vdnn(args + " --host-memory " + std::to_string(host - 1));
  EXPECT_EQ(small.exit_code, 1) << small.output;
  EXPECT_NE(small.output.find("(" + std::to_string(host) + " bytes), the smallest --host-memory that works"),
            std::string::npos)
      << small.output;
  EXPECT_EQ(small.output.find("epoch"), std::string::npos) << "trained before refusing: " << small.output;
  const CliRun exact = vdnn(args + " --host-memory " + std::to_string(host));
  EXPECT_EQ(exact.exit_code, 0) << exact.output;
  EXPECT_EQ(read_json_file(dir / "r.json")["host_memory_bytes"].get<size_t>(), host);
  fs::remove_all(dir);
}

TEST(Cli, ConvSubBatchesTrainTheSameUnderEveryPolicyAndBadCountsNameTheFlag) {
  const fs::path dir = temp_dir("sub_batches");
  const std::string args =
      "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 2 --no-eval "
      "--conv-sub-batches 4 --report " +
      (dir / "r.json").string();
  const CliRun none = vdnn(args);
  ASSERT_EQ(none.exit_code, 0) << none.output;
  const std::string sha = read_json_file(dir / "r.json")["weights_sha256"].get<std::string>();
  const CliRun all = vdnn(args + " --policy all");
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_EQ(read_json_file(dir / "r.json")["weights_sha256"].get<std::string>(), sha);
  const CliRun odd =
      vdnn("train --data synthetic --synthetic-samples 64 --batch 32 --iterations 1 --conv-sub-batches 3");
  EXPECT_EQ(odd.exit_code, 1) << odd.output;
  EXPECT_NE(odd.output.find("--conv-sub-batches 3 must divide --batch 32"), std::string::npos) << odd.output;
  const CliRun planned = vdnn(
      "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 1 "
      "--conv-sub-batches 2 --policy auto --device-memory 1GiB");
  EXPECT_EQ(planned.exit_code, 1) << planned.output;
  EXPECT_NE(planned.output.find("--conv-sub-batches applies only with --policy none, all or conv"), std::string::npos) << planned.output;
  fs::remove_all(dir);
}

TEST(Cli, SliceRunsTrainTheSameUnderEveryPolicyAndBadRunsNameTheRun) {
  const fs::path dir = temp_dir("slice_runs");
  const std::string args =
      "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 2 --no-eval "
      "--slice-run conv1:4 --slice-run relu1:pool1:2 --report " +
      (dir / "r.json").string();
  const CliRun none = vdnn(args);
  ASSERT_EQ(none.exit_code, 0) << none.output;
  const nlohmann::json report = read_json_file(dir / "r.json");
  const std::string sha = report["weights_sha256"].get<std::string>();
  EXPECT_EQ(report["slice_runs"], nlohmann::json({"conv1:4", "relu1:pool1:2"})) << report.dump();
  const CliRun all = vdnn(args + " --policy all");
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_EQ(read_json_file(dir / "r.json")["weights_sha256"].get<std::string>(), sha);
  // A batch norm in a run (its statistics pass), the same under none and all.
  const std::string bn_args =
      "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 2 --no-eval "
      "--slice-run conv2:pool2:4 --report " +
      (dir / "bn.json").string();
  ASSERT_EQ(vdnn(bn_args).exit_code, 0);
  const std::string bn_sha = read_json_file(dir / "bn.json")["weights_sha256"].get<std::string>();
  ASSERT_EQ(vdnn(bn_args + " --policy all").exit_code, 0);
  EXPECT_EQ(read_json_file(dir / "bn.json")["weights_sha256"].get<std::string>(), bn_sha);
  // Evaluated with the running averages the slices folded in: the whole batch's test loss.
  const std::string eval_args = "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 2 --report ";
  ASSERT_EQ(vdnn(eval_args + (dir / "whole.json").string()).exit_code, 0);
  ASSERT_EQ(vdnn(eval_args + (dir / "sliced.json").string() + " --slice-run conv1:pool1:4").exit_code, 0);
  const double whole_loss = read_json_file(dir / "whole.json")["epochs"][0]["test_loss"].get<double>();
  EXPECT_NEAR(read_json_file(dir / "sliced.json")["epochs"][0]["test_loss"].get<double>(), whole_loss,
              1e-5 * whole_loss);
  const CliRun drop =
      vdnn("train --data synthetic --synthetic-samples 64 --batch 32 --iterations 1 --slice-run fc1:drop1:2");
  EXPECT_EQ(drop.exit_code, 1) << drop.output;
  EXPECT_NE(drop.output.find("slice run 'fc1:drop1:2'"), std::string::npos) << drop.output;
  EXPECT_NE(drop.output.find("layer 'drop1'"), std::string::npos) << drop.output;
  // auto plans the sliced graph: its per-value decisions and per-layer algorithms index it.
  const CliRun planned = vdnn(
      "train --data synthetic --synthetic-samples 64 --batch 32 --iterations 1 --no-eval "
      "--slice-run conv1:2 --policy auto --device-memory 1GiB --report " +
      (dir / "auto.json").string());
  ASSERT_EQ(planned.exit_code, 0) << planned.output;
  const nlohmann::json a = read_json_file(dir / "auto.json");
  EXPECT_EQ(a["slice_runs"], nlohmann::json({"conv1:2"}));
  EXPECT_EQ(a["decisions"]["layers"][1]["layer"], "conv1/s0") << a["decisions"].dump();
  fs::remove_all(dir);
}

TEST(Cli, BackendCudaTrainsOrFailsWithOneLineNamingTheReason) {
  const std::string why = ::vdnn::backend_unavailable_reason(::vdnn::BackendKind::kCuda);
  const std::string args =
      "train --backend cuda --data synthetic --synthetic-samples 64 --batch 16 --iterations 3 --no-eval";
  if (!why.empty()) {  // no driver here: "error: --backend cuda: cudaGetDeviceCount: ... (..., error 35)"
    expect_user_error(args, "error: --backend cuda: " + why);
    return;
  }
  const CliRun r = vdnn(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("weights_sha256"), std::string::npos) << r.output;
}

TEST(Cli, PlanPrintsEveryPolicyAndTheProgram) {
  const CliRun r = vdnn("plan --model fmnist_dag --batch 8 --device-memory 64MiB");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"none", "conv", "all", "min budget", "yes"})
    EXPECT_NE(r.output.find(f), std::string::npos) << f;
  const CliRun p = vdnn("plan --model fmnist_dag --batch 8 --policy all --print");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  for (const char* f : {"offload", "prefetch", "wait", "backward res_add", "phase_end"})
    EXPECT_NE(p.output.find(f), std::string::npos) << f;
}

TEST(Cli, ModelsListsTheShippedNetworks) {
  const CliRun r = vdnn("models");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* name : {"fmnist_cnn", "fmnist_dag", "vgg_cifar"})
    EXPECT_NE(r.output.find(name), std::string::npos) << name;
}

}  // namespace test_cli
