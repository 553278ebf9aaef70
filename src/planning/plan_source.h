// planning/plan_source.h — where a plan's sizes and costs come from: this CPU, or a device profile.
//
// Model: both come from a registered backend target (backend_api/backend_target.h). `cpu`: the CPU
// target — the graph's oneDNN kernels (their layouts and scratchpads, direct convolutions as the
// base), costs from a saved `vdnn profile` file or measured now. A device profile
// (profiles/devices/*.json, or a JSON path): the CUDA target — the CUDA kernels' own sizes
// (backends/cuda_target/cuda_sizes.h), the roofline costs of that GPU and its host link — and
// its memory size as the default budget. A unified-memory profile (a Jetson: the CPU shares the
// GPU's memory) leaves the host copies only what the device budget does not take of that memory
// (plan_host_budget), so no plan claims more memory than the board has.
//
//   PlanInputs in = plan_inputs(graph, 256, {.device = "titan-x-maxwell"});
//   Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
//   planner.set_host_budget(plan_host_budget(in, budget, /*host_memory=*/0));
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "device/cpu_device.h"
#include "plan/network_costs.h"
#include "plan/program.h"
#include "util/option_names.h"

namespace vdnn {

// Timed runs per kernel when measuring: `vdnn plan --repeats` and vdnn.plan(repeats=) take 1 to this.
inline constexpr int kMaxRepeats = 1000;

struct PlanSourceOptions {
  std::string device = "cpu";  // "cpu" or a device profile name / JSON path
  std::string link;            // a link profile name for a device profile ("" = its own)
  std::string costs_file;      // cpu: a saved `vdnn profile --save` file ("" = measure now)
  int repeats = 3;             // cpu, measuring: timed runs per kernel
  LinkModel cpu_link;          // cpu, measuring: the copy engine's emulated link
  // cpu, measuring: the network again, for a few timed training steps that calibrate the
  // measured costs (planning/step_calibration.h); unset, or a sliced graph (rewrites/slice_runs.h): the
  // costs stay as the profiler took them. A sliced graph takes no costs_file either (refused).
  std::function<Graph()> calibrate_with;
  bool calibrate_inference = false;        // calibrate on forward passes of an inference Net instead
  Precision precision = Precision::kFp32;  // the activations' type (cpu, or a GPU profile with peak_bf16_flops)
  OptionNames names;                       // how errors name these options (--repeats, repeats)
};

struct PlanInputs {
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  NetworkCosts costs;
  size_t device_memory_bytes = 0;  // the device's memory (0 for cpu: no natural budget)
  bool unified_memory = false;     // the device profile's: the CPU shares device_memory_bytes
  std::string device;              // "cpu" or the profile's name
};

// Throws vdnn::Error naming the option by options.names when it is unusable (repeats outside
// 1..kMaxRepeats, costs given with a device profile).
PlanInputs plan_inputs(const Graph& graph, int64_t batch, const PlanSourceOptions& options);

// The host budget a Planner gets (Planner::set_host_budget; 0: unbounded): `host_memory` (the
// user's --host-memory, 0: none given), and on a unified-memory device at most what the device
// budget leaves of the board's memory (at least 1 byte, which no host copy fits, where it leaves
// nothing: 0 would read as unbounded). `device_budget` 0: the board's memory.
size_t plan_host_budget(const PlanInputs& in, size_t device_budget, size_t host_memory);

}  // namespace vdnn
