#include "plan/slice_search.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "plan/memory_plan.h"
#include "plan/step_bound.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

struct Try {
  AutoChoice choice;
  size_t smallest = 0;  // all + leanest: how close a choice that does not fit came
  StepBound bound;      // no plan of this sliced graph at the budget is faster (plan/step_bound.h)
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

// One try per set of counts: the sliced graph's own Planner and, unless a cheaper answer settles
// it, its `auto` search. A set tried before is answered from memory (a pass after the last
// change repeats every try of the pass before).
class Tries {
 public:
  Tries(const Graph& graph, int64_t batch, const InputsOf& inputs_of, SyncMode sync, size_t budget, size_t host_budget,
        OptimizerKind optimizer, SliceRunChoice& out)
      : graph_(graph),
        batch_(batch),
        inputs_of_(inputs_of),
        sync_(sync),
        budget_(budget),
        host_budget_(host_budget),
        optimizer_(optimizer),
        out_(out) {}

  // `best`: the best try so far (null: none yet). A try that cannot beat it is not searched: below
  // all + leanest's smallest budget nothing fits, and no plan of a graph at the budget is faster
  // than its lower bound (plan/step_bound.h: the oracle plus what the budget forces onto leaner
  // algorithms; SliceSearch.NoAutoPlanIsFasterThanItsLowerBound), so a bound at or above the best
  // fitting step prunes the search.
  Try run(const std::vector<SliceRun>& runs, const Try* best) {
    std::string label;
    for (const SliceRun& r : runs) label += (label.empty() ? "" : ", ") + to_string(r);
    if (label.empty()) label = "no slices";
    if (auto it = seen_.find(label); it != seen_.end()) return it->second;
    std::optional<SlicedGraph> sliced;
    if (!runs.empty()) sliced.emplace(slice_runs(graph_, batch_, runs));
    const Graph& g = sliced ? sliced->graph : graph_;
    PlannerInputs in = inputs_of_(g);
    Planner planner(g, std::move(in.value_bytes), std::move(in.facts), std::move(in.costs), sync_);
    planner.set_host_budget(host_budget_);
    planner.set_optimizer(optimizer_);
    if (!sliced) whole_oracle_ = planner.oracle_seconds();
    Try t{{}, planner.minimum_budget({Policy::kAll, planner.costs().leanest()})};
    if (budget_) t.bound = step_lower_bound(planner, budget_);
    std::string outcome;
    // Below all + leanest's smallest budget no configuration fits (auto's search would only find that out).
    if (budget_ && t.smallest > budget_ && host_budget_ == 0) {
      t.choice.why = VDNN_MSG("the smallest budget is " << describe_budget(t.smallest));
      outcome = "does not fit";
    } else if (best && best->choice.fits && budget_ && t.bound.feasible &&
               t.bound.seconds >= best->choice.seconds * (1 - 1e-6)) {
      t.choice.why = "its lower bound is no faster than the best plan so far";
      t.smallest = SIZE_MAX;
      outcome = VDNN_MSG("not searched: its lower bound " << t.bound.seconds * 1e3 << " ms is no faster");
      ++out_.pruned;
    } else {
      t.choice = choose_auto(planner, budget_);
      ++out_.evaluations;
      outcome = t.choice.fits ? VDNN_MSG(t.choice.seconds * 1e3 << " ms") : "does not fit";
    }
    out_.tried.push_back(label + ": " + outcome);
    return seen_.emplace(label, std::move(t)).first->second;
  }
  double whole_oracle() const { return whole_oracle_; }

 private:
  const Graph& graph_;
  int64_t batch_;
  const InputsOf& inputs_of_;
  SyncMode sync_;
  size_t budget_, host_budget_;
  OptimizerKind optimizer_;
  SliceRunChoice& out_;
  std::map<std::string, Try> seen_;
  double whole_oracle_ = 0;
};

std::vector<SliceRun> chosen(const std::vector<SliceRun>& candidates) {
  std::vector<SliceRun> runs;
  for (const SliceRun& r : candidates)
    if (r.slices > 1) runs.push_back(r);
  return runs;
}

}  // namespace

SliceRunChoice choose_slice_runs(const Graph& graph, int64_t batch, const InputsOf& inputs_of, SyncMode sync,
                                 size_t budget, size_t host_budget, OptimizerKind optimizer) {
  SliceRunChoice out;
  Tries tries(graph, batch, inputs_of, sync, budget, host_budget, optimizer, out);
  Try best = tries.run({}, nullptr);
  // At the oracle already (everything fits with the fastest algorithms): slices cannot help.
  if (best.choice.fits && best.choice.seconds <= tries.whole_oracle() * (1 + 1e-9)) {
    out.choice = std::move(best.choice);
    out.bound = best.bound;
    return out;
  }
  std::vector<SliceRun> candidates = large_candidates(graph, inputs_of(graph).value_bytes);
  for (bool changed = true; changed;) {
    changed = false;
    for (SliceRun& candidate : candidates) {
      const int current = candidate.slices;
      for (int k = 2; k <= 16; k *= 2) {
        if (k == current || batch % k != 0) continue;
        candidate.slices = k;
        Try t = tries.run(chosen(candidates), &best);
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
  out.bound = best.bound;
  return out;
}

}  // namespace vdnn
