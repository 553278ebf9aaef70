#include "planning/planned_policy.h"

#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "plan/network_costs.h"
#include "plan/planner.h"
#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {

void use_algorithms(NetOptions& net_options, const NetworkCosts& costs, const AlgoChoice& algos) {
  net_options.conv_algos = conv_algos_of(costs, algos);
  net_options.conv_sub_batches = conv_sub_batches_of(costs, algos);
  net_options.conv_workspace_bytes = conv_workspace_of(costs, algos);
}

PlannedPolicy choose_planned_policy(const Graph& graph, int64_t batch, const std::string& policy, size_t budget,
                                    const PlanSourceOptions& source, SyncMode sync, NetOptions& net_options) {
  if (policy != "dyn" && policy != "auto") VDNN_THROW("policy '" << policy << "': expected dyn or auto");
  const PlanInputs in = plan_inputs(graph, batch, source);
  Planner planner(graph, in.value_bytes, in.facts, in.costs, sync);
  planner.set_host_budget(net_options.host_memory);
  planner.set_optimizer(net_options.optimizer);
  planner.set_optimizer_state(net_options.optimizer_state);
  const std::string host = net_options.host_memory ? VDNN_MSG(" with " << net_options.names("host_memory") << " "
                                                                       << describe_budget(net_options.host_memory))
                                                   : std::string();
  if (policy == "auto") {
    const AutoChoice a = choose_auto(planner, budget);
    if (!a.fits)
      VDNN_THROW(net_options.names("device_memory")
                 << " " << describe_budget(budget) << host << " is too small for model '" << graph.name()
                 << "' at batch " << batch << " with policy auto: " << a.why);
    net_options.policy = a.config.policy;
    net_options.decisions = a.config.decisions;
    use_algorithms(net_options, planner.costs(), a.config.algos);
    net_options.prefetch_ahead = a.prefetch == Prefetch::kAhead;
    return {describe(a), "auto: " + a.why};
  }
  const DynChoice d = choose_dyn(planner, budget);
  if (!d.fits) {
    const bool auto_fits = choose_auto(planner, budget).fits;  // below dyn's floor, auto may still fit: say so
    VDNN_THROW(net_options.names("device_memory")
               << " " << describe_budget(budget) << host << " is too small for model '" << graph.name() << "' at batch "
               << batch << " with policy dyn: " << d.why
               << (auto_fits ? VDNN_MSG("; " << net_options.names("policy")
                                             << " auto fits it (it keeps, offloads or recomputes each tensor)")
                             : std::string()));
  }
  net_options.policy = d.config.policy;
  use_algorithms(net_options, planner.costs(), d.config.algos);
  return {VDNN_MSG("dyn picks " << describe(d.config, planner.costs()) << " (step " << d.step << "): " << d.why),
          VDNN_MSG("dyn step " << d.step << ": " << d.why)};
}

}  // namespace vdnn
