// A plan is a promise (issue 41): each row of `vdnn plan` names the `vdnn train` flags that run it
// ("runs_as"), and those flags train at the row's smallest budget — to the byte: one byte less is
// refused. On networks with Winograd-sized, tiny (GEMM weight gradient) and grouped convolutions,
// from one saved profile so that plan and train see the same costs. A unified-memory board's plan
// never counts on host memory it does not have; `profile --check auto` measures auto's pick, and
// refuses a budget where that pick is a plain vDNN policy; a
// refusal where `auto` fits points at `--policy auto`.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "backends/cpu/cpu_isa.h"
#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_plan_promise {

namespace fs = std::filesystem;

struct Network {
  const char* model;  // a shipped name, or JSON text written to a file
  int batch;
};

// vgg_cifar's last convolutions have 2x2 outputs (`auto` computes their weight gradient by GEMM);
// grouped: a grouped convolution beside a plain one.
const Network kNetworks[] = {
    {"fmnist_cnn", 32},
    {"fmnist_dag", 16},
    {"vgg_cifar", 4},
    {R"({"name": "grouped", "input": [8, 12, 12], "classes": 4, "layers": [
       {"name": "g", "type": "conv", "channels": 16, "kernel": 3, "pad": 1, "groups": 4},
       {"name": "r", "type": "relu"},
       {"name": "c", "type": "conv", "channels": 16, "kernel": 3, "pad": 1},
       {"name": "p", "type": "max_pool", "kernel": 2},
       {"name": "fc", "type": "fc", "units": "classes"},
       {"name": "loss", "type": "softmax_cross_entropy"}]})",
     8},
};

// `vdnn plan --json`'s object: stdout's, after any warning (unstable timings) and before any refusal
// on stderr.
nlohmann::json json_of(const std::string& output) {
  const size_t begin = output.find("{\n"), end = output.rfind("\n}");
  EXPECT_TRUE(begin != std::string::npos && end != std::string::npos) << output;
  return nlohmann::json::parse(output.substr(begin, end + 2 - begin));
}

std::string model_arg(const Network& n, const fs::path& dir) {
  if (n.model[0] != '{') return n.model;
  const fs::path file = dir / "model.json";
  std::ofstream(file) << n.model;
  return file.string();
}

TEST(CliPlanPromise, EveryRowTrainsAtItsSmallestBudgetAndNotOneByteBelow) {
  for (const Network& n : kNetworks) {
    const fs::path dir = temp_dir("plan_promise");
    const std::string model = " --model " + model_arg(n, dir) + " --batch " + std::to_string(n.batch);
    const std::string costs = (dir / "costs.json").string();
    ASSERT_EQ(vdnn("profile --repeats 1 --progress none --save " + costs + model).exit_code, 0) << n.model;
    const CliRun p = vdnn("plan --costs " + costs + model + " --json");
    ASSERT_EQ(p.exit_code, 0) << p.output;
    const nlohmann::json plan = json_of(p.output);
    int rows = 0;
    for (const nlohmann::json& row : plan["configurations"]) {
      const std::string runs_as = row["runs_as"], label = row["configuration"];
      const size_t smallest = row["minimum_budget"];
      const std::string train = "train --data synthetic --synthetic-samples " + std::to_string(n.batch) +
                                " --iterations 1 --no-eval "
                                "--progress none" +
                                model + " " + runs_as + " --device-memory ";
      const CliRun at = vdnn(train + std::to_string(smallest));
      EXPECT_EQ(at.exit_code, 0) << n.model << ", " << label << ": vdnn " << train << smallest << "\n" << at.output;
      const CliRun below = vdnn(train + std::to_string(smallest - 1));
      EXPECT_EQ(below.exit_code, 1) << n.model << ", " << label << " trained 1 byte below the plan's smallest\n"
                                    << below.output;
      EXPECT_NE(below.output.find("is too small"), std::string::npos) << below.output;
      ++rows;
    }
    EXPECT_GE(rows, 3) << p.output;  // none, conv, all at least
    // dyn: its smallest (all with the leanest algorithms) trains under --policy dyn on the same costs.
    const CliRun d = vdnn("plan --costs " + costs + model + " --policy dyn --device-memory 1GiB --json");
    ASSERT_EQ(d.exit_code, 0) << d.output;
    const size_t dyn_smallest = json_of(d.output)["dyn"]["minimum_budget"];
    const CliRun dyn = vdnn("train --data synthetic --synthetic-samples " + std::to_string(n.batch) +
                            " --iterations 1 --no-eval --progress none" + model + " --policy dyn --costs " + costs +
                            " --device-memory " + std::to_string(dyn_smallest));
    EXPECT_EQ(dyn.exit_code, 0) << n.model << ": dyn at " << dyn_smallest << "\n" << dyn.output;
    fs::remove_all(dir);
  }
}

// The Jetson Orin Nano's 8 GiB are the CPU's too: no configuration fits with host copies the
// board's memory cannot hold beside the budget (ResNet-50 at batch 256 "fit" with 20 GiB of host
// copies before).
TEST(CliPlanPromise, AUnifiedMemoryBoardNeverCountsOnHostMemoryItDoesNotHave) {
  const size_t board = size_t{8} << 30;
  for (const std::string budget : {"", " --device-memory 6GiB"}) {
    const CliRun r = vdnn("plan --model resnet50 --batch 256 --device jetson-orin-nano --json" + budget);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
    // The JSON on stdout; a refusal (nothing fits) may come first on stderr.
    const nlohmann::json plan = json_of(r.output);
    const size_t device = budget.empty() ? board : size_t{6} << 30;
    for (const nlohmann::json& row : plan["configurations"])
      if (row["fits"].get<bool>())
        EXPECT_LE(row["host_bytes"].get<size_t>(), board - device) << budget << ": " << row.dump();
    EXPECT_FALSE(plan["configurations"].empty());
  }
  const CliRun table = vdnn("plan --model resnet50 --batch 256 --device jetson-orin-nano --policy all");
  EXPECT_NE(table.output.find("unified memory: the 8.00 GiB the CPU and the GPU share hold the budget and the host"),
            std::string::npos)
      << table.output;
  EXPECT_NE(table.output.find("no (host)"), std::string::npos) << table.output;
  // A discrete GPU keeps an unbounded host (its own RAM): the same plan on an A100 fits `all`.
  const CliRun a100 = vdnn("plan --model resnet50 --batch 256 --device a100-40gb --policy all --json");
  ASSERT_EQ(a100.exit_code, 0) << a100.output;
  EXPECT_TRUE(json_of(a100.output)["configurations"][0]["fits"].get<bool>()) << a100.output;
}

// `profile --check auto` measured `none` (auto without a budget keeps everything): it now trains
// what auto picks for --device-memory, and its row predicts that pick. vgg_cifar, whose peak `all`
// lowers on every CPU (fmnist_cnn's peak is its first layer's gradients, which `all` does not
// offload: on AVX2 none, conv and all share it). The budget: `all`'s smallest, and below
// none+leanest's, where auto decides per tensor (with AVX-512, oneDNN's default algorithms are
// Winograd with 10-40 MiB of workspace a layer, so `all` with them needs more than none+leanest).
TEST(CliPlanPromise, ProfileCheckAutoMeasuresWhatAutoPicksForTheBudget) {
  const CliRun table = vdnn("plan --model vgg_cifar --batch 16 --json");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  size_t budget = std::numeric_limits<size_t>::max();
  const nlohmann::json rows = json_of(table.output)["configurations"];  // none+leanest first, then each policy's
  for (const auto& row : rows)
    if (row["policy"] == "all" || row["configuration"] == "none+leanest")
      budget = std::min(budget, row["minimum_budget"].get<size_t>() - (row["policy"] == "none" ? 1 : 0));
  ASSERT_LT(budget, std::numeric_limits<size_t>::max()) << table.output;
  const CliRun r = vdnn(
      "profile --model vgg_cifar --batch 16 --repeats 1 --steps 2 --progress none --check none,auto "
      "--device-memory " +
      std::to_string(budget));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto measured_mib = [&](const std::string& policy) {
    const size_t at = r.output.find("\n" + policy + " ");
    EXPECT_NE(at, std::string::npos) << r.output;
    std::istringstream row(r.output.substr(at + 1));
    std::string name, error;
    double predicted_ms = 0, measured_ms = 0, predicted_mib = 0, mib = 0;
    row >> name >> predicted_ms >> measured_ms >> error >> predicted_mib >> mib;
    return mib;
  };
  EXPECT_GT(measured_mib("none"), measured_mib("auto") + 0.5) << "auto at the budget of `all` kept everything:\n"
                                                              << r.output;
  // The table prints MiB to two decimals: a peak at the budget may read up to 0.005 above it.
  EXPECT_LE(measured_mib("auto"), static_cast<double>(budget) / (1 << 20) + 0.005) << r.output;
}

// Where the budget holds everything, auto picks none+fastest: `--check auto` used to measure that
// under auto's name; it is refused, naming what auto picked and the budget below which it decides.
TEST(CliPlanPromise, ProfileCheckAutoRefusesABudgetWhereAutoIsAPlainVdnnPolicy) {
  const CliRun r = vdnn(
      "profile --model fmnist_cnn --batch 8 --repeats 1 --steps 1 --progress none --check auto "
      "--device-memory 1GiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--check auto: at --device-memory 1.00 GiB (1073741824 bytes) auto picks vDNN's none+fastest "
                          "(everything fits"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("which --check none measures; give --device-memory below "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(none+fastest's smallest) for auto's own per-tensor decisions"), std::string::npos)
      << r.output;
}

// `vdnn train`'s refusal: exit 1, its last line the error (the model line may come first).
void expect_refused(const std::string& args, const std::string& fragment) {
  const CliRun r = vdnn(args);
  EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
  const size_t error = r.output.find("error: ");
  ASSERT_NE(error, std::string::npos) << args << "\n" << r.output;
  EXPECT_EQ(r.output.find('\n', error), r.output.size() - 1) << "one error line, last:\n" << r.output;
  EXPECT_NE(r.output.find(fragment, error), std::string::npos) << fragment << " not in: " << r.output;
}

// fmnist_cnn b32's smallest budgets: `all` with train's algorithms, and the floor, `all` with the
// leanest ones (dyn's).
struct SmallestBudgets {
  size_t all = 0, floor = 0;
};
SmallestBudgets smallest_budgets() {
  const std::string plan = "plan --model fmnist_cnn --batch 32 --device-memory 1GiB --json --policy ";
  const CliRun all = vdnn(plan + "all"), dyn = vdnn(plan + "dyn");
  EXPECT_EQ(all.exit_code, 0) << all.output;
  EXPECT_EQ(dyn.exit_code, 0) << dyn.output;
  return {json_of(all.output)["configurations"][0]["minimum_budget"], json_of(dyn.output)["dyn"]["minimum_budget"]};
}

const std::string kTrainB32 = "train --data synthetic --iterations 1 --no-eval --progress none --batch 32 ";

// Below `all`'s smallest budget with train's algorithms, `auto` (and dyn) still fit down to `all`
// with the leanest algorithms: there a refusal of none, conv or all points at `--policy auto`, which
// then trains. Only where train's algorithms are not the leanest: with Winograd's workspace (oneDNN
// has it on AVX-512); on AVX2 the two budgets are equal and no budget lies between them.
TEST(CliPlanPromise, ARefusalWhereAutoFitsPointsAtIt) {
  if (!cpu_has_winograd())
    GTEST_SKIP() << "oneDNN reports " << cpu_isa_name()
                 << ": no Winograd, so train's algorithms are the leanest and no budget lies between `all`'s "
                    "smallest and the floor";
  const SmallestBudgets b = smallest_budgets();
  ASSERT_LT(b.floor, b.all) << "fmnist_cnn's leanest algorithms take less workspace than train's";
  const std::string between = std::to_string((b.floor + b.all) / 2);
  expect_refused(kTrainB32 + "--policy all --conv-algo auto --device-memory " + between,
                 "--policy auto (keep, offload or recompute per tensor, leaner algorithms) may fit it");
  const CliRun a = vdnn(kTrainB32 + "--policy auto --device-memory " + between);
  EXPECT_EQ(a.exit_code, 0) << "the refusal's suggestion does not train:\n" << a.output;
  // Without --conv-algo, train keeps the policy and makes the widest convolutions direct.
  const CliRun direct = vdnn(kTrainB32 + "--policy all --device-memory " + between);
  EXPECT_EQ(direct.exit_code, 0) << direct.output;
  EXPECT_NE(direct.output.find("to fit --device-memory, 1 convolution(s) run direct instead of their default"),
            std::string::npos)
      << direct.output;
}

// Below the floor dyn's refusal, whose costs are measured, does not point at auto (auto was tried
// and does not fit either), and below what the parameters alone take no policy is suggested.
TEST(CliPlanPromise, BelowTheFloorNoRefusalPointsAtAuto) {
  const SmallestBudgets b = smallest_budgets();
  ASSERT_LE(b.floor, b.all);
  const CliRun below = vdnn(kTrainB32 + "--policy dyn --device-memory " + std::to_string(b.floor * 9 / 10));
  EXPECT_EQ(below.exit_code, 1) << below.output;
  EXPECT_NE(below.output.find("not even `all` with the leanest algorithms fits"), std::string::npos) << below.output;
  EXPECT_EQ(below.output.find("--policy auto"), std::string::npos) << "auto does not fit there:\n" << below.output;
  expect_refused(kTrainB32 + "--policy all --device-memory 64KiB",
                 "no policy fits it: the parameters, their gradients and optimizer state alone take");
}

}  // namespace test_cli_plan_promise
}  // namespace vdnn::test
