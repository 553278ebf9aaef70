// planning/device_table.h — will a network train on each of several devices, under which policy,
// and how fast: one training plan per device profile (`vdnn plan --device A,B,...`,
// vdnn.plan_devices).
//
// Model: each device is planned as `vdnn plan --device D` plans it alone (its sizes, costs, link
// and memory; its memory is the budget unless one budget is given for every device; a unified-
// memory board's host copies count against that memory, plan_host_budget). Per policy (none,
// conv, all, dyn, auto, or the ones asked) a row holds the step that policy trains at on the
// device, or that it does not fit; beside them the device's oracle (none, fastest algorithms,
// unlimited memory) and the fastest policy that fits. Slice runs are not searched (one device's
// `vdnn plan --policy auto` searches them), and `cpu` is refused (its costs are measured on this
// machine with a calibration step: plan it alone).
//
//   DeviceTableRequest r{.devices = {"v100-16gb", "h100"}, .optimizer = OptimizerKind::kAdamW};
//   std::vector<DevicePlan> rows = plan_devices(load_model("gpt2"), 8, r);
//   nlohmann::json j = device_table_json(rows, {.model = "gpt2", .optimizer = OptimizerKind::kAdamW, .batch = 8});
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/optimizer_state.h"
#include "plan/policy.h"
#include "planning/plan_report.h"
#include "planning/plan_source.h"

namespace vdnn {

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
  size_t budget = 0;  // the device's memory, or the budget given for every device
  double oracle = 0;  // seconds
  std::vector<PolicyStep> policies;

  const PolicyStep* fastest_fitting() const;  // nullptr: no policy fits
};

struct DeviceTableRequest {
  std::vector<std::string> devices;                                      // device profiles
  std::string devices_option = "--device";  // how errors name the list (Python: "devices")
  std::vector<std::string> policies{"none", "conv", "all", "dyn", "auto"};  // each one of plan_table's
  std::optional<size_t> budget;  // for every device; none: each device's memory
  size_t host_memory = 0;        // 0: unbounded (a unified-memory board: what its budget leaves)
  SyncMode sync = SyncMode::kEvent;
  Prefetch prefetch = Prefetch::kVdnn;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  StatePlace optimizer_state = StatePlace::kDevice;
  PlanSourceOptions source;  // link, precision and how errors name options; `device` is set per row
};

struct DeviceTableHeader {
  std::string model;
  OptimizerKind optimizer = OptimizerKind::kSgd;
  int64_t batch = 0;
  size_t budget = 0;  // the budget given for every device; 0: each device's own memory
};

// Throws vdnn::Error naming request.devices_option for an empty list, an empty entry or cpu, and
// what plan_inputs throws for an unknown profile.
std::vector<DevicePlan> plan_devices(const Graph& graph, int64_t batch, const DeviceTableRequest& request);

// The row of `policy` (one of plan_table's policies) from the table planned for it alone.
PolicyStep policy_step(const std::string& policy, const PlanTable& table);

nlohmann::json device_table_json(const std::vector<DevicePlan>& rows, const DeviceTableHeader& header);

}  // namespace vdnn
