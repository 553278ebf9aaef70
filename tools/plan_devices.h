// tools/plan_devices.h — `vdnn plan --device A,B,...` for training: will the network train on each
// of several devices, under which policy, and how fast — one row per device.
//
// Model: each device is planned as `vdnn plan --device D` plans it alone (its sizes, costs, link and
// memory; its memory is the budget unless --device-memory sets one for every device; a unified-
// memory board's host copies count against that memory). Per policy (--policy, or none, conv, all,
// dyn and auto) a row holds the step that policy trains at on the device, or that it does not fit;
// beside them the device's oracle (none, fastest algorithms, unlimited memory) and the fastest
// policy that fits, with its overhead against that oracle. Slice runs are not searched here (a
// device where nothing fits: `vdnn plan --device D --policy auto` searches them). The command exits
// 1 when some device fits none of the policies asked, as `vdnn plan --inference` does when a row
// does not fit.
//
//   DevicePlan row{.device = "h100", .budget = size_t{80} << 30, .oracle = planner.oracle_seconds()};
//   row.policies.push_back(policy_step("auto", plan_table(planner, row.budget, "auto", Prefetch::kVdnn)));
//   print_device_table({row}, {.model = "gpt2", .batch = 8, .optimizer = "adamw"});
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planning/plan_report.h"

namespace vdnn::cli {

// One policy on one device: the step it trains at, when it fits.
struct PolicyStep {
  std::string policy;         // none, conv, all, dyn, auto
  bool fits = false;
  double step_seconds = 0;    // fits: the simulated training step
  std::string configuration;  // fits: the plan row's label ("all+fastest", "auto: ...")
  size_t minimum_budget = 0;  // the least memory of its configuration (dyn: all + leanest's); 0: not known (auto)
};

struct DevicePlan {
  std::string device;
  size_t budget = 0;  // the device's memory, or --device-memory
  double oracle = 0;  // seconds
  std::vector<PolicyStep> policies;

  const PolicyStep* fastest_fitting() const;  // nullptr: no policy fits
};

struct DeviceTableHeader {
  std::string model, optimizer = "sgd";
  int64_t batch = 0;
  size_t budget = 0;  // --device-memory for every device; 0: each device's own memory
};

// The row of `policy` (one of plan_table's policies) from the table planned for it alone.
PolicyStep policy_step(const std::string& policy, const PlanTable& table);

void print_device_table(const std::vector<DevicePlan>& rows, const DeviceTableHeader& header);
nlohmann::json device_table_json(const std::vector<DevicePlan>& rows, const DeviceTableHeader& header);

}  // namespace vdnn::cli
