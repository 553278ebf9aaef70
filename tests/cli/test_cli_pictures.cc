// What a user sees of one training step: `vdnn plan --trace/--svg/--svg-memory` and `vdnn train
// --trace` write Chrome traces that load as JSON with the stream tracks and memory counters, and
// SVG pictures that are valid XML and render.
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "io/svg_check.h"
#include "io/trace_check.h"

namespace vdnn::test {
namespace test_cli_pictures {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string process_name(const nlohmann::json& trace) {
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") return e["args"]["name"];
  return "";
}

TEST(CliPictures, PlanWritesThePredictedTraceAndBothPictures) {
  const auto dir = temp_dir("plan_pictures");
  const CliRun r = vdnn("plan --model fmnist_cnn --batch 32 --device titan-x-maxwell --device-memory 22MiB --trace " +
                        (dir / "dyn.json").string() + " --svg " + (dir / "plan.svg").string() + " --svg-memory " +
                        (dir / "memory.svg").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json dyn = read_json_file(dir / "dyn.json");
  expect_step_trace(dyn, /*offloads=*/true);
  EXPECT_NE(process_name(dyn).find("fmnist_cnn, batch 32, titan-x-maxwell, dyn: all"), std::string::npos)
      << "with a budget the trace shows dyn's pick: " << process_name(dyn);
  EXPECT_GT(expect_svg_renders(dir / "plan.svg").width, 0u);
  EXPECT_GT(expect_svg_renders(dir / "memory.svg").height, 0u);
  const std::string memory = read_text(dir / "memory.svg");
  // auto's pick is drawn whatever its algorithms (it was left out where they were not the defaults).
  for (const char* panel : {">none+fastest: ", ">conv+fastest: ", ">all+fastest: ", ">dyn: all", ">auto: "})
    EXPECT_NE(memory.find(panel), std::string::npos) << panel;
  EXPECT_NE(read_text(dir / "plan.svg").find("budget 22.00 MiB"), std::string::npos);

  const CliRun all = vdnn("plan --model fmnist_cnn --batch 32 --device titan-x-maxwell --policy all --trace " +
                          (dir / "all.json").string());
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(process_name(read_json_file(dir / "all.json")).find("all+fastest, predicted"), std::string::npos);
  expect_user_error("plan --model fmnist_cnn --device titan-x-maxwell --svg-memory " + (dir / "no" / "m.svg").string(),
                    "--svg-memory");
  std::filesystem::remove_all(dir);
}

TEST(CliPictures, TrainWritesTheMeasuredTraceOfItsThirdStepOrItsLast) {
  const auto dir = temp_dir("train_trace");
  const std::string common = "train --data synthetic --synthetic-samples 64 --batch 32 --no-eval --policy all --trace ";
  const CliRun r = vdnn(common + (dir / "step.json").string() + " --iterations 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("trace: training step 3 written to"), std::string::npos) << r.output;
  const nlohmann::json trace = read_json_file(dir / "step.json");
  expect_step_trace(trace, /*offloads=*/true);
  EXPECT_NE(process_name(trace).find("fmnist_cnn, batch 32, policy all, cpu, measured step 3"), std::string::npos);
  const CliRun one = vdnn(common + (dir / "one.json").string() + " --iterations 1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("trace: training step 1 written to"), std::string::npos) << one.output;
  expect_user_error(common + (dir / "missing" / "x.json").string(), "--trace");
  std::filesystem::remove_all(dir);
}

}  // namespace test_cli_pictures
}  // namespace vdnn::test
