#include "planning/plan_report.h"

#include <cstdio>

#include "util/size_parse.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

nlohmann::json row_json(const PlanRow& r, double oracle) {
  const ClassStats& c = r.e.memory.by_class;
  nlohmann::json by_class;
  for (MemoryClass m : kAllMemoryClasses) by_class[to_string(m)] = c.peak(m);
  return {{"configuration", r.label},
          {"runs_as", r.runs_as},
          {"policy", to_string(r.e.config.policy)},
          {"algorithms", r.e.config.algos},
          {"peak_bytes", r.e.memory.peak_bytes},
          {"average_bytes", r.e.memory.average_bytes},
          {"peak_by_class", by_class},
          {"host_bytes", r.e.memory.host_bytes},
          {"minimum_budget", r.e.minimum_budget},
          {"fits", r.e.fits},
          {"host_fits", r.e.host_fits},
          {"prefetch_depth", r.e.prefetch_depth},
          {"iteration_seconds", r.e.time.iteration_seconds},
          {"stall_seconds", r.e.time.stall_seconds},
          {"busy_seconds", r.e.time.busy_seconds},
          {"overhead_vs_oracle", r.e.time.iteration_seconds / oracle - 1},
          {"ratio_to_bound", r.e.time.iteration_seconds / r.e.bound_seconds}};
}

}  // namespace

nlohmann::json bound_json(const StepBound& b, const AutoChoice& plan) {
  nlohmann::json out{{"feasible", b.feasible}, {"leaner_layers", b.leaner_layers}};
  out["seconds"] = b.feasible ? nlohmann::json(b.seconds) : nlohmann::json(nullptr);
  out["plan_over_bound"] = b.feasible && plan.fits ? nlohmann::json(plan.seconds / b.seconds) : nlohmann::json(nullptr);
  return out;
}

std::string describe_bound(const StepBound& b, const AutoChoice& plan) {
  if (!b.feasible) return "lower bound: none, a layer's kernels do not fit the budget on any algorithm";
  char line[256];
  std::snprintf(line, sizeof line, "lower bound %.2f ms (oracle + %d layer(s) forced onto leaner algorithms)",
                b.seconds * 1e3, b.leaner_layers);
  std::string out = line;
  if (plan.fits) {
    std::snprintf(line, sizeof line, ": the plan is at most %.1f%% above optimal", (plan.seconds / b.seconds - 1) * 100);
    out += line;
  }
  return out;
}

PlanTable plan_table(const Planner& planner, size_t budget, const std::string& policy, Prefetch prefetch) {
  if (!policy.empty() && policy != "none" && policy != "conv" && policy != "all" && policy != "dyn" && policy != "auto")
    VDNN_THROW("policy '" << policy << "': expected none, conv, all, dyn or auto (or none given: every configuration)");
  PlanTable t;
  t.budget = budget;
  const NetworkCosts& costs = planner.costs();
  t.oracle = planner.oracle_seconds();
  t.costs_source = costs.source;
  // "all+fastest", and with --prefetch ahead the depth it picks: "all+fastest, ahead 5 layers".
  const std::string ahead = prefetch == Prefetch::kAhead ? " --prefetch ahead" : "";
  auto row = [&](const std::string& prefix, const Configuration& c, Prefetch f, const std::string& runs_as) {
    PlanRow r{prefix + describe(c, costs), planner.evaluate(c, budget, f), runs_as};
    if (r.e.prefetch_depth)
      r.label += VDNN_MSG(", ahead " << r.e.prefetch_depth << (r.e.prefetch_depth == 1 ? " layer" : " layers"));
    t.rows.push_back(std::move(r));
  };
  // vDNN's policies with the algorithms `vdnn train --policy P --conv-algo auto` runs, and `none`
  // with --conv-algo direct's where they differ: each row is a command that keeps it (`none`
  // prefetches nothing, and train refuses --prefetch with it). The algorithm is named: without
  // --conv-algo, train makes convolutions direct where a budget below the row's needs it
  // (runtime/net.h NetOptions::conv_algo_asked).
  const AlgoChoice defaults = costs.defaults(), direct = costs.direct();
  auto add = [&](Policy p, const AlgoChoice& a) {
    row("", Configuration{p, a}, prefetch,
        VDNN_MSG("--policy " << to_string(p) << (a == defaults ? " --conv-algo auto" : " --conv-algo direct")
                             << (p == Policy::kNone ? "" : ahead)));
  };
  t.one = !policy.empty() && policy != "dyn" && policy != "auto";
  if (t.one) {
    add(parse_policy(policy), defaults);
  } else if (policy.empty()) {
    if (direct != defaults) add(Policy::kNone, direct);
    add(Policy::kNone, defaults);
    add(Policy::kConv, defaults);
    add(Policy::kAll, defaults);
  }
  t.has_dyn = !t.one && budget && policy != "auto";
  if (t.has_dyn) {
    t.dyn = choose_dyn(planner, budget);
    if (t.dyn.fits) row("dyn: ", t.dyn.config, prefetch, "--policy dyn" + ahead);
  }
  t.has_auto = !t.one && budget && policy != "dyn";
  if (t.has_auto) {
    t.chosen = choose_auto(planner, budget);
    t.bound = step_lower_bound(planner, budget);
    if (t.chosen.fits) row("auto: ", t.chosen.config, t.chosen.prefetch, "--policy auto");
  }
  return t;
}

nlohmann::json plan_json(const PlanTable& t, const PlanJsonHeader& h) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PlanRow& r : t.rows) rows.push_back(row_json(r, t.oracle));
  nlohmann::json out{{"model", h.model},        {"batch", h.batch},          {"sync", h.sync},
                     {"prefetch", h.prefetch},  {"optimizer", h.optimizer},  {"device", h.device},
                     {"costs", t.costs_source}, {"device_memory", t.budget}, {"oracle_seconds", t.oracle},
                     {"optimizer_state", h.optimizer_state}, {"configurations", rows}};
  if (t.has_dyn)
    out["dyn"] = {{"fits", t.dyn.fits},
                  {"step", t.dyn.step},
                  {"why", t.dyn.why},
                  {"tried", t.dyn.tried},
                  {"minimum_budget", t.dyn.minimum_budget}};
  if (t.has_auto) {
    const AutoSummary& a = t.chosen.summary;
    out["auto"] = {{"fits", t.chosen.fits},
                   {"why", t.chosen.why},
                   {"tried", t.chosen.tried},
                   {"kept_bytes", a.kept_bytes},
                   {"offloaded_bytes", a.offloaded_bytes},
                   {"recomputed_bytes", a.recomputed_bytes},
                   {"recompute_seconds", a.recompute_seconds},
                   {"leaner_algorithms", a.leaner_algorithms},
                   {"sub_batched", a.sub_batched},
                   {"lower_bound", bound_json(t.bound, t.chosen)}};
  }
  return out;
}

std::optional<SliceRunChoice> plan_slice_runs(const Graph& graph, int64_t batch, const std::string& policy,
                                              const PlanSourceOptions& source, size_t budget, SyncMode sync,
                                              size_t host_budget, OptimizerKind optimizer) {
  if (policy != "auto" || source.device == "cpu" || budget == 0) return std::nullopt;
  const InputsOf inputs_of = [&](const Graph& g) {
    PlanInputs in = plan_inputs(g, batch, source);
    return PlannerInputs{std::move(in.value_bytes), std::move(in.facts), std::move(in.costs)};
  };
  return choose_slice_runs(graph, batch, inputs_of, sync, budget, host_budget, optimizer);
}

nlohmann::json slice_runs_json(const SliceRunChoice& c, double oracle) {
  nlohmann::json runs = nlohmann::json::array();
  for (const SliceRun& r : c.runs) runs.push_back(to_string(r));
  return {{"runs", runs},
          {"fits", c.choice.fits},
          {"step_ms", c.choice.seconds * 1e3},
          {"vs_oracle", c.choice.seconds / oracle},
          {"tried", c.tried},
          {"auto_searches", c.evaluations},
          {"pruned", c.pruned},
          {"lower_bound", bound_json(c.bound, c.choice)}};
}

}  // namespace vdnn
