#include "plan/planner.h"

#include <algorithm>

#include "plan/policy.h"
#include "plan/program_builder.h"
#include "vdnn/error.h"

namespace vdnn {

Planner::Planner(const Graph& graph, std::vector<size_t> value_bytes, std::vector<NodeFacts> facts, NetworkCosts costs,
                 SyncMode sync, CollectiveOptions collectives)
    : graph_(graph),
      value_bytes_(std::move(value_bytes)),
      facts_(std::move(facts)),
      costs_(std::move(costs)),
      sync_(sync),
      collectives_(collectives),
      conv_is_none_(true) {
  for (size_t i = 0; i < graph.nodes().size(); ++i)
    if (is_conv_class(graph, static_cast<int>(i))) conv_is_none_ = false;
  if (collectives_.ranks < 1) VDNN_THROW("ranks must be at least 1, got " << collectives_.ranks);
  if (costs_.nodes.size() != graph.nodes().size())
    VDNN_THROW("the cost profile (" << costs_.model << ", " << costs_.nodes.size() << " layers) does not match model '"
                                    << graph.name() << "' (" << graph.nodes().size() << " layers)");
  for (size_t i = 0; i < costs_.nodes.size(); ++i)
    if (costs_.nodes[i].name != graph.nodes()[i].layer->name())
      VDNN_THROW("the cost profile's layer " << i << " is '" << costs_.nodes[i].name << "', model '" << graph.name()
                                             << "' has '" << graph.nodes()[i].layer->name() << "'");
}

std::vector<NodeFacts> Planner::facts_with(const AlgoChoice& algos) const {
  std::vector<NodeFacts> facts = facts_;
  for (size_t i = 0; i < facts.size(); ++i)
    facts[i].scratch_bytes = costs_.nodes[i].algos.at(algos.at(i)).workspace_bytes;
  return facts;
}

// A policy's Program is keyed by what it does: with no convolution-class layer, `conv` offloads
// nothing, so it is `none` (one Program, one evaluation for both rows).
ProgramKey Planner::key_of(const Configuration& config, bool training, int prefetch_depth) const {
  Policy policy = training ? config.policy : Policy::kNone;
  if (policy == Policy::kConv && conv_is_none_) policy = Policy::kNone;
  ProgramKey key{policy, config.algos, {}, training, prefetch_depth, optimizer_, optimizer_state_};
  if (training) key.decisions = config.decisions;
  return key;
}

std::shared_ptr<const Program> Planner::built(const Configuration& config, bool training, int prefetch_depth) const {
  return built(key_of(config, training, prefetch_depth));
}

std::shared_ptr<const Program> Planner::built(const ProgramKey& key) const {
  return cache_.get(key, [&] {
    ProgramOptions o{key.policy, sync_, key.training};
    o.optimizer = key.optimizer;
    o.optimizer_state = key.optimizer_state;
    o.prefetch_depth = key.prefetch_depth;
    o.decisions = key.decisions;
    return build_program(graph_, value_bytes_, facts_with(key.algos), o);
  });
}

Program Planner::program(const Configuration& config, bool training, int prefetch_depth) const {
  Program p = *built(config, training, prefetch_depth);
  if (training) p.policy = config.policy;  // as asked, where it was keyed as another that does the same
  return p;
}

PlannedStep Planner::step(const Configuration& config, Prefetch prefetch, size_t budget) const {
  const ProgramSource programs = [&](bool training, int depth) { return *built(config, training, depth); };
  PlannedStep s = plan_step(graph_, programs,
                            {config.policy, sync_, prefetch, budget, config.decisions, collectives_, optimizer_,
                             optimizer_state_, last_prefetch_depth_.get()});
  if (s.prefetch_depth > 0) last_prefetch_depth_.set(s.prefetch_depth);
  return s;
}

bool Planner::fits(const Configuration& config, size_t budget) const {
  const std::shared_ptr<const Program> train = built(config, true), eval = built(config, false);
  if (host_budget_ && host_copies_bytes(*train) + host_copies_bytes(*eval) > host_budget_) return false;
  return fits_within(*train, budget) && fits_within(*eval, budget);  // exact: memory_plan.h
}

size_t Planner::host_bytes(const Configuration& config) const {
  return host_copies_bytes(*built(config, true)) + host_copies_bytes(*built(config, false));
}

size_t Planner::minimum_budget(const Configuration& config) const {
  return vdnn::minimum_budget(*built(config, true), *built(config, false));
}

Evaluation Planner::evaluate(const Configuration& config, size_t budget, Prefetch prefetch) const {
  const EvaluationKey key{key_of(config, true, 0), budget, prefetch, host_budget_};
  Evaluation e = *evaluations_.get(key, [&] { return evaluate_anew(config, budget, prefetch); });
  e.config = config;  // another configuration with the same key may have made it
  return e;
}

Evaluation Planner::evaluate_anew(const Configuration& config, size_t budget, Prefetch prefetch) const {
  Evaluation e{config};
  PlannedStep s = step(config, prefetch, budget);
  e.minimum_budget = s.smallest_budget;
  e.fits = e.device_fits = s.fits;
  if (!s.fits) s = step(config, prefetch, e.minimum_budget);  // shown at the least that works
  VDNN_CHECK(s.fits, "a configuration must fit its minimum budget");
  e.memory = s.train_plan;
  e.host_fits = !host_budget_ || s.train_plan.host_bytes + s.eval_plan.host_bytes <= host_budget_;
  e.fits = e.fits && e.host_fits;
  e.prefetch_depth = s.prefetch_depth;
  e.time = simulate(s.train, ChosenCosts(costs_, config.algos));
  e.bound_seconds = *std::max_element(e.time.busy_seconds.begin(), e.time.busy_seconds.end());
  return e;
}

// The fastest forward algorithms, and leaner ones for the widest workspace first while the pass
// does not fit (with `streaming`: only once every weight streamed does not fit either).
InferenceEvaluation Planner::infer_leanest(size_t budget, bool streaming) const {
  InferenceEvaluation e;
  e.algos = costs_.fastest_forward();
  const AlgoChoice fastest = e.algos;
  e.planned = plan_inference(graph_, value_bytes_, facts_with(e.algos), budget, streaming);
  while (!e.planned.fits) {  // the layer with the largest workspace goes one algorithm leaner
    int widest = -1;
    for (size_t i = 0; i < costs_.nodes.size(); ++i) {
      const NodeCost& n = costs_.nodes[i];
      if (n.next_leaner(e.algos[i]) >= 0 &&
          (widest < 0 ||
           n.algos[e.algos[i]].workspace_bytes > costs_.nodes[widest].algos[e.algos[widest]].workspace_bytes))
        widest = static_cast<int>(i);
    }
    if (widest < 0) break;
    e.algos[widest] = costs_.nodes[widest].next_leaner(e.algos[widest]);
    e.planned = plan_inference(graph_, value_bytes_, facts_with(e.algos), budget, streaming);
  }
  e.fits = e.planned.fits;
  if (!e.fits) {  // its smallest, every weight streamed when that is what runs
    const size_t smallest = e.planned.smallest_streamed_budget;
    e.planned = plan_inference(graph_, value_bytes_, facts_with(e.algos), streaming ? smallest : 0, streaming);
  }
  for (size_t i = 0; i < fastest.size(); ++i) e.leaner_layers += e.algos[i] != fastest[i];
  e.streamed_bytes = e.planned.program.streamed_bytes();
  e.time = simulate(e.planned.program, ChosenCosts(costs_, e.algos));
  return e;
}

InferenceEvaluation Planner::infer(size_t budget) const {
  InferenceEvaluation resident = infer_leanest(budget, false);
  if (resident.fits && resident.leaner_layers == 0) return resident;  // nothing to trade
  InferenceEvaluation streamed = infer_leanest(budget, true);
  // The streamed weights live in host memory: beyond the host budget (a unified-memory board's
  // memory left by the device budget), streaming does not fit either.
  if (host_budget_ && streamed.streamed_bytes > host_budget_) streamed.fits = false;
  if (!resident.fits) return streamed;  // fitting or not: it needs the least
  if (!streamed.fits) return resident;
  return streamed.time.iteration_seconds < resident.time.iteration_seconds ? streamed : resident;
}

double Planner::oracle_seconds() const {
  return oracle_.get([&] { return oracle_anew(); });
}

double Planner::oracle_anew() const {
  const Configuration oracle{Policy::kNone, costs_.fastest()};
  ProgramKey key = key_of(oracle, true, 0);
  key.optimizer_state = StatePlace::kDevice;  // unlimited memory keeps the state beside the weights
  const std::shared_ptr<const Program> built_train = built(key);
  if (collectives_.ranks <= 1) return simulate(*built_train, ChosenCosts(costs_, oracle.algos)).iteration_seconds;
  Program train = *built_train;
  add_collectives(train, collectives_);
  return simulate(train, ChosenCosts(costs_, oracle.algos)).iteration_seconds;
}

std::string describe(const Configuration& config, const NetworkCosts& costs) {
  std::string out = to_string(config.policy);
  const AlgoChoice fast = costs.fastest(), lean = costs.leanest();
  if (config.algos == fast) return out + "+fastest";
  if (config.algos == lean) return out + "+leanest";
  if (config.algos == costs.defaults()) return out + "+default";  // what a Net runs without per-node choices
  int slower = 0;
  for (size_t i = 0; i < fast.size(); ++i) slower += config.algos[i] != fast[i];
  return VDNN_MSG(out << "+fastest (" << slower << " layer" << (slower == 1 ? "" : "s") << " leaner)");
}

}  // namespace vdnn
