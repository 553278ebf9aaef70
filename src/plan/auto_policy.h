// plan/auto_policy.h — `auto`: keep, offload or recompute each tensor, and choose each convolution's
// algorithm, for the fastest simulated step that fits a budget (issue 17; beyond vDNN).
//
// Model. vDNN's policies apply one rule to every tensor (offload all of them, or every
// convolution's input) whether memory is short or not. `auto` decides per decision unit — a
// feature-map storage the backward pass reads (keep / offload / recompute), a kernel's saved
// state (keep / offload) and a convolution's algorithm (its workspace) — in three phases:
//   1. Fit (peak-driven greedy, as SuperNeurons and Capuchin do it): build the training Program,
//      find the step where the most bytes are live, and among the units live there that the step's
//      own kernel does not touch, take the cheapest per byte saved until the peak is below the
//      budget: recomputing a storage costs its writers' forward time again (cheap layers first:
//      ReLU, pooling, batch norm, LRN, dropout, but a cheap convolution too, Checkmate's point);
//      offloading costs the copy time the forward pass cannot hide (a FIFO model of the d2h link
//      against the forward compute still to come) plus what the last few backward kernels before
//      its reader cannot hide (2 and 4 kernels are both tried); a leaner
//      algorithm costs its extra time per byte of workspace. Repeat with the new peak; once the
//      live peak is below the budget, the placement is checked: fragmentation lowers the target,
//      an evaluation pass that does not fit gets a leaner algorithm at its own peak.
//      When no decision lowers the peak enough (the kernel at the peak touches what would have to
//      go), the search starts instead from what `all` offloads, each offload priced at its copy
//      time, and refine undoes those the step does not need.
//   2. Refine (the simulator in the loop): undo the costliest decisions one by one while the step
//      still fits and its simulated time drops (at most 16 trials), then swap each storage still
//      off the device between offload and recompute where that is faster. Each window's fit is
//      refined; the faster goes on.
//   3. Points: prefetch points (Capuchin's in-trigger: the 8 prefetches read first each move to
//      the earliest backward slot, within 16 of the rule's, that still fits) and release points
//      (each offloaded tensor's device copy held until the forward kernel that starts after its
//      copy ends in the simulated step, all holds scaled down together until they fit, so that
//      nothing is placed over a range the link still reads). The decisions alone, with either
//      and with both, each under vDNN's prefetch rule and the deepest look-ahead that fits
//      (prefetch points: the rule): the fastest is kept.
// Every phase does a bounded number of plans, so the answer is deterministic.
// The result is then compared with vDNN's own answers at the same budget (none, conv, all with
// the fastest algorithms, both prefetch rules, and dyn's pick): `auto` returns whichever
// simulates fastest, so it is never slower than the best of them that fits, and fits every
// budget `all` (dyn's last resort) fits. Decisions never change the math: recompute re-runs the
// same kernels on the same inputs (plan/storage_decision.h), so weights stay bit-identical.
//
//   Planner planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
//   AutoChoice a = choose_auto(planner, size_t{12} << 30);
//   if (!a.fits) fail(a.why);
//   Evaluation e = planner.evaluate(a.config, size_t{12} << 30, a.prefetch);
//   NetOptions o; o.policy = a.config.policy; o.decisions = a.config.decisions;
//   o.conv_algos = conv_algos_of(planner.costs(), a.config.algos); o.prefetch_ahead = a.prefetch == Prefetch::kAhead;
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "plan/planner.h"

namespace vdnn {

struct AutoSummary {
  size_t kept_bytes = 0, offloaded_bytes = 0, recomputed_bytes = 0;  // feature maps and saved state
  int leaner_algorithms = 0;     // convolutions not on their fastest algorithm (sub-batched too)
  int sub_batched = 0;           // of those, convolutions run in sub-batches
  double recompute_seconds = 0;  // forward kernels re-run per step (the cost model's)
};

struct AutoChoice {
  bool fits = false;
  Configuration config;  // Policy::kAuto with its decisions, or the vDNN policy that won
  Prefetch prefetch = Prefetch::kAhead;
  double seconds = 0;  // the simulated step of `config` at the budget
  std::string why;     // one sentence: what was chosen and why
  AutoSummary summary;
  std::vector<std::string> tried;  // the search's rounds and the comparisons, in order
  int evaluations = 0;             // full plans + simulations the search ran
};

AutoChoice choose_auto(const Planner& planner, size_t budget);

// Per layer (one line each, `vdnn plan --print`): its output storage's bytes and what happens to it
// (keep, offload, recompute; "in place" for a ReLU over its input's storage; an offload's release
// and prefetch points when it has them), its saved state offloaded, and its algorithm when not the
// fastest.
std::string decisions_by_layer(const Planner& planner, const Configuration& config);

// One line for the CLI: "auto picks per-tensor decisions: ...; 7.44 GiB kept, 8.57 GiB offloaded,
// 0 B recomputed (0.00 ms of forward kernels again), 2 convolution(s) on a leaner algorithm."
std::string describe(const AutoChoice& choice);

// What a configuration's decisions amount to on its training Program (bytes per action).
AutoSummary summarize(const Planner& planner, const Configuration& config);

}  // namespace vdnn
