// tests/stress/stress_case.h — one random network, trained under random configurations and
// checked against its `none` run.
//
// Model: the reference is `none`, event sync, no link model, no budget; its weights hash after a
// few training steps is what every configuration must reproduce. A configuration draws a policy,
// sync mode, link (unlimited, or 0.5–20 GB/s with 0–50 us latency), prefetch rule, whether to
// evaluate, and a budget relative to the smallest budgets of the three policies: none (0), tiny,
// below the policy's own, just below it, exactly it, just above it, between the policies', or
// generous (up to 3x). A case
// ends in one of two ways, anything else is a failure:
//   trained — the Net accepted the budget (its arena is exactly that size) and the hash matches;
//   refused — the Net constructor threw vdnn::Error naming the smallest budget, which is the
//             policy's real smallest (what a Net without a budget takes), above the refused one,
//             and which then trains to the same hash.
// A failure (another exception, an error mid-step, a different hash, a wrong message) is
// described with the network's seed, the case, its configuration and the model JSON.
// `auto` cases (issue 17) plan on made-up costs drawn from the seed (stress/made_up_costs.h) with
// choose_auto, then train what it chose (policy, per-tensor decisions, prefetch rule) in a Net:
//   trained — auto fits the budget with its own per-tensor decisions, the Net accepts them (arena
//             exactly that size) and trains to the same hash;
//   vDNN's  — auto chose one of vDNN's policies (faster than its own decisions, or the budget
//             leaves nothing to decide): the vDNN cases train those, it is not trained again;
//   refused — auto finds nothing that fits, the budget is below the floor (the least of the vDNN
//             policies' smallest budgets, each of which auto must fit) and the reason names
//             `all`'s smallest budget.
//
//   NetworkStress s(random_network(7));                 // trains the reference
//   for (int i = 0; i < kCasesPerNetwork; ++i) {
//     CaseResult r = s.run(i);
//     if (r.outcome == CaseResult::kFailed) ADD_FAILURE() << r.message;
//   }
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "runtime/net.h"
#include "stress/random_network.h"

namespace vdnn::stress {

// Case i of a network uses policy i % 3 and sync mode (i / 3) % 2: six cases cover them all.
inline constexpr int kCasesPerNetwork = 6;
// `auto` case k of a network uses sync mode k % 2 and a budget between the floor and none's
// smallest (rule kBetweenPolicies, 3 in 4) or below the floor, down to half of it (kBelowMinimum).
inline constexpr int kAutoCasesPerNetwork = 2;

enum class BudgetRule {
  kNone,
  kTiny,
  kBelowMinimum,
  kJustBelowMinimum,
  kMinimum,
  kJustAboveMinimum,
  kBetweenPolicies,
  kGenerous
};
const char* to_string(BudgetRule rule);

struct StressConfig {
  Policy policy = Policy::kNone;
  SyncMode sync = SyncMode::kEvent;
  LinkModel link;
  bool prefetch_ahead = false;
  bool evaluate = false;  // also run the evaluation Program (it shares the arena)
  BudgetRule budget_rule = BudgetRule::kNone;
  double budget_draw = 0;  // [0, 1): where in the rule's range the budget falls
};

struct CaseResult {
  // kVdnnPolicy (`auto` only): it chose one of vDNN's policies, at a budget that policy fits —
  // what the vDNN cases train — so it is not trained again.
  enum Outcome { kTrained, kRefused, kFailed, kVdnnPolicy } outcome = kFailed;
  size_t budget = 0;
  std::string message;  // kRefused: the Net's (or auto's) reason; kFailed: what went wrong, for replaying
  // `auto`, trained: what its decisions made the Net's training Program offload and recompute per step.
  size_t offloaded_bytes = 0, recomputed_bytes = 0;
};

class NetworkStress {
 public:
  // Trains the reference; a failure there is reported by reference_failure().
  explicit NetworkStress(RandomNetwork network, int64_t steps = 3);

  const RandomNetwork& network() const { return network_; }
  const std::string& reference_failure() const { return reference_failure_; }
  StressConfig config(int index) const;
  CaseResult run(int index);
  // `auto` case k (policy kAuto; prefetch_ahead unused: auto picks the prefetch rule).
  StressConfig auto_config(int k) const;
  CaseResult run_auto(int k);
  // "network seed 7, case 3: policy all, sync layer, link 3.20 GB/s + 10 us, ...", for messages.
  std::string describe(int index) const;
  std::string describe_auto(int k) const;  // "network seed 7, auto case 1: sync layer, ..."
  // The seed, the model and how to replay it: appended to every failure.
  std::string replay() const;

 private:
  // What a Net of this policy and sync mode takes without a budget (its smallest budget).
  size_t smallest(Policy policy, SyncMode sync);
  size_t budget(const StressConfig& c);
  NetOptions options(const StressConfig& c, size_t budget) const;
  std::string train(const NetOptions& options, bool evaluate);
  std::string train(Net& net, bool evaluate);
  CaseResult check_refusal(int index, size_t budget, const std::string& what);
  std::string describe(const std::string& which, const StressConfig& c) const;
  // The least of the vDNN policies' smallest budgets: `auto` fits every budget from there up.
  size_t floor(SyncMode sync);
  // Trains an accepted Net: "" when its arena is the budget (0: any) and the hash is none's,
  // else what went wrong.
  std::string trains_as_none(Net& net, size_t budget, bool evaluate);

  RandomNetwork network_;
  int64_t steps_;
  ConvAlgo conv_algo_;
  Dataset train_set_, test_set_;
  std::string reference_hash_, reference_failure_;
  std::map<std::pair<Policy, SyncMode>, size_t> smallest_;
  std::vector<size_t> value_bytes_;  // the Net's kernels' sizes, for planning `auto` (lazily)
  std::vector<NodeFacts> facts_;
};

}  // namespace vdnn::stress
