#include "plan/prefetch_points.h"

#include <map>
#include <set>

#include "vdnn/error.h"

namespace vdnn {

std::vector<PrefetchSlot> prefetch_slots(const Program& p) {
  // Each step's slot: the node of the next backward kernel (a slot's steps precede its kernel).
  std::vector<int> slot(p.steps.size(), -1);
  for (int i = static_cast<int>(p.steps.size()) - 1, next = -1; i >= 0; --i) {
    if (p.steps[i].op == Op::kBackward) next = p.steps[i].node;
    slot[i] = next;
  }
  std::vector<PrefetchSlot> slots;
  std::map<int, size_t> by_event;  // prefetch event -> its slot
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    if (s.op == Op::kPrefetch) {
      by_event[s.event] = slots.size();
      PrefetchSlot ps;
      ps.tensor = s.tensor;
      ps.issued_at = slot[i];
      slots.push_back(ps);
    } else if (s.op == Op::kWait && s.stream == StreamKind::kCompute) {
      auto it = by_event.find(s.event);
      if (it != by_event.end() && slots[it->second].reader < 0) slots[it->second].reader = slot[i];
    }
  }
  std::map<int, PrefetchSlot*> by_tensor;
  for (PrefetchSlot& s : slots) by_tensor[s.tensor] = &s;
  for (int n = 0; n < static_cast<int>(p.nodes.size()); ++n) {
    const NodeBinding& b = p.nodes[n];
    auto out = by_tensor.find(b.out);
    if (out != by_tensor.end() && out->second->node < 0) out->second->node = n;  // the first writer
    for (int k = 0; k < static_cast<int>(b.saved.size()); ++k) {
      auto it = by_tensor.find(b.saved[k]);
      if (it != by_tensor.end()) it->second->node = n, it->second->saved = k;
    }
  }
  return slots;
}

StepDecisions decisions_of(const Program& p, const Graph& g) {
  VDNN_CHECK(p.nodes.size() == g.nodes().size(), "a Program of another graph");
  auto action = [&](int t) {
    const ProgramTensor& tensor = p.tensors[t];
    return tensor.offloaded    ? StorageAction::kOffload
           : tensor.recomputed ? StorageAction::kRecompute
                               : StorageAction::kKeep;
  };
  StepDecisions d;
  d.values.assign(g.values().size(), {});
  d.saved.resize(g.nodes().size());
  d.values[0].action = action(p.input_tensor);
  std::set<int> seen{p.input_tensor};  // a storage is decided by the value its first writer produced
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const NodeBinding& b = p.nodes[i];
    if (seen.insert(b.out).second) d.values[g.nodes()[i].output].action = action(b.out);
    for (int t : b.saved)  // a buffer a recompute regenerates is decided by its layer's storage
      d.saved[i].push_back({p.tensors[t].offloaded ? StorageAction::kOffload : StorageAction::kKeep});
  }
  return d;
}

StorageDecision& decision_for(StepDecisions& d, const Graph& g, const PrefetchSlot& slot) {
  VDNN_CHECK(slot.node < static_cast<int>(g.nodes().size()), "a prefetch slot of another graph");
  if (slot.saved >= 0) {
    if (d.saved.empty()) d.saved.resize(g.nodes().size());
    std::vector<StorageDecision>& saved = d.saved[slot.node];
    if (saved.size() <= static_cast<size_t>(slot.saved)) saved.resize(slot.saved + 1);
    return saved[slot.saved];
  }
  if (d.values.empty()) d.values.assign(g.values().size(), {});
  return d.values[slot.node < 0 ? 0 : g.nodes()[slot.node].output];
}

}  // namespace vdnn
