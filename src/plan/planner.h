// plan/planner.h — "will it fit, and at what cost": one configuration, planned and simulated.
//
// Model: a configuration is an offload policy plus one algorithm per layer. The planner plans the
// same step the Net runs (plan/planned_step.h: the training and evaluation Programs, placed by the
// memory planner — the offline placement the executor uses, its waste included — and, with
// `--prefetch ahead`, the look-ahead depth), with each layer's workspace set by its chosen
// algorithm; and simulates the training Program with the network's costs. The oracle is `none` with the fastest
// algorithms and unlimited memory; the physical bound of a configuration is its busiest stream (compute, or the link in
// one direction).
//
// Complexity (n layers, S = O(n + edges) Program steps, T tensors; measured: `vdnn plan --device
// h200` on a chain of 10,000 ReLUs 2.4 s, on a ResNet of 10,002 layers 4.1 s, both Release, 2 cores):
//   - build_program: O((n + edges) log n) — per-node indexes, prefetch candidates in an ordered set.
//   - one placement (plan/block_placement.h): a best-fit pass and three greedy orders whose scans
//     visit at most ~6M placed blocks in all (past that a block goes on the skyline, O(log S)),
//     then one pass over the steps for the reuse waits (a segment map of freed ranges), O(S log S).
//   - minimum_budget / plan_memory: one placement each (never a search over the capacity), and
//     none for a Program placed recently (memory_plan.cc remembers placements); fits() is
//     `budget >= minimum_budget()` (exact), refused without placing below live_bytes_floor, and
//     the host copies within the host budget (set_host_budget).
//   - a configuration's Programs are built once per Planner (the last 12 kept: plan/program_cache.h)
//     and its evaluation made once while among the last 4, however often the rows, dyn and auto
//     ask; fits() stops the placement at its first candidate that fits (memory_plan.h fits_within).
//   - simulate: O(S log S).
//   - evaluate: one of each; `vdnn plan`: 4 configurations + dyn; dyn: 4 fits, then for conv
//     and all a bisection of its W downgrade steps, O(log W) fits each (step 5).
//   So planning a network is O((S log S + W) log W) in all; `--prefetch ahead` adds about log2(n)
//   Programs per configuration (a threshold search over the depth, planned_step.cc), two when the
//   depth the last configuration found is still right. No pass is quadratic in the layer count.
//
//   Planner planner(graph, value_bytes, facts, costs, SyncMode::kEvent);
//   Evaluation e = planner.evaluate({Policy::kAll, costs.fastest()}, size_t{12} << 30);
//   e.fits; e.minimum_budget; e.memory.by_class; e.time.iteration_seconds; e.bound_seconds;
//   Evaluation a = planner.evaluate({Policy::kAll, costs.fastest()}, budget, Prefetch::kAhead);
//   a.prefetch_depth;   // what `vdnn train --prefetch ahead` uses at that budget
//   InferenceEvaluation i = planner.infer(size_t{4} << 30);   // forward only: peak, latency
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "plan/memory_plan.h"
#include "plan/network_costs.h"
#include "plan/planned_inference.h"
#include "plan/planned_step.h"
#include "plan/program.h"
#include "plan/program_cache.h"
#include "plan/simulator.h"
#include "plan/storage_decision.h"

namespace vdnn {

struct Configuration {
  Policy policy = Policy::kNone;
  AlgoChoice algos;
  // Per-tensor keep/offload/recompute for the training Program (plan/storage_decision.h): what
  // `auto` decided; empty for vDNN's policies, whose rule decides.
  StepDecisions decisions;
  bool operator==(const Configuration& o) const {
    return policy == o.policy && algos == o.algos && decisions == o.decisions;
  }
};

struct Evaluation {
  Configuration config;
  bool fits = false;          // at the budget asked (always true without a budget), host budget too
  bool device_fits = false;   // at the budget asked, on the device alone
  bool host_fits = true;      // its host copies fit the Planner's host budget (set_host_budget)
  size_t minimum_budget = 0;  // the least device memory this configuration trains in
  MemoryPlan memory;          // at the budget when it fits, else at the minimum budget
  int prefetch_depth = 0;     // of the training Program on `memory` (0: vDNN's rule)
  SimResult time;             // the training step, simulated on `memory`'s placement
  double bound_seconds = 0;   // the busiest stream's busy time: no schedule beats it
};

// The forward pass of a Net that only infers (plan/planned_inference.h), as `vdnn plan --inference`
// predicts it: per layer the algorithm with the fastest forward pass, leaner ones (largest
// workspace first) only as far as the budget needs. When the weights and working set do not fit,
// two ways are simulated and the faster taken: leaner algorithms with every weight resident, and
// the fastest ones with the largest layers' weights streamed from host memory over the link
// (planned_inference.h); when neither fits, both (streamed weights, then leaner algorithms).
struct InferenceEvaluation {
  AlgoChoice algos;
  int leaner_layers = 0;      // layers on a leaner algorithm than their fastest forward
  size_t streamed_bytes = 0;  // weight bytes streamed from host memory per forward pass
  bool fits = false;          // at the budget asked (always true without a budget)
  PlannedInference planned;   // at the budget when it fits, else at the smallest that works
  SimResult time;             // one forward pass (iteration_seconds: the latency of a batch)
};

class Planner {
 public:
  // `collectives`: data parallel (ranks > 1): every step planned and simulated (and the oracle)
  // has the gradient buckets and their all-reduce (plan/collectives.h), costed on costs.network.
  Planner(const Graph& graph, std::vector<size_t> value_bytes, std::vector<NodeFacts> facts, NetworkCosts costs,
          SyncMode sync, CollectiveOptions collectives = {});

  const Graph& graph() const { return graph_; }
  const NetworkCosts& costs() const { return costs_; }
  SyncMode sync() const { return sync_; }
  const CollectiveOptions& collectives() const { return collectives_; }

  // The training (or evaluation) Program of a configuration, not yet placed (without collectives).
  Program program(const Configuration& config, bool training, int prefetch_depth = 0) const;
  // The same, shared from the Planner's cache (plan/program_cache.h): built once per configuration
  // however often fits(), minimum_budget(), evaluate() and the searches ask for it.
  std::shared_ptr<const Program> built(const Configuration& config, bool training, int prefetch_depth = 0) const;
  size_t programs_built() const { return cache_.made(); }  // cache misses so far
  // The step the Net would run for this configuration (budget 0: the smallest that works).
  PlannedStep step(const Configuration& config, Prefetch prefetch, size_t budget) const;
  // Host memory for the host copies (--host-memory; 0: unbounded): a configuration whose Programs'
  // copies need more does not fit, in fits() and evaluate(), whatever the device budget.
  void set_host_budget(size_t bytes) { host_budget_ = bytes; }
  size_t host_budget() const { return host_budget_; }
  // The optimizer whose state every planned step keeps (plan/optimizer_state.h; `vdnn plan
  // --optimizer`, NetOptions::optimizer): SGD by default.
  void set_optimizer(OptimizerKind optimizer) {
    optimizer_ = optimizer;
    oracle_.reset();  // the update's time depends on it
  }
  OptimizerKind optimizer() const { return optimizer_; }
  // Where every planned step keeps that state (plan/optimizer_state.h StatePlace; `--optimizer-state`):
  // the device by default. The oracle keeps it on the device whatever this says.
  void set_optimizer_state(StatePlace place) { optimizer_state_ = place; }
  StatePlace optimizer_state() const { return optimizer_state_; }
  // The host copies both Programs of `config` need (memory_plan.h host_copies_bytes).
  size_t host_bytes(const Configuration& config) const;
  // Whether both Programs fit `budget` bytes (and the host budget).
  bool fits(const Configuration& config, size_t budget) const;
  size_t minimum_budget(const Configuration& config) const;
  // budget 0: no device budget (the configuration is placed at its minimum and "fits" the device;
  // e.fits is then host_fits). The last few evaluations are remembered (plan/program_cache.h):
  // the table's rows, dyn's and auto's picks and auto's own comparisons meet on the same ones.
  Evaluation evaluate(const Configuration& config, size_t budget, Prefetch prefetch = Prefetch::kVdnn) const;
  size_t evaluations_made() const { return evaluations_.made(); }  // memo misses so far
  // Inference (a Net with NetOptions::inference): budget 0, the smallest that works. Weights
  // streamed from host memory count against the host budget.
  InferenceEvaluation infer(size_t budget) const;
  // `none`, fastest algorithms, unlimited memory: the time every overhead is measured against.
  double oracle_seconds() const;

 private:
  const Graph& graph_;
  std::vector<size_t> value_bytes_;
  std::vector<NodeFacts> facts_;
  std::vector<NodeFacts> facts_with(const AlgoChoice& algos) const;  // workspace of the chosen algorithms
  InferenceEvaluation infer_leanest(size_t budget, bool streaming) const;
  ProgramKey key_of(const Configuration& config, bool training, int prefetch_depth) const;
  std::shared_ptr<const Program> built(const ProgramKey& key) const;
  Evaluation evaluate_anew(const Configuration& config, size_t budget, Prefetch prefetch) const;
  double oracle_anew() const;
  NetworkCosts costs_;
  SyncMode sync_;
  CollectiveOptions collectives_;
  bool conv_is_none_;  // no convolution-class layer: `conv` offloads nothing (key_of)
  size_t host_budget_ = 0;
  OptimizerKind optimizer_ = OptimizerKind::kSgd;
  StatePlace optimizer_state_ = StatePlace::kDevice;
  ProgramCache cache_;
  // The look-ahead depth the last `Prefetch::kAhead` step found: the next one's hint (auto's trials
  // differ in a few tensors, so their depths are close). It saves Programs, never changes a depth.
  LastFound last_prefetch_depth_;
  Once oracle_;
  // The last 4 evaluations, at most 2M simulated ops in all (their timelines are the bulk).
  RecentMemo<EvaluationKey, Evaluation> evaluations_{4, size_t{2} << 20,
                                                     [](const Evaluation& e) { return e.time.ops.size(); }};
};

// "all+fastest", "none+leanest", "all+default" (NetworkCosts::defaults(), where it is neither),
// "conv+fastest (3 layers leaner)".
std::string describe(const Configuration& config, const NetworkCosts& costs);

}  // namespace vdnn
