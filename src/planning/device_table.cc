#include "planning/device_table.h"

#include "planning/device_planner.h"
#include "util/text_list.h"
#include "vdnn/error.h"

namespace vdnn {

const PolicyStep* DevicePlan::fastest_fitting() const {
  const PolicyStep* best = nullptr;
  for (const PolicyStep& p : policies)
    if (p.fits && (!best || p.step_seconds < best->step_seconds)) best = &p;
  return best;
}

PolicyStep policy_step(const std::string& policy, const PlanTable& table) {
  PolicyStep s{.policy = policy};
  if (table.one) {  // none, conv, all: their one row, which says whether it fits
    VDNN_CHECK(!table.rows.empty(), "a plan of policy " << policy << " has its row");
    s.fits = table.rows.front().e.fits;
    s.minimum_budget = table.rows.front().e.minimum_budget;
  } else if (policy == "dyn") {  // a row only where dyn found a configuration that fits
    s.fits = table.dyn.fits;
    s.minimum_budget = table.dyn.minimum_budget;
  } else {
    s.fits = table.chosen.fits;
  }
  if (s.fits) {
    s.step_seconds = table.rows.front().e.time.iteration_seconds;
    s.configuration = table.rows.front().label;
  }
  return s;
}

std::vector<DevicePlan> plan_devices(const Graph& graph, int64_t batch, const DeviceTableRequest& request) {
  const std::string& option = request.devices_option;
  if (request.devices.empty()) VDNN_THROW(option << ": no device profiles, e.g. v100-16gb,a100-40gb,h100");
  for (const std::string& d : request.devices)
    if (d.empty() || d == "cpu")
      VDNN_THROW(option << " " << join_list(request.devices, ",")
                                 << ": a training plan over several devices takes device profiles ("
                                 << (d.empty() ? "one is empty" : "cpu measures this machine's costs: plan it alone")
                                 << "), e.g. v100-16gb,a100-40gb,h100");
  std::vector<DevicePlan> rows;
  for (const std::string& device : request.devices) {
    PlanSourceOptions source = request.source;
    source.device = device;
    const DevicePlanner p(graph, batch, source,
                          {.device_memory = request.budget,
                           .host_memory = request.host_memory,
                           .optimizer = request.optimizer,
                           .optimizer_state = request.optimizer_state,
                           .sync = request.sync});
    DevicePlan row{.device = device, .budget = p.budget};
    row.oracle = p.planner.oracle_seconds();
    for (const std::string& policy : request.policies)
      row.policies.push_back(policy_step(policy, plan_table(p.planner, row.budget, policy, request.prefetch)));
    rows.push_back(std::move(row));
  }
  return rows;
}

nlohmann::json device_table_json(const std::vector<DevicePlan>& rows, const DeviceTableHeader& h) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DevicePlan& r : rows) {
    nlohmann::json policies = nlohmann::json::array();
    for (const PolicyStep& p : r.policies)
      policies.push_back({{"policy", p.policy},
                          {"fits", p.fits},
                          {"step_seconds", p.fits ? nlohmann::json(p.step_seconds) : nlohmann::json()},
                          {"configuration", p.fits ? nlohmann::json(p.configuration) : nlohmann::json()},
                          {"minimum_budget", p.minimum_budget ? nlohmann::json(p.minimum_budget) : nlohmann::json()}});
    const PolicyStep* best = r.fastest_fitting();
    devices.push_back({{"device", r.device},
                       {"device_memory", r.budget},
                       {"oracle_seconds", r.oracle},
                       {"policies", std::move(policies)},
                       {"fastest_fitting", best ? nlohmann::json(best->policy) : nlohmann::json()}});
  }
  return {{"model", h.model},
          {"batch", h.batch},
          {"optimizer", to_string(h.optimizer)},
          {"device_memory", h.budget ? nlohmann::json(h.budget) : nlohmann::json()},
          {"devices", std::move(devices)}};
}

}  // namespace vdnn
