// plan/storage_decision.h — what happens to each tensor the backward pass reads: keep, offload or
// recompute (issue 17; the mechanism the `auto` policy fills in).
//
// Model: a decision per graph value (its storage: a value and the in-place ReLUs over it share one
// decision, the one of the value its first writer produced) and per kernel-saved buffer:
//   keep       stays on the device from its writer to its last backward reader (vDNN's `none`)
//   offload    copied to the host after its last writer, prefetched for the backward pass by the
//              Program's prefetch rule (vDNN's mechanism, program_builder.h), or at its own
//              prefetch point: prefetch_at = k issues the prefetch in node k's backward slot (before
//              that slot's recomputes and kernel). The backward pass runs nodes last to first, so k
//              runs from the tensor's first backward reader (just in time) to the last node (the
//              start of the backward pass); plan/prefetch_points.h says where each one is now.
//              Its device copy is freed after its last forward reader, or at its release point
//              (release_at = k: after node k's forward kernel).
//   recompute  freed after its last forward reader (no copy); in the backward pass, just before its
//              first backward reader, a fresh buffer is allocated and the storage's writer and its
//              in-place ReLUs re-run their forward kernels into it (Op::kRecompute), from inputs that
//              are then on the device (kept, prefetched or themselves recomputed, in forward order).
// Kernel-saved state is never recomputed on its own. What a recompute reads is kept or offloaded as
// decided here: batch-norm mean/variance (the forward's statistics; running averages left alone)
// and the dropout mask (the same mask). What the forward writes wholly from its inputs
// (NodeFacts::saved_regenerated: max pooling's argmax, LRN's workspace) is dropped with its node's
// output and regenerated, with the same values, by the recompute. The math does not change. A decision on a value the
// backward pass does not read changes nothing; the graph input, the logits and the loss cannot be recomputed. Empty
// decisions: the policy decides (none/conv/all exactly as vDNN defines them).
//
//   StepDecisions d;
//   d.values.assign(graph.values().size(), {});
//   d.values[3] = {StorageAction::kRecompute};          // e.g. a pooling layer's output
//   d.values[5] = {StorageAction::kOffload};
//   d.values[7] = {StorageAction::kOffload, 12};         // its prefetch issued in node 12's backward slot
//   d.values[8] = {StorageAction::kOffload, -1, 9};      // its device copy held until node 9's forward ends
//   ProgramOptions o{Policy::kNone, SyncMode::kEvent};
//   o.decisions = d;                                     // then build_program(graph, ..., o)
#pragma once

#include <vector>

namespace vdnn {

enum class StorageAction { kKeep, kOffload, kRecompute };

inline const char* to_string(StorageAction a) {
  return a == StorageAction::kKeep ? "keep" : a == StorageAction::kOffload ? "offload" : "recompute";
}

struct StorageDecision {
  StorageAction action = StorageAction::kKeep;
  // Offloaded only: the node whose backward slot issues the prefetch, from the tensor's first
  // backward reader up to the last node; -1: the Program's rule (vDNN's, or the look-ahead).
  int prefetch_at = -1;
  // Offloaded only: the node after whose forward kernel the device copy is freed, from the
  // tensor's last forward reader (as soon as it may) up to the last node; -1: as soon as it may.
  // Holding the space longer lets the copy finish before anything is placed over it: the step
  // then never waits for the link to reuse that range (the memory-for-time trade of a release
  // point; plan/memory_plan.h inserts the waits a reuse needs).
  int release_at = -1;
  bool operator==(const StorageDecision&) const = default;
};

struct StepDecisions {
  std::vector<StorageDecision> values;              // per graph value; empty: every value kept
  std::vector<std::vector<StorageDecision>> saved;  // per node, per saved buffer (keep or offload)

  bool empty() const { return values.empty() && saved.empty(); }
  bool operator==(const StepDecisions&) const = default;
  bool any(StorageAction a) const {
    for (const StorageDecision& d : values)
      if (d.action == a) return true;
    for (const auto& node : saved)
      for (const StorageDecision& d : node)
        if (d.action == a) return true;
    return false;
  }
};

}  // namespace vdnn
