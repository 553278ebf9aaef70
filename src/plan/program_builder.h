// plan/program_builder.h — compiles Graph + kernel facts + policy into a Program.
//
// Model (vDNN, generalised to DAGs): a storage (a value and the in-place ReLUs that overwrite it)
// is offloaded once, right after its last writer in the forward pass, overlapping the next layers;
// its device copy is released after its last forward reader and the copy are both done. In the
// backward pass it is prefetched before its first backward reader at the latest, and earlier by
// vDNN's rule: when layer m's backward is issued, the nearest earlier layer with offloaded inputs
// not yet prefetched is prefetched too, never looking past a convolution. Gradient storages are
// allocated by their first writer in backward order and released after their producer's
// backward; workspace lives for one kernel.
// Explicit decisions (ProgramOptions::decisions, plan/storage_decision.h) replace the policy's
// choice per storage: keep, offload (the mechanism above) or recompute — dropped after its last
// forward reader, re-made in the backward slot of its first backward reader by kRecompute steps
// (its writer and in-place ReLUs, in forward order, a chain of recomputed storages oldest first);
// the inputs those kernels read count as read by that slot, so they stay on the device (or are
// prefetched, or recomputed) until then.
// A decision's prefetch point (StorageDecision::prefetch_at = k) takes an offloaded tensor out of
// the rule: its prefetch is issued in node k's backward slot, before the slot's own prefetches,
// recomputes and kernel (in a slot, nearest reader first: points equal to the rule's give the
// rule's Program); its first reader waits for it as usual, however many slots earlier it came.
// A release point (StorageDecision::release_at = k) holds an offloaded tensor's device copy until
// node k's forward kernel is issued, instead of freeing it after its last forward reader: the
// placement then puts nothing over it while its copy may still run.
// Streamed weights (ProgramOptions::streamed_weights, inference only) live in host memory: a
// streamed layer's weights are prefetched on the h2d stream while the weighted layer before it
// computes (one weighted layer ahead, vDNN's prefetch rule turned forward; the first weighted
// layer's at the start, with the input upload), waited for by its forward kernel and freed after it.
//
//   std::vector<NodeFacts> facts = ...;   // from the backend's kernels
//   Program train = build_program(graph, value_bytes, facts, {Policy::kConv, SyncMode::kEvent});
//   Program eval = build_program(graph, value_bytes, facts, {Policy::kNone, SyncMode::kEvent, false});
//   ProgramOptions mixed{Policy::kNone, SyncMode::kEvent};
//   mixed.decisions.values.assign(graph.values().size(), {});
//   mixed.decisions.values[2] = {StorageAction::kRecompute};   // e.g. a ReLU'd conv output
//   Program recompute = build_program(graph, value_bytes, facts, mixed);
#pragma once

#include <vector>

#include "core/graph.h"
#include "plan/optimizer_state.h"
#include "plan/program.h"
#include "plan/storage_decision.h"

namespace vdnn {

struct ProgramOptions {
  Policy policy = Policy::kNone;
  SyncMode sync = SyncMode::kEvent;
  bool training = true;
  // A Program of a Net that never trains (runtime/net.h NetOptions::inference): forward only, and
  // no gradient or momentum tensors at all, so the device holds the weights and the working set
  // only. Needs training == false.
  bool inference = false;
  // Kernel-saved state smaller than this stays on the device under `all` (BN statistics etc.).
  size_t min_offload_bytes = 16 * 1024;
  // 0: vDNN's rule (the nearest earlier layer with offloaded inputs, never past a convolution).
  // N > 0: look-ahead — when a layer's backward is issued, prefetch what the next N layers of the
  // backward pass read (the budget-driven option picks the largest N that fits, see planned_step.h).
  int prefetch_depth = 0;
  // Per value/saved buffer keep, offload or recompute, and an offload's prefetch point (training
  // Programs only); empty: `policy`.
  StepDecisions decisions;
  // Inference only: per node, whether its weights are streamed from host memory (see above);
  // empty: every weight stays on the device.
  std::vector<bool> streamed_weights;
  // Trained Programs: the optimizer whose state (plan/optimizer_state.h) each trainable parameter
  // keeps beside its gradient, persistent, as MemoryClass::kOptimizerState: SGD one buffer of the
  // parameter's bytes (":momentum"), AdamW two (":exp_avg", ":exp_avg_sq").
  OptimizerKind optimizer = OptimizerKind::kSgd;
  // kHost: that state is on_host (never on the device) and each trainable weight and its gradient
  // are host_mirror tensors, listed in Program::host_updated (plan/optimizer_state.h StatePlace).
  StatePlace optimizer_state = StatePlace::kDevice;
};

Program build_program(const Graph& graph, const std::vector<size_t>& value_bytes, const std::vector<NodeFacts>& facts,
                      const ProgramOptions& options);

}  // namespace vdnn
