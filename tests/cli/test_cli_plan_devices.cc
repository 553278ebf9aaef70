// `vdnn plan --device A,B,...` (issue 40, "a table over several devices at once"): each row is what
// planning that device alone answers, policy by policy; a device where nothing fits is named and
// makes the exit 1; what needs one device is refused.
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"

namespace vdnn::test {
namespace test_cli_plan_devices {

const std::string kModel = "plan --model vgg16 --batch 96 --optimizer adamw ";

struct Planned {
  int exit_code = -1;
  nlohmann::json json;
};

Planned plan_json(const std::string& args) {
  const CliRun r = vdnn(kModel + args + " --json");
  const size_t end = r.output.rfind('}');  // a refusal on stderr may follow the object
  EXPECT_NE(end, std::string::npos) << args << "\n" << r.output;
  return {r.exit_code, nlohmann::json::parse(r.output.substr(0, end == std::string::npos ? 0 : end + 1))};
}

// VGG-16 at batch 96 with AdamW: the V100's 16 GiB hold it whole; the Jetson's 8 GiB, which its
// host copies share (unified memory), only under auto.
TEST(CliPlanDevices, EachRowIsWhatPlanningThatDeviceAloneAnswers) {
  const std::string devices = "v100-16gb,titan-x-maxwell,jetson-orin-nano";
  for (const std::string policy : {"none", "all", "auto"}) {
    SCOPED_TRACE(policy);
    const Planned table = plan_json("--device " + devices + " --policy " + policy);
    ASSERT_EQ(table.json["devices"].size(), 3u) << table.json.dump(2);
    bool every_device_fits = true;
    for (const nlohmann::json& row : table.json["devices"]) {
      const std::string device = row["device"];
      SCOPED_TRACE(device);
      ASSERT_EQ(row["policies"].size(), 1u);
      const nlohmann::json& p = row["policies"][0];
      EXPECT_EQ(p["policy"], policy);
      const bool fits = p["fits"];
      every_device_fits = every_device_fits && fits;
      EXPECT_EQ(row["fastest_fitting"], fits ? nlohmann::json(policy) : nlohmann::json());
      const Planned alone =
          plan_json("--device " + device + " --policy " + policy + (policy == "auto" ? " --no-slice-search" : ""));
      // Alone, a `--policy none` or `all` row that does not fit is an answer (exit 0); auto's is a refusal.
      EXPECT_EQ(alone.exit_code, fits || policy != "auto" ? 0 : 1);
      EXPECT_EQ(row["oracle_seconds"], alone.json["oracle_seconds"]);
      EXPECT_EQ(row["device_memory"], alone.json["device_memory"]);
      if (!fits) {
        EXPECT_TRUE(p["step_seconds"].is_null());
        continue;
      }
      ASSERT_FALSE(alone.json["configurations"].empty());
      const nlohmann::json& config = alone.json["configurations"].back();
      EXPECT_EQ(p["step_seconds"], config["iteration_seconds"]);
      EXPECT_EQ(p["configuration"], config["configuration"]);
    }
    EXPECT_EQ(table.exit_code, every_device_fits ? 0 : 1);
    // The V100 holds every policy; the Jetson holds only auto's plan.
    EXPECT_TRUE(table.json["devices"][0]["policies"][0]["fits"].get<bool>());
    EXPECT_EQ(table.json["devices"][2]["policies"][0]["fits"].get<bool>(), policy == "auto");
  }
}

TEST(CliPlanDevices, TheTableNamesTheFastestPolicyThatFitsAndADeviceWhereNothingDoes) {
  const CliRun r = vdnn(kModel + "--device v100-16gb,jetson-orin-nano --device-memory 6GiB --policy all");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("each device at a budget of 6.00 GiB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\njetson-orin-nano "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nothing fits"), std::string::npos) << r.output;
  const Planned every = plan_json("--device v100-16gb,jetson-orin-nano,h100 --device-memory 12GiB");
  EXPECT_EQ(every.exit_code, 0) << every.json.dump(2);
  for (const nlohmann::json& row : every.json["devices"]) {
    ASSERT_EQ(row["policies"].size(), 5u);
    double fastest = 0;
    std::string name;
    for (const nlohmann::json& p : row["policies"])
      if (p["fits"].get<bool>() && (name.empty() || p["step_seconds"].get<double>() < fastest))
        fastest = p["step_seconds"], name = p["policy"];
    EXPECT_EQ(row["fastest_fitting"], name) << row.dump(2);
  }
}

TEST(CliPlanDevices, WhatNeedsOneDeviceIsRefusedNamingTheList) {
  expect_user_error(kModel + "--device h100,cpu", "--device h100,cpu: a training plan over several devices takes "
                                                  "device profiles (cpu measures this machine's costs: plan it alone)");
  expect_user_error(kModel + "--device h100,a100-40gb --sweep",
                    "--sweep applies only with one --device (a training plan over several prints one row per "
                    "device); it was given with --device h100,a100-40gb");
  expect_user_error(kModel + "--device h100,a100-40gb --svg /tmp/x.svg", "--svg applies only with one --device");
}

}  // namespace test_cli_plan_devices
}  // namespace vdnn::test
