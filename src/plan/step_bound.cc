#include "plan/step_bound.h"

#include <algorithm>
#include <set>

namespace vdnn {
namespace {

// The bytes a node's forward and backward kernels touch, outside the persistent tensors and the
// workspace: the larger of the two.
size_t kernel_bytes(const Program& p, const NodeBinding& b) {
  auto bytes = [&](const std::set<int>& ts) {
    size_t sum = 0;
    for (int t : ts)
      if (t >= 0 && !p.tensors[t].persistent) sum += p.tensors[t].bytes;
    return sum;
  };
  std::set<int> forward(b.in.begin(), b.in.end()), backward(b.saved.begin(), b.saved.end());
  forward.insert(b.out);
  forward.insert(b.saved.begin(), b.saved.end());
  if (b.backward_reads_in) backward.insert(b.in.begin(), b.in.end());
  if (b.backward_reads_out) backward.insert(b.out);
  backward.insert(b.d_out);
  backward.insert(b.d_in.begin(), b.d_in.end());
  return std::max(bytes(forward), bytes(backward));
}

}  // namespace

StepBound step_lower_bound(const Planner& planner, size_t budget) {
  StepBound out;
  const NetworkCosts& costs = planner.costs();
  const AlgoChoice fast = costs.fastest();
  const std::shared_ptr<const Program> oracle = planner.built({Policy::kNone, fast}, true);
  size_t persistent = 0;
  for (const ProgramTensor& t : oracle->tensors)
    if (t.persistent) persistent += t.bytes;
  AlgoChoice fitting = fast;  // per layer: the fastest algorithm whose workspace fits beside its kernels
  for (size_t i = 0; i < costs.nodes.size(); ++i) {
    const size_t held = persistent + kernel_bytes(*oracle, oracle->nodes[i]);
    const std::vector<AlgoCost>& algos = costs.nodes[i].algos;
    int best = -1;
    for (int a = 0; a < static_cast<int>(algos.size()); ++a)
      if (held + algos[a].workspace_bytes <= budget &&
          (best < 0 || algos[a].forward_seconds + algos[a].backward_seconds <
                           algos[best].forward_seconds + algos[best].backward_seconds))
        best = a;
    if (best < 0) {
      out.feasible = false;
      return out;
    }
    fitting[i] = best;
    out.leaner_layers += best != fast[i];
  }
  const ChosenCosts at_fast(costs, fast), at_fitting(costs, fitting);
  double extra = 0;
  for (const Step& s : oracle->steps) {
    if (s.op == Op::kForward) extra += at_fitting.forward_seconds(s.node) - at_fast.forward_seconds(s.node);
    if (s.op == Op::kBackward) extra += at_fitting.backward_seconds(s.node) - at_fast.backward_seconds(s.node);
  }
  out.seconds = planner.oracle_seconds() + extra;
  return out;
}

}  // namespace vdnn
