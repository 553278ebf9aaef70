// plan/planned_step.h — the planned training step: what the Net runs and what `vdnn plan` predicts.
//
// Model: one function plans a step from the graph and the kernels' sizes (value bytes + NodeFacts,
// as a backend declares them or a device-free target predicts them) and the options (policy, sync,
// prefetch rule, budget): the training Program under the policy and the evaluation Program (no
// offload), both placed in one arena of the budget (0: the smallest that works), and with
// `Prefetch::kAhead` the deepest look-ahead whose placement fits (planned_step.cc: a threshold
// search on the live-bytes floor, which grows with the depth, then a walk down to the first depth
// the placement fits; the same depth whatever the hint, in about log2(n) Programs without one). The Net executes exactly this (runtime/net.h);
// the Planner (plan/planner.h) calls it for every configuration it reports, so `vdnn plan`
// predicts the depth and peak `vdnn train` uses. Planning lives here only: a new planner changes
// this one place.
//
//   PlannedStep s = plan_step(graph, value_bytes, facts,
//                             {.policy = Policy::kAll, .prefetch = Prefetch::kAhead, .budget = 48 << 20});
//   if (!s.fits) throw Error(budget_refusal(graph, value_bytes, facts, options, batch, s));
//   s.train; s.train_plan.peak_bytes; s.prefetch_depth; s.smallest_budget;
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "plan/collectives.h"
#include "plan/memory_plan.h"
#include "plan/optimizer_state.h"
#include "plan/policy.h"
#include "plan/program.h"
#include "plan/storage_decision.h"
#include "util/option_names.h"

namespace vdnn {

struct StepOptions {
  Policy policy = Policy::kNone;
  SyncMode sync = SyncMode::kEvent;
  Prefetch prefetch = Prefetch::kVdnn;
  size_t budget = 0;  // bytes; 0: the smallest budget that works
  // Per-tensor keep/offload/recompute for the training Program (plan/storage_decision.h); empty:
  // `policy` decides. The `auto` policy fills these; tests set them by hand.
  StepDecisions decisions;
  // Data parallel: ranks > 1 adds gradient buckets and their all-reduce (plan/collectives.h).
  CollectiveOptions collectives;
  // The optimizer whose state the training step keeps per trainable parameter (SGD: one buffer of
  // its bytes, AdamW: two), placed with the parameters in both Programs.
  OptimizerKind optimizer = OptimizerKind::kSgd;
  StatePlace optimizer_state = StatePlace::kDevice;  // where that state lives (plan/optimizer_state.h)
  // `Prefetch::kAhead`: a look-ahead depth expected near the answer (the one a similar step found;
  // 0: none). It changes how many Programs the search builds, never the depth it finds.
  int prefetch_depth_hint = 0;
};

struct PlannedStep {
  bool fits = false;           // both Programs fit `capacity`
  size_t smallest_budget = 0;  // of the step with vDNN's prefetch rule (memory_plan.h: exact)
  size_t capacity = 0;         // the arena: the budget asked, or smallest_budget without one
  Program train, eval;         // placed (offsets filled) when fits
  MemoryPlan train_plan, eval_plan;
  int prefetch_depth = 0;  // 0: vDNN's rule; N: look N backward layers ahead
};

PlannedStep plan_step(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                      const StepOptions& options);
// The same step from Programs someone else builds (training or evaluation, look-ahead depth; built
// with `options`' policy, sync, decisions and optimizer): the Planner hands out its cached ones
// (plan/program_cache.h), so a configuration planned twice is built once.
using ProgramSource = std::function<Program(bool training, int prefetch_depth)>;
PlannedStep plan_step(const Graph& graph, const ProgramSource& programs, const StepOptions& options);

// Why a step that does not fit is refused, in one sentence: the budget asked and the smallest one
// (to the byte), every policy's smallest, where the first allocation past the budget lands, and
// whether `auto` may fit it (above what the parameters, gradients and momentum alone take).
// `names` spells the budget's option (util/option_names.h: --device-memory or device_memory).
std::string budget_refusal(const Graph& graph, const std::vector<size_t>& value_bytes,
                           const std::vector<NodeFacts>& facts, const StepOptions& options, int64_t batch,
                           const PlannedStep& step, const OptionNames& names = {});

}  // namespace vdnn
