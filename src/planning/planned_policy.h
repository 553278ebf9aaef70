// planning/planned_policy.h — what `--policy dyn` and `--policy auto` train with under a budget: the
// Net options they pick, for `vdnn train` and the Python API's vdnn.Net alike.
//
// Model: profile the network (sizes and costs from planning/plan_source.h: this CPU measured and
// calibrated, or `--costs`), plan for `budget`, then dyn: the first configuration of the paper's
// order that fits (plan/dyn.h); auto: per-tensor keep/offload/recompute, algorithms and prefetch
// rule (plan/auto_policy.h). The choice is written into the NetOptions (policy, decisions,
// per-node algorithms, prefetch rule); `summary` is the line the CLI prints, `reason` the report's.
//
//   NetOptions options{.batch = 32};
//   PlannedPolicy p = choose_planned_policy(graph, 32, "auto", 24 << 20, {}, SyncMode::kEvent, options);
//   std::printf("%s\n", p.summary.c_str());
//   Net net(std::move(graph), options);
#pragma once

#include <string>

#include "core/graph.h"
#include "planning/plan_source.h"
#include "runtime/net.h"

namespace vdnn {

struct PlannedPolicy {
  std::string summary;  // "dyn picks conv+fastest (step 2): ..." or auto's description
  std::string reason;   // "dyn step 2: ..." or "auto: ..."
};

// `policy` is "dyn" or "auto"; net_options.host_memory (0: unbounded) bounds the host copies of
// what it picks. Throws vdnn::Error naming the budgets, model, batch and policy when nothing fits.
// The per-node algorithm choice `algos` over `costs` as the Net takes it: each convolution's
// algorithm family, sub-batches and planned workspace (NetOptions::conv_algos, conv_sub_batches,
// conv_workspace_bytes).
void use_algorithms(NetOptions& net_options, const NetworkCosts& costs, const AlgoChoice& algos);

PlannedPolicy choose_planned_policy(const Graph& graph, int64_t batch, const std::string& policy, size_t budget,
                                    const PlanSourceOptions& source, SyncMode sync, NetOptions& net_options);

}  // namespace vdnn
