// `vdnn plan` and `vdnn profile` end to end: every configuration with a predicted time, dyn's
// choice and its reason, an impossible budget that names the minimum, measured costs that
// round-trip through a file, one clear line for every kind of bad input, and `--prefetch ahead`
// predicting the depth and peak that `vdnn train --prefetch ahead` runs.
#include <algorithm>
#include <cstdint>
#include <fstream>

#include <nlohmann/json.hpp>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "backends/cpu/cpu_isa.h"
#include "cli/cli_run.h"
#include "io/model_file.h"
#include "plan/planned_step.h"
#include "plan/program_builder.h"
#include "util/text_file.h"

namespace vdnn::test {
namespace test_cli_plan {

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

TEST(CliPlan, SliceRunsFitVgg16InSixGibOnTheTitanXAgainstTheWholeGraphsOracle) {
  const std::string base = "plan --model vgg16 --batch 256 --device titan-x-maxwell --policy all --json";
  const CliRun whole = vdnn(base);
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const CliRun sliced =
      vdnn(base + " --slice-run conv1_1:pool1:8 --slice-run conv2_1:pool2:4 --slice-run conv3_1:pool3:2");
  ASSERT_EQ(sliced.exit_code, 0) << sliced.output;
  const nlohmann::json w = nlohmann::json::parse(whole.output), s = nlohmann::json::parse(sliced.output);
  EXPECT_EQ(s["oracle_seconds"], w["oracle_seconds"]);  // the whole graph's
  const nlohmann::json& all = s["configurations"][0];
  EXPECT_LT(all["minimum_budget"].get<double>(), 6.0 * (1 << 30));
  EXPECT_GT(w["configurations"][0]["minimum_budget"].get<double>(), 24.0 * (1 << 30));
  EXPECT_NEAR(all["overhead_vs_oracle"].get<double>(),
              all["iteration_seconds"].get<double>() / w["oracle_seconds"].get<double>() - 1, 1e-12);
  const CliRun bad = vdnn(base + " --slice-run conv1_1:drop6:2");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("slice run 'conv1_1:drop6:2'"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("layer 'drop6'"), std::string::npos) << bad.output;
}

TEST(CliPlan, AutoSearchesSliceRunsAndSucceedsWhereOnlyTheSlicedGraphFits) {
  // A small VGG whose whole-batch floor (all, leanest) is 161 MiB at batch 256: at 100 MiB only
  // slices fit, and `vdnn plan --policy auto` says so and exits 0; without the search it refuses.
  const std::filesystem::path dir = temp_dir("plan_slices");
  const std::filesystem::path model = dir / "tiny_vgg.json";
  std::ofstream(model) << R"({"name": "tiny_vgg", "input": [3, 64, 64], "classes": 10, "layers": [
    {"name": "conv1", "type": "conv", "channels": 16, "kernel": 3, "pad": 1}, {"name": "relu1", "type": "relu"},
    {"name": "pool1", "type": "max_pool", "kernel": 2},
    {"name": "conv2", "type": "conv", "channels": 32, "kernel": 3, "pad": 1}, {"name": "relu2", "type": "relu"},
    {"name": "pool2", "type": "max_pool", "kernel": 2},
    {"name": "fc", "type": "fc", "units": "classes"}, {"name": "loss", "type": "softmax_cross_entropy"}]})";
  const std::string base =
      "plan --model " + model.string() + " --batch 256 --device titan-x-maxwell --device-memory 100MiB --policy auto";
  const CliRun searched = vdnn(base + " --json --sweep-steps 6 --sweep-svg " + (dir / "sweep.svg").string());
  ASSERT_EQ(searched.exit_code, 0) << searched.output;
  const nlohmann::json j = nlohmann::json::parse(searched.output);
  EXPECT_FALSE(j["auto"]["fits"].get<bool>()) << j["auto"].dump();
  const nlohmann::json& s = j["slice_runs"];
  EXPECT_TRUE(s["fits"].get<bool>()) << s.dump();
  ASSERT_FALSE(s["runs"].empty()) << s.dump();
  EXPECT_EQ(s["runs"][0].get<std::string>().rfind("conv1:pool1:", 0), 0u) << s.dump();
  EXPECT_GT(s["vs_oracle"].get<double>(), 1.0);
  // Beside the sliced plan, a lower bound no plan of that sliced graph at the budget beats; beside
  // auto's (which does not fit), the whole graph's.
  const nlohmann::json& bound = s["lower_bound"];
  ASSERT_TRUE(bound["feasible"].get<bool>()) << bound.dump();
  EXPECT_LE(bound["seconds"].get<double>(), s["step_ms"].get<double>() / 1e3 * (1 + 1e-12)) << bound.dump();
  EXPECT_GE(bound["plan_over_bound"].get<double>(), 1.0 - 1e-12) << bound.dump();
  EXPECT_GE(bound["seconds"].get<double>(), j["oracle_seconds"].get<double>()) << bound.dump();
  EXPECT_TRUE(j["auto"]["lower_bound"]["plan_over_bound"].is_null()) << j["auto"].dump();
  // The sweep has the chosen runs as a column of their own, which alone reaches below the whole
  // graph's floor, and the SVG draws it.
  const nlohmann::json& sweep = j["sweep"];
  const nlohmann::json& sliced = sweep["columns"].back();
  ASSERT_EQ(sliced["name"], "auto+slices") << sweep["columns"].dump();
  size_t whole_floor = SIZE_MAX;
  for (const nlohmann::json& c : sweep["columns"])
    if (c["name"] != "auto+slices") whole_floor = std::min(whole_floor, c["smallest_budget"].get<size_t>());
  EXPECT_LT(sliced["smallest_budget"].get<size_t>(), whole_floor);
  EXPECT_EQ(sweep["floor"], sliced["smallest_budget"]);
  int below = 0;
  for (const nlohmann::json& row : sweep["rows"]) {
    if (row["budget"].get<size_t>() >= whole_floor) continue;
    ++below;
    for (const auto& [name, seconds] : row["step_seconds"].items())
      EXPECT_EQ(seconds.is_null(), name != "auto+slices") << name << " at " << row["budget"];
  }
  EXPECT_GE(below, 2);
  const std::string svg = read_text_file((dir / "sweep.svg").string());
  EXPECT_NE(svg.find("auto+slices ("), std::string::npos);  // the legend: name and smallest budget
  const CliRun plain = vdnn(base + " --no-slice-search");
  EXPECT_EQ(plain.exit_code, 1) << plain.output;
  EXPECT_NE(plain.output.find("is too small"), std::string::npos) << plain.output;
  std::filesystem::remove_all(dir);
}

TEST(CliPlan, AGenerousBudgetKeepsEverythingAndAnImpossibleOneNamesTheMinimum) {
  const CliRun easy = vdnn("plan --model vgg16 --batch 32 --device h200");
  ASSERT_EQ(easy.exit_code, 0) << easy.output;
  EXPECT_NE(easy.output.find("dyn picks none+fastest (step 2)"), std::string::npos) << easy.output;
  const CliRun hard = vdnn("plan --model vgg16 --batch 256 --device titan-x-maxwell --device-memory 2GiB");
  EXPECT_EQ(hard.exit_code, 1) << hard.output;
  EXPECT_NE(hard.output.find("error: --device-memory 2.00 GiB (2147483648 bytes) is too small"), std::string::npos)
      << hard.output;
  EXPECT_NE(hard.output.find("needs at least"), std::string::npos) << hard.output;
}

TEST(CliPlan, MeasuredCostsRoundTripThroughAFile) {
  const auto dir = temp_dir("costs");
  const std::string file = (dir / "costs.json").string();
  const CliRun p = vdnn("profile --model fmnist_dag --batch 8 --repeats 1 --save " + file);
  ASSERT_EQ(p.exit_code, 0) << p.output;
  for (const char* f : {"stem", "fwd ms", "link"}) EXPECT_NE(p.output.find(f), std::string::npos) << f;
  // oneDNN has Winograd on AVX-512 only: elsewhere the profile lists no such algorithm.
  EXPECT_EQ(p.output.find("winograd") != std::string::npos, cpu_has_winograd()) << cpu_isa_name() << "\n" << p.output;
  const CliRun r = vdnn("plan --model fmnist_dag --batch 8 --costs " + file + " --device-memory 64MiB");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // none, conv and all with train's algorithms: "+fastest" where oneDNN's picks are the fastest measured, else
  // "+default".
  for (const char* f : {"\nnone+", "\nconv+", "\nall+", "dyn picks", "measured on cpu"})
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
  EXPECT_NE(small.output.find("error: --device-memory 1.00 MiB (1048576 bytes) is too small"), std::string::npos)
      << small.output;
  EXPECT_NE(small.output.find("needs at least"), std::string::npos) << small.output;
}

// `vdnn plan --prefetch ahead` and `vdnn train --prefetch ahead` plan one step (plan/planned_step.h):
// the depth and peak the plan names are the ones training runs. Sizes must not depend on timing, so
// both run direct convolutions (the saved profile keeps only each layer's first, direct, algorithm).
// The budget is computed: the smallest one of the first look-ahead depth that needs more than vDNN's
// one layer and less than every layer, so training looks ahead neither 1 nor every layer.
TEST(CliPlan, PrefetchAheadPredictsTheDepthAndPeakTrainUses) {
  const std::string model_name = "fmnist_dag";
  const int64_t batch = 32;
  const Graph graph = load_model(model_name);
  const int layers = static_cast<int>(graph.nodes().size());
  const auto backend = make_backend(graph, {BackendKind::kCpu, batch, 1, ConvAlgo::kDirect});
  const Program eval =
      build_program(graph, backend->value_bytes(), backend->facts(), {Policy::kNone, SyncMode::kEvent, false});
  auto needs = [&](int depth) {
    ProgramOptions o{Policy::kAll, SyncMode::kEvent, true};
    o.prefetch_depth = depth;
    return minimum_budget(build_program(graph, backend->value_bytes(), backend->facts(), o), eval);
  };
  size_t budget = 0;
  std::string tried;
  for (int d = 2; d < layers && !budget; ++d) {
    tried += VDNN_MSG(" " << d << ":" << needs(d));
    if (needs(d) > needs(1) && needs(d) < needs(layers)) budget = needs(d);
  }
  ASSERT_GT(budget, 0u) << "no depth between 1 (" << needs(1) << ") and " << layers << " (" << needs(layers)
                        << ") needs a budget of its own:" << tried;
  const PlannedStep step = plan_step(graph, backend->value_bytes(), backend->facts(),
                                     {Policy::kAll, SyncMode::kEvent, Prefetch::kAhead, budget});
  ASSERT_TRUE(step.fits);
  ASSERT_GT(step.prefetch_depth, 1);
  ASSERT_LT(step.prefetch_depth, layers);
  RecordProperty("budget", std::to_string(budget));
  RecordProperty("prefetch_depth", step.prefetch_depth);
  RecordProperty("peak_bytes", std::to_string(step.train_plan.peak_bytes));

  const auto dir = temp_dir("ahead");
  const std::string costs = (dir / "costs.json").string(), report = (dir / "report.json").string();
  const std::string common = "--model " + model_name + " --batch " + std::to_string(batch) +
                             " --policy all --prefetch ahead "
                             "--device-memory " +
                             std::to_string(budget);
  ASSERT_EQ(vdnn("profile --model " + model_name + " --batch " + std::to_string(batch) + " --repeats 1 --save " + costs)
                .exit_code,
            0);
  auto profile = nlohmann::json::parse(std::ifstream(costs));
  for (auto& node : profile["nodes"]) {  // direct only, and so what train runs with --conv-algo direct
    node["algos"] = nlohmann::json::array({node["algos"][0]});
    node.erase("default");
  }
  std::ofstream(costs) << profile.dump();
  const CliRun p = vdnn("plan " + common + " --costs " + costs + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.output;
  const auto row = nlohmann::json::parse(p.output)["configurations"].at(0);
  const CliRun t = vdnn("train " + common +
                        " --conv-algo direct --data synthetic --iterations 1 --no-eval --progress none "
                        "--report " +
                        report);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const auto trained = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(row["prefetch_depth"], step.prefetch_depth);
  EXPECT_EQ(row["peak_bytes"], step.train_plan.peak_bytes);
  EXPECT_EQ(trained["prefetch_depth"], step.prefetch_depth) << "at " << budget;
  EXPECT_EQ(trained["peak_device_bytes"], step.train_plan.peak_bytes) << "at " << budget;
  const CliRun bad = vdnn("plan --prefetch far");  // as `train --prefetch far`: CLI11 names the choices
  EXPECT_EQ(bad.exit_code, vdnn("train --prefetch far").exit_code) << bad.output;
  EXPECT_NE(bad.output.find("--prefetch: far not in {vdnn,ahead}"), std::string::npos) << bad.output;
}

// fmnist_cnn b128 fits 50 MiB as `none` with the leanest algorithms and as `all` with the fastest
// (46.97 MiB each on AVX-512; 49.64 MiB on AVX2, whose kernels' workspaces and layouts differ): which
// dyn takes depends on the measured costs; either trains within the budget.
TEST(CliTrain, DynPicksAConfigurationThatTrainsInTheBudget) {
  const CliRun r = vdnn("train --data synthetic --policy dyn --device-memory 50MiB --iterations 2 --no-eval");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.output.find("dyn picks all+") != std::string::npos ||
              r.output.find("dyn picks none+") != std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("device memory 50.00 MiB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" MiB of 50.00 MiB, offloaded"), std::string::npos) << r.output;  // the run's peak
}

// The CPU plan calibrates its kernel costs by timing a few training steps; a network that diverges
// at the default learning rate (vgg_cifar has no batch norm) stopped the plan with a NaN. The
// timing runs at learning rate 0 now.
TEST(CliPlan, CalibratingANetworkThatDivergesAtTheDefaultRateStillPlans) {
  const CliRun r = vdnn("plan --model vgg_cifar --batch 8 --policy none");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("NaN"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("none+"), std::string::npos) << r.output;
}

}  // namespace test_cli_plan
}  // namespace vdnn::test
