// tools/plan_inference.h — `vdnn plan --inference`: the forward pass of a Net that only infers,
// planned per device and batch size before anything runs.
//
// Model: for each device (this CPU's measured kernels, or a device profile's roofline) and each
// batch size, Planner::infer plans the inference Program (plan/planned_inference.h) at the budget
// (--device-memory, else the profile's memory; none on cpu) and simulates it: the peak by class
// (weights, activations, workspace), the smallest budget, and the predicted latency per batch.
// --svg-memory draws device memory over one forward pass by class, one panel per batch size of the
// first device.
//
//   vdnn plan --model vgg16 --inference --device jetson-orin-nano,titan-x-maxwell --batches 1,8,32
//   vdnn plan --model googlenet --inference --batches 1 --svg-memory forward.svg --json
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "planning/plan_source.h"

namespace vdnn::cli {

struct InferencePlanRequest {
  std::function<Graph()> load;       // the network (loaded again per device and batch)
  std::vector<std::string> devices;  // "cpu" or device profiles
  std::vector<int64_t> batches;
  size_t budget = 0;         // 0: each device's memory (none on cpu)
  PlanSourceOptions source;  // repeats, costs file, link; `device` is set per row
  std::string svg_memory;
  bool json = false;
};

// Prints the table (or JSON) and writes the picture; 1 when a row does not fit its budget.
int run_plan_inference(const InferencePlanRequest& request);

// "1,8,32" -> {1, 8, 32}; throws vdnn::Error naming `flag` otherwise.
std::vector<int64_t> parse_batches(const std::string& text, const std::string& flag);

}  // namespace vdnn::cli
