#include "plan_devices.h"

#include <cstdio>

#include "util/size_parse.h"

namespace vdnn::cli {

void print_device_table(const std::vector<DevicePlan>& rows, const DeviceTableHeader& h) {
  std::printf("model %s, batch %lld%s: each device at %s\n", h.model.c_str(), static_cast<long long>(h.batch),
              h.optimizer == OptimizerKind::kSgd ? "" : (std::string(", optimizer ") + to_string(h.optimizer)).c_str(),
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

}  // namespace vdnn::cli
