// tools/plan_devices.h — how `vdnn plan --device A,B,...` shows its answer (planning/device_table.h):
// one row per device with its budget, its oracle, each policy's predicted step (`-` where it does
// not fit) and the fastest policy that fits, with its overhead against that device's oracle.
//
//   std::vector<DevicePlan> rows = plan_devices(graph, 8, {.devices = {"v100-16gb", "h100"}});
//   print_device_table(rows, {.model = "gpt2", .batch = 8});
#pragma once

#include <vector>

#include "planning/device_table.h"

namespace vdnn::cli {

void print_device_table(const std::vector<DevicePlan>& rows, const DeviceTableHeader& header);

}  // namespace vdnn::cli
