#include "planning/device_planner.h"

#include <utility>

#include "vdnn/error.h"

namespace vdnn {
namespace {

PlanInputs with_network(PlanInputs in, const PlannerRequest& request) {
  if (request.network) in.costs.network = *request.network;
  return in;
}

}  // namespace

DevicePlanner::DevicePlanner(const Graph& graph, int64_t batch, const PlanSourceOptions& source,
                             const PlannerRequest& request)
    : DevicePlanner(graph, plan_inputs(graph, batch, source), request, source.names) {}

DevicePlanner::DevicePlanner(const Graph& graph, PlanInputs inputs, const PlannerRequest& request,
                             const OptionNames& names)
    : in(with_network(std::move(inputs), request)),
      budget(request.device_memory.value_or(in.device_memory_bytes)),
      planner(graph, in.value_bytes, in.facts, in.costs, request.sync, request.collectives) {
  planner.set_host_budget(plan_host_budget(in, budget, request.host_memory));
  planner.set_optimizer(request.optimizer);
  planner.set_optimizer_state(request.optimizer_state);
  if (request.optimizer_state != StatePlace::kHost) return;
  const std::string option = names("optimizer_state");
  if (request.collectives.ranks > 1)
    VDNN_THROW(option << " host: state in host memory is planned for one rank; data-parallel ranks with it are not built "
                         "yet");
  if (in.device != "cpu" && in.costs.host_memory_bytes_per_second <= 0)  // cpu: the same memory
    VDNN_THROW(option << " host: device profile '" << in.device
                      << "' gives no host_memory_bytes_per_second, the bandwidth at which its host's CPU would update "
                         "the state (docs/device-profiles.md)");
}

}  // namespace vdnn
