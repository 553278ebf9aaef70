#include "planning/device_planner.h"

namespace vdnn {
namespace {

PlanInputs inputs(const Graph& graph, int64_t batch, const PlanSourceOptions& source, const PlannerRequest& request) {
  PlanInputs in = plan_inputs(graph, batch, source);
  if (request.network) in.costs.network = *request.network;
  return in;
}

}  // namespace

DevicePlanner::DevicePlanner(const Graph& graph, int64_t batch, const PlanSourceOptions& source,
                             const PlannerRequest& request)
    : in(inputs(graph, batch, source, request)),
      budget(request.device_memory.value_or(in.device_memory_bytes)),
      planner(graph, in.value_bytes, in.facts, in.costs, request.sync, request.collectives) {
  planner.set_host_budget(plan_host_budget(in, budget, request.host_memory));
  planner.set_optimizer(request.optimizer);
}

}  // namespace vdnn
