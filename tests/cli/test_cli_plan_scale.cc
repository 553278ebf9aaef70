// Planning scales to SuperNeurons' depths (ResNet-2500, ~10^4 layers): `vdnn plan` answers for a
// chain of 10,000 in-place ReLUs and for a ResNet of 10,002 layers within a minute. This guards the
// complexity, not the speed: before, the chain took more than 10 minutes (the program builder
// rescanned every storage per layer and per earlier layer, O(n^3)); now both take 2-7 s on an idle
// machine (docs/benchmarks.md, plan/planner.h), and a loaded CI run took 15 s, so the bound leaves
// room for load and none for a return of the cubic pass.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_plan_scale {

nlohmann::json layer(const std::string& type, const std::string& name,
                     nlohmann::json fields = nlohmann::json::object()) {
  fields["type"] = type;
  fields["name"] = name;
  return fields;
}

std::string write_model(const std::filesystem::path& dir, const std::string& name, const nlohmann::json& layers) {
  const std::string file = (dir / (name + ".json")).string();
  std::ofstream(file) << nlohmann::json{{"name", name}, {"input", {3, 8, 8}}, {"classes", 10}, {"layers", layers}};
  return file;
}

// Seconds `vdnn plan` takes on `file` with a device profile (no kernels measured), batch 4.
double plan_seconds(const std::string& file) {
  const auto start = std::chrono::steady_clock::now();
  const CliRun r = vdnn("plan --model " + file + " --batch 4 --device h200");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dyn picks"), std::string::npos) << r.output;
  return seconds;
}

TEST(CliPlanScale, TenThousandReluChainPlansWithinAMinute) {
  const auto dir = temp_dir("plan_scale_chain");
  nlohmann::json layers = nlohmann::json::array();
  for (int i = 0; i < 10000; ++i) layers.push_back(layer("relu", "relu" + std::to_string(i)));
  layers.push_back(layer("fc", "fc", {{"units", "classes"}}));
  layers.push_back(layer("softmax_cross_entropy", "loss"));
  EXPECT_LT(plan_seconds(write_model(dir, "chain10000", layers)), 60.0);
}

TEST(CliPlanScale, ResNetOfTenThousandLayersPlansWithinAMinute) {
  const auto dir = temp_dir("plan_scale_resnet");
  auto conv = [](const std::string& name) {
    return layer("conv", name, {{"channels", 8}, {"kernel", 3}, {"pad", 1}, {"bias", false}});
  };
  nlohmann::json layers = {conv("conv1"), layer("batch_norm", "bn1"), layer("relu", "relu")};
  std::string x = "relu";
  for (int b = 0; b < 1428; ++b) {  // basic blocks of 7 layers
    const std::string p = "b" + std::to_string(b) + "_";
    nlohmann::json first = conv(p + "conv1");
    first["inputs"] = {x};
    for (nlohmann::json l : {first, layer("batch_norm", p + "bn1"), layer("relu", p + "relu1"), conv(p + "conv2"),
                             layer("batch_norm", p + "bn2"), layer("add", p + "add", {{"inputs", {p + "bn2", x}}}),
                             layer("relu", p + "relu")})
      layers.push_back(l);
    x = p + "relu";
  }
  layers.push_back(layer("avg_pool", "avgpool", {{"global", true}}));
  layers.push_back(layer("fc", "fc", {{"units", "classes"}}));
  layers.push_back(layer("softmax_cross_entropy", "loss"));
  EXPECT_GE(layers.size(), 10000u);
  EXPECT_LT(plan_seconds(write_model(dir, "resnet10002", layers)), 60.0);
}

}  // namespace test_cli_plan_scale
}  // namespace vdnn::test
