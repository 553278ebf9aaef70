#include "plan/dyn.h"

#include <optional>

#include "util/size_parse.h"

namespace vdnn {
namespace {

double seconds(const AlgoCost& a) { return a.forward_seconds + a.backward_seconds; }

// The fastest algorithm of `node` that needs less workspace than its current one, if any.
std::optional<int> next_leaner(const NodeCost& node, int current) {
  std::optional<int> best;
  const size_t now = node.algos[current].workspace_bytes;
  for (int i = 0; i < static_cast<int>(node.algos.size()); ++i)
    if (node.algos[i].workspace_bytes < now && (!best || seconds(node.algos[i]) < seconds(node.algos[*best])))
      best = i;
  return best;
}

class Search {
 public:
  Search(const Planner& planner, size_t budget, DynChoice& out) : p_(planner), budget_(budget), out_(out) {}

  bool try_config(const Configuration& c, int step, const std::string& why) {
    const bool ok = p_.fits(c, budget_);
    out_.tried.push_back(VDNN_MSG(step << ". " << describe(c, p_.costs()) << ": "
                                       << (ok ? "fits" : "does not fit")));
    if (ok) {
      out_.fits = true;
      out_.config = c;
      out_.step = step;
      out_.why = why;
    }
    return ok;
  }

  // Step 5: walk the layers, stepping each down until the configuration fits.
  bool downgrade(Policy policy) {
    Configuration c{policy, p_.costs().fastest()};
    int downgraded = 0;
    for (size_t i = 0; i < c.algos.size(); ++i) {
      const NodeCost& node = p_.costs().nodes[i];
      while (auto leaner = next_leaner(node, c.algos[i])) {
        c.algos[i] = *leaner;
        ++downgraded;
        if (p_.fits(c, budget_))
          return try_config(c, 5, VDNN_MSG("the fastest algorithms do not fit; " << downgraded
                                           << " greedy step(s) to leaner convolution algorithms, up to layer '"
                                           << node.name << "', make " << to_string(policy) << " fit"));
      }
    }
    return false;
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
  Search search(planner, budget, out);
  if (!search.try_config(trainable, 1, "")) {
    out.fits = false;
    out.why = VDNN_MSG("not even `all` with the leanest algorithms fits " << format_bytes(budget)
                       << "; it needs at least " << describe_budget(out.minimum_budget));
    return out;
  }
  out.fits = false;  // step 1 only proves trainability; the search goes on from the fastest
  const AlgoChoice fast = costs.fastest();
  if (search.try_config({Policy::kNone, fast}, 2, "everything fits on the device with the fastest algorithms")) return out;
  if (search.try_config({Policy::kConv, fast}, 3, "offloading the convolutions' inputs is enough")) return out;
  if (search.try_config({Policy::kAll, fast}, 4, "offloading every feature map is needed; the fastest algorithms still fit")) return out;
  if (search.downgrade(Policy::kConv) || search.downgrade(Policy::kAll)) return out;
  out.fits = true;
  out.config = trainable;
  out.step = 6;
  out.why = "only the leanest algorithms with every feature map offloaded fit";
  return out;
}

}  // namespace vdnn
