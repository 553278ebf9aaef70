#include "plan/slice_search.h"

#include <algorithm>
#include <optional>

#include "plan/memory_plan.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

struct Try {
  AutoChoice choice;
  size_t smallest = 0;  // all + leanest: how close a choice that does not fit came
};

bool better(const Try& a, const Try& b) {
  if (a.choice.fits != b.choice.fits) return a.choice.fits;
  if (a.choice.fits) return a.choice.seconds < b.choice.seconds * (1 - 1e-6);
  return a.smallest < b.smallest;
}

// The candidates worth a try: blocks whose largest input plus output is an eighth of the most.
std::vector<SliceRun> large_candidates(const Graph& graph, const std::vector<size_t>& value_bytes) {
  std::vector<SliceRun> all = slice_run_candidates(graph);
  std::vector<size_t> largest(all.size(), 0);
  size_t most = 0;
  for (size_t c = 0; c < all.size(); ++c) {
    bool inside = false;
    for (const Node& n : graph.nodes()) {
      inside = inside || n.layer->name() == all[c].first;
      if (!inside) continue;
      largest[c] = std::max(largest[c], value_bytes[n.inputs[0]] + value_bytes[n.output]);
      if (n.layer->name() == all[c].last) break;
    }
    most = std::max(most, largest[c]);
  }
  std::vector<SliceRun> out;
  for (size_t c = 0; c < all.size(); ++c)
    if (largest[c] * 8 >= most) out.push_back(all[c]);
  return out;
}

}  // namespace

SliceRunChoice choose_slice_runs(const Graph& graph, int64_t batch, const InputsOf& inputs_of, SyncMode sync,
                                 size_t budget, size_t host_budget, OptimizerKind optimizer) {
  SliceRunChoice out;
  const PlannerInputs whole = inputs_of(graph);
  double oracle = 0;  // the whole graph's
  auto run = [&](const std::vector<SliceRun>& runs) {
    std::optional<SlicedGraph> sliced;
    if (!runs.empty()) sliced.emplace(slice_runs(graph, batch, runs));
    const Graph& g = sliced ? sliced->graph : graph;
    PlannerInputs in = sliced ? inputs_of(g) : whole;
    Planner planner(g, std::move(in.value_bytes), std::move(in.facts), std::move(in.costs), sync);
    planner.set_host_budget(host_budget);
    planner.set_optimizer(optimizer);
    if (!sliced) oracle = planner.oracle_seconds();
    Try t{{}, planner.minimum_budget({Policy::kAll, planner.costs().leanest()})};
    // Below all + leanest's smallest budget no configuration fits (auto's search would only find that out).
    if (budget && t.smallest > budget && host_budget == 0)
      t.choice.why = VDNN_MSG("the smallest budget is " << describe_budget(t.smallest));
    else
      t.choice = choose_auto(planner, budget), ++out.evaluations;
    std::string label;
    for (const SliceRun& r : runs) label += (label.empty() ? "" : ", ") + to_string(r);
    out.tried.push_back(VDNN_MSG((label.empty() ? "no slices" : label)
                                 << ": "
                                 << (t.choice.fits ? VDNN_MSG(t.choice.seconds * 1e3 << " ms") : "does not fit")));
    return t;
  };
  std::vector<SliceRun> candidates = large_candidates(graph, whole.value_bytes);
  auto chosen = [&](const std::vector<SliceRun>& c) {
    std::vector<SliceRun> runs;
    for (const SliceRun& r : c)
      if (r.slices > 1) runs.push_back(r);
    return runs;
  };
  Try best = run({});
  // At the oracle already (everything fits with the fastest algorithms): slices cannot help.
  if (best.choice.fits && best.choice.seconds <= oracle * (1 + 1e-9)) {
    out.choice = std::move(best.choice);
    return out;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (SliceRun& candidate : candidates) {
      const int current = candidate.slices;
      for (int k = 2; k <= 16; k *= 2) {
        if (k == current || batch % k != 0) continue;
        candidate.slices = k;
        Try t = run(chosen(candidates));
        if (better(t, best)) {
          best = std::move(t);
          changed = true;
          break;
        }
        candidate.slices = current;
      }
    }
  }
  out.runs = chosen(candidates);
  out.choice = std::move(best.choice);
  return out;
}

}  // namespace vdnn
