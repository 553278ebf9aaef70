#include "planning/state_placement.h"

#include <iomanip>
#include <sstream>

#include "planning/plan_report.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

std::optional<double> fastest_fitting(const PlanTable& table) {
  std::optional<double> best;
  for (const PlanRow& r : table.rows)
    if (r.e.fits && (!best || r.e.time.iteration_seconds < *best)) best = r.e.time.iteration_seconds;
  return best;
}

std::string describe(const std::optional<double>& seconds) {
  if (!seconds) return "nothing fits";
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << *seconds * 1e3 << " ms";
  return s.str();
}

}  // namespace

StatePlacement choose_state_placement(const Graph& graph, int64_t batch, const PlanSourceOptions& source,
                                      PlannerRequest request, const std::string& policy, Prefetch prefetch) {
  return choose_state_placement(graph, plan_inputs(graph, batch, source), request, policy, prefetch, source.names);
}

StatePlacement choose_state_placement(const Graph& graph, const PlanInputs& in, PlannerRequest request,
                                      const std::string& policy, Prefetch prefetch, const OptionNames& names) {
  StatePlacement out;
  request.optimizer_state = StatePlace::kDevice;
  {
    const DevicePlanner on_device(graph, in, request, names);
    out.device_seconds = fastest_fitting(plan_table(on_device.planner, on_device.budget, policy, prefetch));
  }
  request.optimizer_state = StatePlace::kHost;
  std::string host_refused;
  try {
    const DevicePlanner on_host(graph, in, request, names);
    out.host_seconds = fastest_fitting(plan_table(on_host.planner, on_host.budget, policy, prefetch));
  } catch (const Error& e) {  // a profile without a host bandwidth, data-parallel ranks
    host_refused = e.what();
  }
  const bool host_wins = out.host_seconds && (!out.device_seconds || *out.host_seconds < *out.device_seconds);
  out.place = host_wins ? StatePlace::kHost : StatePlace::kDevice;
  const std::string device = describe(out.device_seconds);
  const std::string host = host_refused.empty() ? describe(out.host_seconds) : "not planned (" + host_refused + ")";
  out.summary = host_wins
                    ? "optimizer state in host memory: its fastest fitting row " + host + "; on the device " + device
                    : "optimizer state on the device: its fastest fitting row " + device + "; in host memory " + host;
  return out;
}

}  // namespace vdnn
