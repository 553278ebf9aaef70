// planning/plan_report.h — the configurations `vdnn plan` compares, and its JSON, built once for the
// CLI (tools/plan_command.cc) and the Python API (python/src/model.cc), so their figures agree.
//
// Model: for a Planner and a budget, the rows are none, conv and all with the algorithms `vdnn
// train --policy P` runs (NetworkCosts::defaults(): its default --conv-algo auto), none with
// --conv-algo direct's (when they differ), then what vDNN_dyn picks and what `auto` decides (each
// only when a budget is known and it fits). A plan is a promise: each row is the step of the
// `vdnn train` flags in its `runs_as`, so `vdnn train <runs_as> --device-memory <its minimum
// budget>` trains (same costs: dyn and auto choose from measured costs). `policy` narrows it: ""
// all of them, "none"/"conv"/"all" that one row, "dyn" or "auto" that choice only. Beside `auto`
// (and the slice search's plan), a lower bound on any plan's step at the budget, so a plan says
// how far from optimal it can be at most. plan_json is `vdnn plan --json` without "sweep" (the
// CLI adds it).
//
//   PlanTable t = plan_table(planner, budget, "", Prefetch::kVdnn);
//   nlohmann::json j = plan_json(t, {.model = g.name(), .batch = 32, .device = in.device});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "plan/planner.h"
#include "plan/slice_search.h"
#include "plan/step_bound.h"
#include "planning/plan_source.h"

namespace vdnn {

struct PlanRow {
  std::string label;  // "all+fastest", "dyn: conv+leanest", "auto: ..., ahead 3 layers"
  Evaluation e;
  std::string runs_as;  // the `vdnn train` flags that run it: "--policy none --conv-algo direct", "--policy dyn"
};

struct PlanTable {
  std::vector<PlanRow> rows;
  size_t budget = 0;                       // 0: none known (no dyn or auto)
  double oracle = 0;                       // seconds: none, fastest algorithms, unlimited memory
  std::string costs_source;                // where the costs came from (NetworkCosts::source)
  bool one = false;                        // policy none/conv/all: that row only
  bool has_dyn = false, has_auto = false;  // whether dyn / auto were asked (they may not fit)
  DynChoice dyn;
  AutoChoice chosen;
  StepBound bound;  // has_auto: no plan of this graph at the budget is faster (plan/step_bound.h)
};

// Throws vdnn::Error naming the policy when it is not "", none, conv, all, dyn or auto.
PlanTable plan_table(const Planner& planner, size_t budget, const std::string& policy, Prefetch prefetch);

// The header fields of the JSON that are not in the table.
struct PlanJsonHeader {
  std::string model;
  int64_t batch = 0;
  std::string sync = "event", prefetch = "vdnn", device = "cpu";
  std::string optimizer = "sgd";  // whose state the plans keep (Planner::set_optimizer)
  std::string optimizer_state = "device";  // where (Planner::set_optimizer_state)
};

nlohmann::json plan_json(const PlanTable& table, const PlanJsonHeader& header);

// `auto` with slice runs (plan/slice_search.h), as `vdnn plan` and vdnn.plan run it: for policy
// "auto" on a device profile with a budget (costs measured on this CPU would mean profiling every
// candidate's sliced graph); nullopt otherwise. The graph must be the unsliced one.
std::optional<SliceRunChoice> plan_slice_runs(const Graph& graph, int64_t batch, const std::string& policy,
                                              const PlanSourceOptions& source, size_t budget, SyncMode sync,
                                              size_t host_budget, OptimizerKind optimizer = OptimizerKind::kSgd);
// A lower bound beside a plan, as JSON ({feasible, seconds, leaner_layers, plan_over_bound}) and
// as a clause for the CLI ("lower bound 2399.64 ms (...): the plan is at most 1.7% above optimal").
nlohmann::json bound_json(const StepBound& bound, const AutoChoice& plan);
std::string describe_bound(const StepBound& bound, const AutoChoice& plan);

// Its JSON ("slice_runs"), against the whole graph's oracle.
nlohmann::json slice_runs_json(const SliceRunChoice& choice, double oracle);

}  // namespace vdnn
