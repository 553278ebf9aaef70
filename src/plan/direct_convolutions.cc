#include "plan/direct_convolutions.h"

#include <algorithm>

#include "core/layer_kind.h"

namespace vdnn {

std::vector<ConvAlgo> direct_convolutions_until(const Graph& graph, const std::vector<NodeFacts>& facts,
                                                const std::vector<NodeFacts>& direct, std::vector<ConvAlgo> algos,
                                                Workspace counted,
                                                const std::function<bool(const std::vector<NodeFacts>&)>& fits) {
  const auto workspace = [counted](const NodeFacts& f) {  // what the Program allocates (program_builder.h)
    return counted == Workspace::kForward ? std::min(f.scratch_bytes, f.forward_scratch_bytes) : f.scratch_bytes;
  };
  const int n = static_cast<int>(graph.nodes().size());
  std::vector<NodeFacts> mixed = facts;
  bool changed = false;
  while (!fits(mixed)) {
    int widest = -1;
    for (int i = 0; i < n; ++i)
      if (graph.nodes()[i].layer->kind() == LayerKind::kConv && algos[i] != ConvAlgo::kDirect &&
          workspace(direct[i]) < workspace(mixed[i]) &&
          (widest < 0 || workspace(mixed[i]) > workspace(mixed[widest])))
        widest = i;
    if (widest < 0) break;
    algos[widest] = ConvAlgo::kDirect;
    mixed[widest] = direct[widest];
    changed = true;
  }
  return changed ? algos : std::vector<ConvAlgo>{};
}

}  // namespace vdnn
