// `vdnn plan --sweep`: VGG-16 at batch 256 on the Titan X profile, every policy's predicted step
// time from the largest smallest budget down to the floor — as JSON whose fits are monotone and
// agree with the configuration table, as a table with "—" where a policy does not fit, and as an
// SVG with one line per column; bad step counts are one clear line.
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "io/svg_check.h"

namespace vdnn::test {
namespace test_cli_plan_sweep {

const std::string kVgg = "plan --model vgg16 --batch 256 --device titan-x-maxwell";

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(CliPlanSweep, Vgg16OnTheTitanXFitsMonotonicallyAndNeverBeatsTheOracle) {
  const CliRun r = vdnn(kVgg + " --sweep --prefetch ahead --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  const auto& s = j["sweep"];
  const double oracle = j["oracle_seconds"];
  EXPECT_EQ(s["oracle_seconds"].get<double>(), oracle);
  std::vector<std::string> columns;
  for (const auto& c : s["columns"]) columns.push_back(c["name"]);
  EXPECT_EQ(columns,
            (std::vector<std::string>{"none", "conv", "all", "dyn", "auto", "conv/ahead", "all/ahead", "dyn/ahead"}));
  const auto& rows = s["rows"];
  ASSERT_GE(rows.size(), 20u) << "20 steps by default, plus the smallest budgets and the device's";
  EXPECT_EQ(rows.front()["budget"], s["top"]);
  EXPECT_EQ(rows.back()["budget"], s["floor"]);
  for (const auto& c : s["columns"]) {
    const std::string name = c["name"];
    const size_t smallest = c["smallest_budget"];
    bool fitted_below = false;
    for (size_t r = rows.size(); r-- > 0;) {  // from the floor up
      const size_t budget = rows[r]["budget"];
      const auto& t = rows[r]["step_seconds"][name];
      const bool fits = !t.is_null();
      EXPECT_EQ(fits, budget >= smallest) << name << " at " << budget;
      EXPECT_TRUE(fits || !fitted_below) << name << " fits below " << budget << " but not at it";
      fitted_below |= fits;
      if (fits) EXPECT_GE(t.get<double>(), oracle * (1 - 1e-12)) << name << " at " << budget;
    }
  }
  // The sweep agrees with the table: none's smallest is none+fastest's, and at the device's budget
  // (12 GiB, a row) dyn picks and predicts what the table's dyn row says.
  size_t none_fastest = 0;
  double dyn_seconds = 0;
  std::string dyn_label;
  for (const auto& c : j["configurations"]) {
    if (c["configuration"] == "none+fastest") none_fastest = c["minimum_budget"];
    if (const std::string label = c["configuration"]; label.rfind("dyn: ", 0) == 0) {
      dyn_seconds = c["iteration_seconds"];
      dyn_label = label.substr(5);
    }
  }
  EXPECT_EQ(s["columns"][0]["smallest_budget"].get<size_t>(), none_fastest);
  const auto device =
      std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row["budget"] == size_t{12} << 30; });
  ASSERT_NE(device, rows.end()) << "the device's budget is a row";
  EXPECT_EQ((*device)["step_seconds"]["dyn/ahead"].get<double>(), dyn_seconds) << "the table prefetches ahead";
  EXPECT_EQ((*device)["configurations"]["dyn"], dyn_label.substr(0, dyn_label.find(", ahead ")));
  EXPECT_TRUE((*device)["step_seconds"]["none"].is_null()) << "none does not fit 12 GiB";
}

TEST(CliPlanSweep, UnderAHostBudgetOnlyWhatCopiesNothingFits) {
  // 1 MiB of host memory: conv and all copy gigabytes, so at no budget do they fit (with --prefetch
  // ahead this crashed: the sweep took a device fit for a fit).
  const std::string args = kVgg + " --sweep --sweep-steps 6 --prefetch ahead --host-memory 1MiB";
  const CliRun r = vdnn(args);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // at the device's 12 GiB nothing fits: none needs more
  EXPECT_NE(r.output.find("more than the host budget 1.00 MiB"), std::string::npos) << r.output;
  // The JSON alone (stderr's refusal would land inside it).
  const CliRun json = run_command("sh -c '" + std::string(VDNN_BINARY) + " " + args + " --json 2>/dev/null'");
  EXPECT_EQ(json.exit_code, 1);
  const auto j = nlohmann::json::parse(json.output);
  ASSERT_FALSE(j["sweep"]["rows"].empty());
  for (const auto& row : j["sweep"]["rows"])
    for (const char* name : {"conv", "all", "conv/ahead", "all/ahead"})
      EXPECT_TRUE(row["step_seconds"][name].is_null()) << name << " at " << row["budget"];
}

TEST(CliPlanSweep, TheTableHasOneRowPerBudgetAndTheSvgOneLinePerColumn) {
  const auto dir = temp_dir("plan_sweep");
  const std::string svg = (dir / "sweep.svg").string();
  const CliRun r = vdnn(kVgg + " --sweep-steps 6 --sweep-svg " + svg);  // both imply --sweep
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch found;
  ASSERT_TRUE(std::regex_search(r.output, found, std::regex(R"(\n +budget +none +conv +all +dyn +auto +oracle\n)")))
      << r.output;
  const size_t header = static_cast<size_t>(found.position(0)) + 1;
  // A row: a budget, then 5 cells and the oracle, each a time or "—".
  const std::regex row(R"(^ +[0-9.]+ [KMG]i?B\*? +((?:(?:[0-9]+\.[0-9]{2}|—) +){5})[0-9]+\.[0-9]{2}$)");
  std::istringstream lines(r.output.substr(header));
  int rows = 0, dashes = 0;
  for (std::string line; std::getline(lines, line);)
    if (std::smatch m; std::regex_match(line, m, row)) ++rows, dashes += static_cast<int>(count_of(m[1], "—"));
  EXPECT_GE(rows, 6) << r.output;
  EXPECT_LE(rows, 6 + 6) << "6 steps, the 5 policies' smallest budgets and the device's at most";
  EXPECT_GT(dashes, 0) << "none does not fit below its smallest budget";
  EXPECT_NE(r.output.find("* the device's budget"), std::string::npos) << r.output;

  EXPECT_GT(expect_svg_renders(svg).width, 0u);
  std::ifstream in(svg);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::istringstream header_words(r.output.substr(header, r.output.find('\n', header) - header));
  size_t columns = 0;
  for (std::string w; header_words >> w;) columns += w != "budget" && w != "oracle";
  EXPECT_EQ(columns, 5u) << "none, conv, all, dyn with vDNN's prefetch rule, and auto";
  EXPECT_EQ(count_of(text, "<polyline "), columns) << "one line per column";
  EXPECT_NE(text.find(">oracle "), std::string::npos);
  EXPECT_NE(text.find(">budget 12.00 GiB<"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CliPlanSweep, AStepCountOutOfRangeIsOneClearLine) {
  for (const char* steps : {"1", "201"}) {
    const CliRun r =
        vdnn("plan --model fmnist_cnn --device titan-x-maxwell --sweep --sweep-steps " + std::string(steps));
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.rfind(std::string("--sweep-steps: Value ") + steps + " not in range 2 to 200", 0), 0u)
        << r.output;
    EXPECT_EQ(r.output.find("budget sweep"), std::string::npos) << "refused before any work";
  }
  EXPECT_EQ(vdnn("plan --model fmnist_cnn --device titan-x-maxwell --sweep-steps 2").exit_code, 0);
}

}  // namespace test_cli_plan_sweep
}  // namespace vdnn::test
