#include "plan/dyn.h"

#include "util/size_parse.h"

namespace vdnn {
namespace {

class DynSearch {
 public:
  DynSearch(const Planner& planner, size_t budget, DynChoice& out) : p_(planner), budget_(budget), out_(out) {}

  bool try_config(const Configuration& c, int step, const std::string& why) {
    const bool ok = p_.fits(c, budget_);
    out_.tried.push_back(VDNN_MSG(step << ". " << describe(c, p_.costs()) << ": " << (ok ? "fits" : "does not fit")));
    if (ok) {
      out_.fits = true;
      out_.config = c;
      out_.step = step;
      out_.why = why;
    }
    return ok;
  }

  // Step 5: walk the layers, stepping each down to its next leaner algorithm, until the
  // configuration fits. Leaner algorithms only shrink workspace, so fitting is taken as monotone
  // along the walk and its first fitting step is found by bisection: O(log steps) plans, not one
  // per step (a ResNet of 10^4 layers has thousands of steps).
  bool downgrade(Policy policy) {
    const Configuration fastest{policy, p_.costs().fastest()};
    std::vector<std::pair<size_t, int>> walk;  // (layer, algorithm) after each step
    for (size_t i = 0; i < fastest.algos.size(); ++i) {
      int a = fastest.algos[i];
      for (int leaner = p_.costs().nodes[i].next_leaner(a); leaner >= 0; leaner = p_.costs().nodes[i].next_leaner(a)) {
        a = leaner;
        walk.push_back({i, a});
      }
    }
    auto after = [&](size_t steps) {  // the configuration after the first `steps` steps
      Configuration c = fastest;
      for (size_t k = 0; k < steps; ++k) c.algos[walk[k].first] = walk[k].second;
      return c;
    };
    if (walk.empty() || !p_.fits(after(walk.size()), budget_)) return false;
    size_t lo = 1, hi = walk.size();  // the first fitting count of steps is in [lo, hi]
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (p_.fits(after(mid), budget_))
        hi = mid;
      else
        lo = mid + 1;
    }
    return try_config(
        after(lo), 5,
        VDNN_MSG("the fastest algorithms do not fit; "
                 << lo << " greedy step(s) to leaner convolution algorithms, up to layer '"
                 << p_.costs().nodes[walk[lo - 1].first].name << "', make " << to_string(policy) << " fit"));
  }

 private:
  const Planner& p_;
  size_t budget_;
  DynChoice& out_;
};

}  // namespace

DynChoice choose_dyn(const Planner& planner, size_t budget) {
  DynChoice out;
  const NetworkCosts& costs = planner.costs();
  const Configuration trainable{Policy::kAll, costs.leanest()};
  out.minimum_budget = planner.minimum_budget(trainable);
  DynSearch search(planner, budget, out);
  // Step 1, trainability on the device (the host budget, if any, is for the configurations below).
  const bool trainable_fits = budget >= out.minimum_budget;  // exact: memory_plan.h minimum_budget
  out.tried.push_back(
      VDNN_MSG("1. " << describe(trainable, costs) << ": " << (trainable_fits ? "fits the device" : "does not fit")));
  if (!trainable_fits) {
    out.why = VDNN_MSG("not even `all` with the leanest algorithms fits "
                       << format_bytes(budget) << "; it needs at least " << describe_budget(out.minimum_budget));
    return out;
  }
  const AlgoChoice fast = costs.fastest();
  if (search.try_config({Policy::kNone, fast}, 2, "everything fits on the device with the fastest algorithms"))
    return out;
  if (search.try_config({Policy::kConv, fast}, 3, "offloading the convolutions' inputs is enough")) return out;
  if (search.try_config({Policy::kAll, fast}, 4,
                        "offloading every feature map is needed; the fastest algorithms still fit"))
    return out;
  if (search.downgrade(Policy::kConv) || search.downgrade(Policy::kAll)) return out;
  if (!planner.fits(trainable, budget)) {  // the device holds it; the host budget does not
    out.why = VDNN_MSG("`all` fits " << format_bytes(budget) << " but its host copies need "
                                     << describe_budget(planner.host_bytes(trainable)) << ", more than the host budget "
                                     << format_bytes(planner.host_budget())
                                     << ", and nothing that offloads less fits the device");
    return out;
  }
  out.fits = true;
  out.config = trainable;
  out.step = 6;
  out.why = "only the leanest algorithms with every feature map offloaded fit";
  return out;
}

}  // namespace vdnn
