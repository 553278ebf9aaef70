// plan/prefetch_points.h — where each offloaded tensor of a Program is prefetched, and who reads it
// first in the backward pass: what the `auto` search needs to move a prefetch earlier (issue 17).
//
// Model: the backward pass issues node n-1's slot first, node 0's last. A slot issues its
// prefetches, then the compute stream's waits on them, its recomputes, then the node's backward
// kernel. A tensor's prefetch may be issued in any slot from its first backward reader's (just in
// time) to node n-1's (the start of the backward pass): StorageDecision::prefetch_at names that
// node; -1 leaves it to the Program's rule (vDNN's, or the prefetch_depth look-ahead). Both the
// issue point and the reader are read back from the Program's steps (the kPrefetch, and the
// compute stream's wait on its event), so a slot describes what the Program does, whatever chose it.
//
//   ProgramOptions options{Policy::kAll, SyncMode::kEvent};
//   Program all = build_program(graph, value_bytes, facts, options);
//   options.decisions = decisions_of(all, graph);   // what `all` offloads, said per tensor
//   const int last = static_cast<int>(graph.nodes().size()) - 1;
//   for (const PrefetchSlot& s : prefetch_slots(all))   // each prefetch two slots earlier
//     decision_for(options.decisions, graph, s).prefetch_at = std::min(s.issued_at + 2, last);
//   Program earlier = build_program(graph, value_bytes, facts, options);
#pragma once

#include <vector>

#include "core/graph.h"
#include "plan/program.h"
#include "plan/storage_decision.h"

namespace vdnn {

struct PrefetchSlot {
  int tensor = -1;     // the Program tensor prefetched
  int node = -1;       // the node whose output storage (its first writer) or saved buffer it is;
                       // -1: the graph input (value 0)
  int saved = -1;      // index into Program::nodes[node].saved; -1: the node's output storage
  int reader = -1;     // its first backward reader: the node whose backward slot waits for it
  int issued_at = -1;  // the node whose backward slot issues its prefetch (>= reader)
};

// One slot per kPrefetch of `program`'s backward pass, in issue order.
std::vector<PrefetchSlot> prefetch_slots(const Program& program);

// What `program` keeps, offloads and recomputes, as explicit decisions (every prefetch point -1:
// rebuilt with the same policy and prefetch_depth, they give `program` back when it had no points
// of its own). A prefetch point may only go on an offloaded tensor, so a search that starts from a
// policy's Program writes its choices out with this first.
StepDecisions decisions_of(const Program& program, const Graph& graph);

// The decision a slot's tensor is decided by (the graph value its first writer produced, or the
// node's saved buffer), `decisions` sized for `graph` where it was empty.
StorageDecision& decision_for(StepDecisions& decisions, const Graph& graph, const PrefetchSlot& slot);

}  // namespace vdnn
