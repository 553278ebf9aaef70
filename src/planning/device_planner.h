// planning/device_planner.h — the Planner a plan command builds, with its budgets resolved once.
//
// Model: plan_inputs (planning/plan_source.h) gives a graph's sizes and costs on this CPU or a
// device profile. The Planner over them gets the device budget asked (else the device's memory),
// the host budget plan_host_budget leaves (a unified-memory board: what the device budget does not
// take of its memory), the optimizer whose state it counts and where that state lives, the sync mode and, for data
// parallelism, the collectives and the network they cross. `vdnn plan` (each of its tables, the
// largest batch, the table over devices), inference plans and vdnn.plan all build it here.
//
//   const DevicePlanner p(graph, 256, {.device = "titan-x-maxwell"}, {.optimizer = OptimizerKind::kAdamW});
//   PlanTable t = plan_table(p.planner, p.budget, "auto", Prefetch::kVdnn);
//   p.in.device;  // "titan-x-maxwell"
#pragma once

#include <optional>

#include "core/graph.h"
#include "plan/planner.h"
#include "planning/plan_source.h"

namespace vdnn {

struct PlannerRequest {
  std::optional<size_t> device_memory;  // the device budget asked; none: the device's memory
  size_t host_memory = 0;               // the host budget asked (0: none)
  OptimizerKind optimizer = OptimizerKind::kSgd;
  StatePlace optimizer_state = StatePlace::kDevice;  // host: one rank; a device profile with host_memory_bytes_per_second
  SyncMode sync = SyncMode::kEvent;
  CollectiveOptions collectives;              // data parallel: gradient buckets and their all-reduce
  std::optional<NetworkProfile> network;      // data parallel: what the ranks all-reduce over
};

struct DevicePlanner {
  // Throws vdnn::Error as plan_inputs does (an unusable source option, named by source.names).
  DevicePlanner(const Graph& graph, int64_t batch, const PlanSourceOptions& source, const PlannerRequest& request = {});
  // From inputs planned before (plan_inputs: this CPU's costs measured once for several Planners);
  // `names` spell the options in errors.
  DevicePlanner(const Graph& graph, PlanInputs inputs, const PlannerRequest& request, const OptionNames& names = {});
  DevicePlanner(const DevicePlanner&) = delete;
  DevicePlanner& operator=(const DevicePlanner&) = delete;

  const PlanInputs in;
  const size_t budget;  // bytes: the one asked, else the device's memory (0 for cpu: none)
  Planner planner;
};

}  // namespace vdnn
