// What `vdnn train` tells its user: the report's decisions (kernel and convolution algorithm per
// layer and why, what is offloaded), memory averages by class, and progress lines in a log.
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_report {

nlohmann::json train_report(const std::string& flags) {
  const auto dir = temp_dir("report_decisions");
  const auto file = dir / "r.json";
  const CliRun r = vdnn("train --data synthetic --synthetic-samples 128 --batch 32 --iterations 3 --no-eval " + flags +
                        " --report " + file.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return read_json_file(file);
}

TEST(CliReport, SaysWhatEachLayerRunsAndWhatIsOffloaded) {
  const nlohmann::json j = train_report("--policy all --conv-algo direct");
  const auto& d = j["decisions"];
  EXPECT_EQ(d["policy"], "all");
  EXPECT_GT(d["offloaded_bytes_per_step"].get<size_t>(), 0u);
  int convs = 0, offloaded = 0;
  for (const auto& layer : d["layers"]) {
    EXPECT_FALSE(layer["implementation"].get<std::string>().empty()) << layer.dump();
    offloaded += static_cast<int>(layer["offloaded"].size());
    if (layer["type"] == "conv") {
      ++convs;
      EXPECT_EQ(layer["conv_algorithm"], "direct");
      EXPECT_EQ(layer["why"], "--conv-algo direct");
    }
  }
  EXPECT_EQ(convs, 2);
  EXPECT_GT(offloaded, 0);
  double sum = 0;
  for (const auto& [cls, bytes] : j["average_by_class"].items()) sum += bytes.get<double>();
  EXPECT_NEAR(sum, j["average_device_bytes"].get<double>(), 1.0);
  EXPECT_EQ(train_report("--policy none")["decisions"]["offloaded_bytes_per_step"], 0);
}

// A layer on oneDNN's reference kernel is named once on stderr and in the report: LRN of size 1
// runs lrn_ref (oneDNN 2.6's JIT LRN crashes there, docs/reliability.md); the convolutions do not.
TEST(CliReport, LayersOnAReferenceKernelAreNamedInTheReportAndOnceOnStderr) {
  const auto dir = temp_dir("report_slow");
  const auto model = dir / "lrn1.json";
  std::ofstream(model) << R"({"name": "lrn1", "input": [1, 12, 12], "classes": 10, "layers": [
      {"name": "c1", "type": "conv", "channels": 8, "kernel": 3, "pad": 1},
      {"name": "n1", "type": "lrn", "size": 1}, {"name": "f", "type": "flatten"},
      {"name": "fc", "type": "fc", "units": "classes"}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const auto file = dir / "r.json";
  const CliRun r = vdnn("train --model " + model.string() + " --data synthetic --synthetic-samples 64 --batch 16 " +
                        "--iterations 2 --progress none --report " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string warning = "warning: layer 'n1' (lrn) runs oneDNN's reference kernel (forward: ";
  const size_t at = r.output.find(warning);
  EXPECT_NE(at, std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(warning, at + 1), std::string::npos) << "warned twice: " << r.output;
  EXPECT_EQ(r.output.find("warning: layer 'c1'"), std::string::npos) << r.output;
  const nlohmann::json j = read_json_file(file);
  for (const auto& layer : j["decisions"]["layers"]) {
    const auto& slow = layer["slow_kernels"];
    if (layer["layer"] == "n1") {
      ASSERT_FALSE(slow.empty()) << layer.dump();
      EXPECT_EQ(slow[0], "forward: " + layer["implementation"].get<std::string>()) << layer.dump();
    } else {
      EXPECT_TRUE(slow.empty()) << layer.dump();
    }
  }
}

TEST(CliReport, DynExplainsItsAlgorithms) {
  const nlohmann::json j = train_report("--policy dyn --device-memory 40MiB");
  for (const auto& layer : j["decisions"]["layers"])
    if (layer["type"] == "conv") EXPECT_EQ(layer["why"].get<std::string>().rfind("dyn step ", 0), 0u) << layer.dump();
}

TEST(CliProgress, LogsGetPlainLinesAndNoEscapeCodes) {
  const CliRun r =
      vdnn("train --data synthetic --synthetic-samples 512 --batch 32 --epochs 1 --no-eval --progress lines");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos);
  EXPECT_NE(r.output.find("epoch   1"), std::string::npos) << r.output;
  const CliRun bar =
      vdnn("train --data synthetic --synthetic-samples 512 --batch 32 --epochs 1 --no-eval --progress bar");
  ASSERT_EQ(bar.exit_code, 0) << bar.output;
  EXPECT_NE(bar.output.find("\r"), std::string::npos) << "a bar was drawn";
  EXPECT_NE(bar.output.find("img/s"), std::string::npos);
}

}  // namespace test_cli_report
}  // namespace vdnn::test
