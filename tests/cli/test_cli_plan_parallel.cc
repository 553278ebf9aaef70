// `vdnn plan --ranks N --network NET` and `--scaling` (issue 19): the plan of N data-parallel
// ranks predicts the all-reduce, how much of it backward hides and the efficiency against one
// rank; a faster network costs less; every bad flag is one clear line.
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_plan_parallel {

const std::string kVgg = "plan --model vgg16 --batch 64 --device a100-40gb --policy none ";

nlohmann::json data_parallel(const std::string& args) {
  const CliRun r = vdnn(kVgg + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output);
}

TEST(CliPlanParallel, RanksPredictTheAllReduceItsHiddenShareAndTheEfficiency) {
  const nlohmann::json j = data_parallel("--ranks 8 --network hdr-infiniband");
  const auto& dp = j["data_parallel"];
  EXPECT_EQ(dp["network"], "hdr-infiniband");
  EXPECT_EQ(dp["bucket_bytes"], 25u << 20);
  EXPECT_EQ(dp["batch_per_rank"], 64);
  ASSERT_EQ(dp["configurations"].size(), 1u);
  const auto& points = dp["configurations"][0]["points"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0]["ranks"], 1);
  EXPECT_EQ(points[1]["ranks"], 8);
  EXPECT_EQ(points[0]["all_reduce_seconds"], 0.0);
  // VGG-16's 528 MB of gradients over 23 GB/s: 2 * 7/8 * 528e6 / 23e9 = 40 ms, and more.
  EXPECT_GT(points[1]["all_reduce_seconds"].get<double>(), 0.035);
  EXPECT_GT(points[1]["all_reduce_hidden"].get<double>(), 0.5) << "the FC layers' buckets are ready first";
  EXPECT_LE(points[1]["all_reduce_hidden"].get<double>(), 1.0);
  EXPECT_LE(points[1]["efficiency"].get<double>(), 1.0 + 1e-12);
  EXPECT_GT(points[1]["efficiency"].get<double>(), 0.5);
  EXPECT_GE(points[1]["iteration_seconds"].get<double>(), points[0]["iteration_seconds"].get<double>());
  // The plan table itself is the 8-rank step.
  EXPECT_DOUBLE_EQ(j["configurations"][0]["iteration_seconds"].get<double>(),
                   points[1]["iteration_seconds"].get<double>());
}

TEST(CliPlanParallel, AFasterNetworkAllReducesFasterAndOneRankIsThePlanWithoutRanks) {
  const auto reduce = [](const nlohmann::json& j) {
    return j["data_parallel"]["configurations"][0]["points"][1]["all_reduce_seconds"].get<double>();
  };
  const double ethernet = reduce(data_parallel("--ranks 4 --network ethernet-100g"));
  const double nvlink = reduce(data_parallel("--ranks 4 --network nvlink-a100"));
  EXPECT_GT(ethernet, 10 * nvlink);
  const nlohmann::json plain = data_parallel(""), one = data_parallel("--ranks 1");
  EXPECT_EQ(plain["configurations"], one["configurations"]) << "one rank plans exactly as before";
  EXPECT_FALSE(one.contains("data_parallel"));
  // A network or bucket size for one rank would plan nothing (was: accepted and ignored).
  expect_user_error(kVgg + "--ranks 1 --network hdr-infiniband",
                    "--network applies only to data-parallel plans (--ranks above 1, or --scaling); it was given "
                    "with --ranks 1");
}

TEST(CliPlanParallel, ScalingPlansOneToSixtyFourRanksAndDrawsThem) {
  const auto dir = temp_dir("scaling");
  const CliRun r = vdnn(kVgg + "--network hdr-infiniband --scaling-svg " + (dir / "s.svg").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The scaling table: one line per rank count after the plan table's own row.
  std::vector<int> ranks;
  std::istringstream lines(r.output);
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    in_table |= line.rfind("data parallel on hdr-infiniband", 0) == 0;
    if (in_table && line.rfind("none+fastest ", 0) == 0) ranks.push_back(std::stoi(line.substr(36)));
  }
  EXPECT_EQ(ranks, (std::vector<int>{1, 2, 4, 8, 16, 32, 64})) << r.output;
  const std::string svg = read_text_file((dir / "s.svg").string());
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("none+fastest, 64 ranks"), std::string::npos) << "a dot per rank count";
  // Another batch's output joins the picture, each series named with its batch.
  const CliRun json = vdnn(
      "plan --model vgg16 --batch 32 --device a100-40gb --policy none --network hdr-infiniband "
      "--scaling --json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  write_text_file((dir / "b32.json").string(), json.output);
  const CliRun both = vdnn(kVgg + "--network hdr-infiniband --scaling-svg " + (dir / "both.svg").string() +
                           " --scaling-with " + (dir / "b32.json").string());
  ASSERT_EQ(both.exit_code, 0) << both.output;
  const std::string two = read_text_file((dir / "both.svg").string());
  EXPECT_NE(two.find("none+fastest, batch 32, 64 ranks"), std::string::npos);
  EXPECT_NE(two.find("none+fastest, batch 64, 64 ranks"), std::string::npos);
  write_text_file((dir / "plain.json").string(), "{\"configurations\": []}");
  expect_user_error(kVgg + "--network hdr-infiniband --scaling-svg " + (dir / "x.svg").string() + " --scaling-with " +
                        (dir / "plain.json").string(),
                    "plain.json: no 'data_parallel' (expected the output of `vdnn plan --scaling --json`)");
  expect_user_error(
      kVgg + "--network hdr-infiniband --scaling-svg " + (dir / "x.svg").string() + " --scaling-with /dev/zero",
      "--scaling-with /dev/zero: is a character device, not a regular file");
  expect_user_error(kVgg + "--scaling --network hdr-infiniband --scaling-with " + (dir / "b32.json").string(),
                    "--scaling-with applies only with --scaling-svg FILE");
  std::filesystem::remove_all(dir);
}

TEST(CliPlanParallel, BadFlagsAreOneClearLine) {
  expect_user_error(kVgg + "--ranks 0", "--ranks must be at least 1");
  expect_user_error(
      kVgg + "--ranks 4",
      "--ranks 4 needs --network: a network profile (ethernet-100g, hdr-infiniband, mpi-shared-memory, nvlink-a100)");
  expect_user_error(kVgg + "--scaling", "--scaling needs --network");
  expect_user_error(kVgg + "--ranks 4 --network omni-path",
                    "--network: unknown network profile 'omni-path' (known: ethernet-100g");
  expect_user_error(kVgg + "--ranks 4 --network /nonexistent/net.json",
                    "network profile file '/nonexistent/net.json' does not exist");
  expect_user_error(kVgg + "--ranks 4 --network hdr-infiniband --bucket-size 0",
                    "--bucket-size 0: expected a size above 0");
  expect_user_error(kVgg + "--ranks 4 --network hdr-infiniband --bucket-size lots", "--bucket-size");
}

}  // namespace test_cli_plan_parallel
}  // namespace vdnn::test
