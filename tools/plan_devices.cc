#include "plan_devices.h"

#include <cstdio>

#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn::cli {

const PolicyStep* DevicePlan::fastest_fitting() const {
  const PolicyStep* best = nullptr;
  for (const PolicyStep& p : policies)
    if (p.fits && (!best || p.step_seconds < best->step_seconds)) best = &p;
  return best;
}

PolicyStep policy_step(const std::string& policy, const PlanTable& table) {
  PolicyStep s{.policy = policy};
  if (table.one) {  // none, conv, all: their one row, which says whether it fits
    VDNN_CHECK(!table.rows.empty(), "a plan of --policy " << policy << " has its row");
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

void print_device_table(const std::vector<DevicePlan>& rows, const DeviceTableHeader& h) {
  std::printf("model %s, batch %lld%s: each device at %s\n", h.model.c_str(), static_cast<long long>(h.batch),
              h.optimizer == "sgd" ? "" : (", optimizer " + h.optimizer).c_str(),
              h.budget ? ("a budget of " + format_bytes(h.budget)).c_str() : "its own memory");
  std::printf("%-24s %11s %10s", "device", "budget", "oracle ms");
  if (!rows.empty())
    for (const PolicyStep& p : rows.front().policies) std::printf(" %9s", (p.policy + " ms").c_str());
  std::printf("  %s\n", "fastest that fits");
  for (const DevicePlan& r : rows) {
    std::printf("%-24s %11s %10.2f", r.device.c_str(), format_bytes(r.budget).c_str(), r.oracle * 1e3);
    for (const PolicyStep& p : r.policies) {
      if (p.fits)
        std::printf(" %9.2f", p.step_seconds * 1e3);
      else
        std::printf(" %9s", "-");
    }
    const PolicyStep* best = r.fastest_fitting();
    if (best)
      std::printf("  %s, %.2fx the oracle (%s)\n", best->policy.c_str(), best->step_seconds / r.oracle,
                  best->configuration.c_str());
    else
      std::printf("  nothing fits\n");
  }
  std::printf(
      "each column: the step that `vdnn train --policy P` is predicted to train at on that device (-: it does not fit "
      "the budget); oracle: none with the fastest algorithms and unlimited memory on that device. Slice runs are not "
      "searched here: `vdnn plan --device D --policy auto` searches them for one device.\n");
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
          {"optimizer", h.optimizer},
          {"device_memory", h.budget ? nlohmann::json(h.budget) : nlohmann::json()},
          {"devices", std::move(devices)}};
}

}  // namespace vdnn::cli
