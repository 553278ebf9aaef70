// planning/state_placement.h — where the optimizer state should live for a training step: planned
// both ways, the faster wins (`vdnn plan --optimizer-state auto`, vdnn.plan(optimizer_state="auto")).
//
// Model: the step is planned with the state on the device and with it in host memory
// (plan/optimizer_state.h StatePlace), each as `vdnn plan` plans it (every row of the policy asked,
// or all of them), and each placement is worth its fastest row that fits. The host wins only where
// it is faster or the only one that fits; a device profile without a host bandwidth plans the
// device alone. A whole-model choice: per-tensor placement is not built.
//
//   StatePlacement p =
//       choose_state_placement(graph, 8, {.device = "rtx-4090"}, {.optimizer = OptimizerKind::kAdamW}, "auto");
//   p.place;    // StatePlace::kHost where only it fits
//   p.summary;  // "optimizer state in host memory: its fastest fitting row 2364.43 ms; ..."
#pragma once

#include <optional>
#include <string>

#include "core/graph.h"
#include "planning/device_planner.h"
#include "planning/plan_source.h"

namespace vdnn {

struct StatePlacement {
  StatePlace place = StatePlace::kDevice;
  std::optional<double> device_seconds, host_seconds;  // each placement's fastest fitting row; none: nothing fits
  std::string summary;                                 // one line: the choice and why
};

// `request.optimizer_state` is ignored (both are tried); `policy` as plan_table takes it ("": all).
// Both placements are planned on the same inputs (this CPU's costs measured once).
StatePlacement choose_state_placement(const Graph& graph, const PlanInputs& in, PlannerRequest request,
                                      const std::string& policy, Prefetch prefetch = Prefetch::kVdnn,
                                      const OptionNames& names = {});
// The same from a source: plan_inputs(graph, batch, source), then the above.
StatePlacement choose_state_placement(const Graph& graph, int64_t batch, const PlanSourceOptions& source,
                                      PlannerRequest request, const std::string& policy,
                                      Prefetch prefetch = Prefetch::kVdnn);

}  // namespace vdnn
