// `vdnn train --precision`: bf16 is reported and halves the offloaded bytes; what it does not run
// with yet, and a CPU without native bf16, get one clear line.
#include <nlohmann/json.hpp>

#include <filesystem>

#include "backends/cpu/cpu_isa.h"
#include "cli/cli_run.h"
#include "io/npy.h"

namespace vdnn::test {
namespace test_cli_precision {

nlohmann::json precision_report(const std::string& precision) {
  const auto dir = temp_dir("precision_" + precision);
  const auto file = dir / "r.json";
  const CliRun r = vdnn(
      "train --data synthetic --synthetic-samples 128 --batch 32 --iterations 2 --no-eval "
      "--policy all --precision " +
      precision + " --report " + file.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return read_json_file(file);
}

TEST(CliPrecision, Bf16IsReportedAndHalvesTheOffloadedBytes) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  const nlohmann::json f32 = precision_report("fp32"), bf16 = precision_report("bf16");
  EXPECT_EQ(f32["precision"], "fp32");
  EXPECT_EQ(bf16["precision"], "bf16");
  const double a = f32["offloaded_bytes_per_iteration"], b = bf16["offloaded_bytes_per_iteration"];
  ASSERT_GT(a, 0);
  // fmnist_cnn: 32-channel maps, no padding either way; the pooling argmax (a byte per output) does
  // not shrink, which puts the ratio a little above one half (0.53).
  EXPECT_GE(b / a, 0.5) << a << " " << b;
  EXPECT_LE(b / a, 0.55) << a << " " << b;
  EXPECT_LT(bf16["peak_device_bytes"].get<double>(), f32["peak_device_bytes"].get<double>());
}

TEST(CliPrecision, WhatBf16DoesNotRunWithIsOneLine) {
  const CliRun fp16 = vdnn("train --precision fp16");  // CLI11's own check of the choices
  EXPECT_NE(fp16.exit_code, 0);
  EXPECT_NE(fp16.output.find("--precision: fp16 not in {fp32,bf16}"), std::string::npos) << fp16.output;
  expect_user_error("train --precision bf16 --backend cuda", "runs on --backend cpu only");
  if (!cpu_has_native_bf16()) return;  // the lines below get the ISA refusal first there
  expect_user_error("train --precision bf16 --conv-algo winograd", "oneDNN 2.6 has no bf16 Winograd");
  expect_user_error("plan --precision bf16 --slice-run conv1:pool1:2", "does not combine with --precision bf16");
  const CliRun sliced = vdnn("train --data synthetic --precision bf16 --slice-run conv1:pool1:2");
  EXPECT_EQ(sliced.exit_code, 1) << sliced.output;
  EXPECT_NE(sliced.output.find("error: slice runs (--slice-run) do not combine with --precision bf16"),
            std::string::npos)
      << sliced.output;
}

TEST(CliPrecision, ACpuWithoutNativeBf16IsRefusedByName) {
  // oneDNN reads DNNL_MAX_CPU_ISA once per process: cap it below AVX512_BF16 in a child.
  const CliRun r = run_command("DNNL_MAX_CPU_ISA=AVX512_CORE_VNNI " + std::string(VDNN_BINARY) +
                               " train --data synthetic --precision bf16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("needs a CPU with native bfloat16 instructions (AVX512_BF16 or AMX)"), std::string::npos)
      << r.output;
  // oneDNN reports the lower of the cap and what the CPU has: the cap wherever bf16 runs natively.
  if (cpu_has_native_bf16()) EXPECT_NE(r.output.find("avx512_core_vnni"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DNNL_MAX_CPU_ISA is set"), std::string::npos) << r.output;
}

// The class each row of a [samples, classes] logits array picks.
std::vector<int64_t> argmax_rows(const NpyArray& logits) {
  std::vector<int64_t> out;
  const int64_t classes = logits.shape[1];
  for (int64_t n = 0; n < logits.shape[0]; ++n) {
    const float* row = logits.data.data() + n * classes;
    out.push_back(std::max_element(row, row + classes) - row);
  }
  return out;
}

TEST(CliPrecision, InferInBf16AgreesWithFp32OnFashionMnist) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  const auto dir = temp_dir("precision_infer");
  const std::string weights = (dir / "w.safetensors").string();
  const CliRun t = vdnn("train --batch 64 --iterations 150 --no-eval --progress none --save " + weights);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  nlohmann::json result[2];
  NpyArray logits[2];
  const char* precisions[2] = {"fp32", "bf16"};
  for (int i = 0; i < 2; ++i) {
    const std::string file = (dir / (std::string(precisions[i]) + ".npy")).string();
    const CliRun r = vdnn("infer --model fmnist_cnn --json --weights " + weights + " --precision " + precisions[i] +
                          " --logits " + file);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    result[i] = parse_json_text(r.output, "vdnn infer --json");
    logits[i] = read_npy(file);
  }
  EXPECT_EQ(result[1]["precision"], "bf16");
  ASSERT_EQ(logits[0].shape, logits[1].shape);
  const std::vector<int64_t> a = argmax_rows(logits[0]), b = argmax_rows(logits[1]);
  int64_t same = 0;
  for (size_t n = 0; n < a.size(); ++n) same += a[n] == b[n];
  const double agreement = static_cast<double>(same) / static_cast<double>(a.size());
  std::printf("fmnist_cnn after 150 steps: test accuracy fp32 %.4f, bf16 %.4f; the same class for %.2f%% of %zu\n",
              result[0]["test_accuracy"].get<double>(), result[1]["test_accuracy"].get<double>(), 100 * agreement,
              a.size());
  EXPECT_GE(agreement, 0.99);
  EXPECT_NEAR(result[1]["test_accuracy"].get<double>(), result[0]["test_accuracy"].get<double>(), 5e-3);
  std::filesystem::remove_all(dir);
}

nlohmann::json plan_json(const std::string& flags) {
  const CliRun r = vdnn("plan --model fmnist_cnn --batch 32 --policy all --repeats 1 --json " + flags);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.output.find("\n{");  // after any warning of unstable timings
  return parse_json_text(r.output.starts_with("{") || at == std::string::npos ? r.output : r.output.substr(at + 1),
                         "vdnn plan --json");
}

TEST(CliPrecision, PlanSizesAndCostsTheBf16Kernels) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  const nlohmann::json f32 = plan_json(""), bf16 = plan_json("--precision bf16");
  const nlohmann::json &a = f32["configurations"][0], &b = bf16["configurations"][0];
  const double maps = a["peak_by_class"]["feature_maps"], maps16 = b["peak_by_class"]["feature_maps"];
  const double grads = a["peak_by_class"]["gradient_maps"], grads16 = b["peak_by_class"]["gradient_maps"];
  const double host = a["host_bytes"], host16 = b["host_bytes"];
  EXPECT_NEAR(maps16 / maps, 0.5, 0.03) << maps << " " << maps16;
  EXPECT_NEAR(grads16 / grads, 0.5, 0.03) << grads << " " << grads16;
  EXPECT_GE(host16 / host, 0.5) << host << " " << host16;  // what `all` offloads: argmax as above
  EXPECT_LE(host16 / host, 0.55) << host << " " << host16;
  // fp32 master weights either way, in layouts that may pad differently
  EXPECT_NEAR(a["peak_by_class"]["weights"].get<double>(), b["peak_by_class"]["weights"].get<double>(),
              0.01 * a["peak_by_class"]["weights"].get<double>());
}

TEST(CliPrecision, CostsCarryTheirPrecisionAndAGpuWithoutBf16RefusesIt) {
  // Maxwell has no bf16 arithmetic; the GPU profiles that do plan it (test_cuda_target_bf16.cc).
  expect_user_error("plan --model vgg16 --batch 8 --device titan-x-maxwell --precision bf16",
                    "device profile 'titan-x-maxwell' has no bf16 arithmetic");
  if (!cpu_has_native_bf16()) return;
  const auto dir = temp_dir("precision_costs");
  const std::string costs = (dir / "c.json").string();
  const CliRun p = vdnn("profile --batch 32 --repeats 1 --progress none --save " + costs);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  EXPECT_EQ(read_json_file(costs)["precision"], "fp32");
  expect_user_error("plan --batch 32 --policy all --costs " + costs + " --precision bf16",
                    "was measured in fp32, not bf16; profile again with `vdnn profile --precision bf16`");
  std::filesystem::remove_all(dir);
}

TEST(CliPrecision, TheAutoPolicyTrainsInBf16WhereFp32DoesNotFit) {
  if (!cpu_has_native_bf16()) GTEST_SKIP() << "oneDNN reports " << cpu_isa_name() << ": no native bf16";
  const auto dir = temp_dir("precision_auto");
  const auto file = dir / "r.json";
  // fmnist_cnn at batch 32: fp32 needs 18.74 MiB at least (`all`, leanest algorithms; measured here).
  const std::string run =
      "train --data synthetic --synthetic-samples 128 --batch 32 --iterations 3 --no-eval "
      "--policy auto --device-memory 16MiB --report " +
      file.string();
  const CliRun f32 = vdnn(run);
  EXPECT_EQ(f32.exit_code, 1) << f32.output;
  EXPECT_NE(f32.output.find("is too small for model 'fmnist_cnn' at batch 32 with policy auto"), std::string::npos)
      << f32.output;
  const CliRun r = vdnn(run + " --precision bf16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = read_json_file(file);
  EXPECT_EQ(j["precision"], "bf16");
  EXPECT_LE(j["device_memory_bytes"].get<size_t>(), size_t{16} << 20);
  std::filesystem::remove_all(dir);
}

}  // namespace test_cli_precision
}  // namespace vdnn::test
