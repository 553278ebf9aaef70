// Planning in one place (issue 16): plan_step is the one planner of a training step. The Net runs
// exactly the step it returns (Programs, placement, look-ahead depth), refuses a budget with its
// words, and the Planner (`vdnn plan`, dyn) evaluates that same step — so what the plan predicts
// for `--prefetch ahead` is what training uses.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
#include "core/layer_kind.h"
#include "io/model_file.h"
#include "plan/planned_step.h"
#include "plan/planner.h"
#include "plan/program_builder.h"
#include "runtime/net.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_planned_step {

constexpr int64_t kBatch = 32;

struct Facts {
  Graph graph = load_model("fmnist_dag");
  ConvAlgo conv_algo;
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  explicit Facts(ConvAlgo algo = ConvAlgo::kAuto) : conv_algo(algo) {
    const std::unique_ptr<Backend> b =
        make_backend(graph, {.kind = BackendKind::kCpu, .batch = kBatch, .conv_algo = conv_algo});
    value_bytes = b->value_bytes();
    facts = b->facts();
  }
  int layers() const { return static_cast<int>(graph.nodes().size()); }
  // A budget between `policy`'s smallest and the smallest that looks ahead over every layer.
  size_t between(Policy policy) const {
    const size_t smallest = plan_step(graph, value_bytes, facts, {policy}).smallest_budget;
    ProgramOptions deepest{policy, SyncMode::kEvent, true};
    deepest.prefetch_depth = layers();
    const size_t all_ahead =
        minimum_budget(build_program(graph, value_bytes, facts, deepest),
                       build_program(graph, value_bytes, facts, {Policy::kNone, SyncMode::kEvent, false}));
    return smallest + (all_ahead - smallest) / 2;
  }
  NetOptions net(const StepOptions& s) const {
    return {.batch = kBatch,
            .policy = s.policy,
            .sync = s.sync,
            .device_memory = s.budget,
            .prefetch_ahead = s.prefetch == Prefetch::kAhead,
            .conv_algo = conv_algo};
  }
};

TEST(PlannedStep, TheNetRunsThePlannedStep) {
  const Facts f;
  const size_t middle = f.between(Policy::kAll);
  for (Policy policy : {Policy::kNone, Policy::kConv, Policy::kAll})
    for (Prefetch prefetch : {Prefetch::kVdnn, Prefetch::kAhead})
      for (size_t budget : {size_t{0}, middle, middle * 2}) {
        const StepOptions o{policy, SyncMode::kEvent, prefetch, budget};
        SCOPED_TRACE(VDNN_MSG(to_string(policy) << " prefetch " << to_string(prefetch) << " budget " << budget));
        const PlannedStep s = plan_step(f.graph, f.value_bytes, f.facts, o);
        if (!s.fits) {  // refused, unless the Net fits it with convolutions made direct (the test below)
          try {
            const Net net(load_model("fmnist_dag"), f.net(o));
            EXPECT_FALSE(net.convolutions_made_direct().empty()) << "it trains a step the plan refused";
          } catch (const Error&) {
          }
          continue;
        }
        const Net net(load_model("fmnist_dag"), f.net(o));
        EXPECT_EQ(net.prefetch_depth(), s.prefetch_depth);
        EXPECT_EQ(net.arena_bytes(), s.capacity);
        EXPECT_EQ(net.train_plan().peak_bytes, s.train_plan.peak_bytes);
        EXPECT_EQ(net.eval_plan().peak_bytes, s.eval_plan.peak_bytes);
        EXPECT_EQ(net.train_program().to_text(), s.train.to_text());
        EXPECT_EQ(s.prefetch_depth == 0, prefetch == Prefetch::kVdnn || policy == Policy::kNone);
      }
}

TEST(PlannedStep, LookAheadStopsWhereTheBudgetDoes) {
  const Facts f;
  const size_t middle = f.between(Policy::kAll);
  const PlannedStep s =
      plan_step(f.graph, f.value_bytes, f.facts, {Policy::kAll, SyncMode::kEvent, Prefetch::kAhead, middle});
  ASSERT_TRUE(s.fits);
  EXPECT_GT(s.prefetch_depth, 0);
  EXPECT_LT(s.prefetch_depth, f.layers()) << "half way to the budget every layer needs";
  EXPECT_LE(s.train_plan.high_water_bytes, middle);
  ProgramOptions deeper{Policy::kAll, SyncMode::kEvent, true};
  deeper.prefetch_depth = s.prefetch_depth + 1;
  Program next = build_program(f.graph, f.value_bytes, f.facts, deeper);
  EXPECT_FALSE(plan_memory(next, middle).fits) << "one layer deeper must not fit, or the search stopped short";
}

// Fitting is not monotone in the look-ahead depth (the placement's excess over the live-bytes floor
// varies), so the depth is defined without a search path: the deepest whose placement fits, found
// from the deepest whose floor fits. Every hint gives that depth; no deeper one fits (fmnist_dag is
// short enough for the walk down to reach every depth).
TEST(PlannedStep, TheLookAheadDepthIsTheDeepestThatFitsWhateverTheHint) {
  const Facts f;
  // From all's smallest budget (vDNN's rule) to the one that looks ahead over every layer.
  const size_t smallest = plan_step(f.graph, f.value_bytes, f.facts, {Policy::kAll}).smallest_budget;
  const size_t every_layer = smallest + 2 * (f.between(Policy::kAll) - smallest);
  int budgets_that_limit_the_depth = 0;
  for (size_t k = 0; k <= 8; ++k) {
    const size_t budget = smallest + (every_layer - smallest) * k / 8;
    StepOptions o{Policy::kAll, SyncMode::kEvent, Prefetch::kAhead, budget};
    const PlannedStep without = plan_step(f.graph, f.value_bytes, f.facts, o);
    if (!without.fits) continue;
    SCOPED_TRACE(VDNN_MSG("budget " << budget << ", depth " << without.prefetch_depth));
    budgets_that_limit_the_depth += without.prefetch_depth < f.layers();
    for (int hint : {1, 2, without.prefetch_depth - 1, without.prefetch_depth, without.prefetch_depth + 1,
                     f.layers() - 1, f.layers(), 1000}) {
      o.prefetch_depth_hint = hint;
      EXPECT_EQ(plan_step(f.graph, f.value_bytes, f.facts, o).prefetch_depth, without.prefetch_depth) << "hint " << hint;
    }
    for (int depth = without.prefetch_depth + 1; depth <= f.layers(); ++depth) {
      ProgramOptions deeper{Policy::kAll, SyncMode::kEvent, true};
      deeper.prefetch_depth = depth;
      Program program = build_program(f.graph, f.value_bytes, f.facts, deeper);
      EXPECT_FALSE(plan_memory(program, budget).fits) << "depth " << depth << " fits too";
    }
  }
  EXPECT_GE(budgets_that_limit_the_depth, 3);
}

// oneDNN's default convolution algorithms depend on the CPU: on an Intel Xeon with AVX-512
// fmnist_dag's take 33.6 MiB of workspace at batch 128, so the README's `--policy all
// --device-memory 48MiB` was refused there; with AVX2 they take almost none. A training Net whose
// algorithms no one chose makes the widest-workspace convolutions direct until its step fits, so
// it trains at the smaller of the two smallest budgets on any CPU; algorithms chosen per layer
// are kept (a plan chose them, and a refusal says so).
TEST(PlannedStep, ATrainingNetMakesConvolutionsDirectWhereItsDefaultAlgorithmsDoNotFit) {
  const Graph graph = load_model("fmnist_dag");
  const auto smallest = [&](ConvAlgo algo) {  // all's smallest budget with every convolution on `algo`
    const std::unique_ptr<Backend> b = make_backend(graph, {.kind = BackendKind::kCpu, .batch = kBatch, .conv_algo = algo});
    return plan_step(graph, b->value_bytes(), b->facts(), {Policy::kAll}).smallest_budget;
  };
  const size_t direct = smallest(ConvAlgo::kDirect), defaults = smallest(ConvAlgo::kAuto);
  SCOPED_TRACE(VDNN_MSG("smallest budget with direct convolutions " << direct << ", with the defaults " << defaults));
  const NetOptions options{.batch = kBatch, .policy = Policy::kAll, .device_memory = std::min(direct, defaults)};
  const Net net(load_model("fmnist_dag"), options);
  EXPECT_EQ(net.convolutions_made_direct().empty(), defaults <= direct);
  size_t direct_now = 0;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const bool made_direct = net.options().conv_algos.size() == graph.nodes().size() &&
                             net.options().conv_algos[i] == ConvAlgo::kDirect;
    direct_now += made_direct;
    const std::vector<std::string>& named = net.convolutions_made_direct();
    EXPECT_EQ(std::count(named.begin(), named.end(), graph.nodes()[i].layer->name()), made_direct ? 1 : 0);
    if (made_direct) EXPECT_EQ(graph.nodes()[i].layer->kind(), LayerKind::kConv);
  }
  EXPECT_EQ(direct_now, net.convolutions_made_direct().size());
  // Below what direct convolutions need, or with the algorithms given per layer: refused as before.
  NetOptions below = options;
  below.device_memory = std::min(direct, defaults) - 1;
  EXPECT_THROW(Net(load_model("fmnist_dag"), below), Error);
  if (defaults > direct) {
    NetOptions chosen = options;
    chosen.conv_algos.assign(graph.nodes().size(), ConvAlgo::kAuto);
    EXPECT_THROW(Net(load_model("fmnist_dag"), chosen), Error) << "algorithms chosen per layer stay as chosen";
  }
}

TEST(PlannedStep, ARefusedBudgetIsNamedInTheNetsWords) {
  const Facts f(ConvAlgo::kDirect);  // chosen, so the Net keeps them (the test above)
  StepOptions o{Policy::kAll, SyncMode::kEvent, Prefetch::kAhead, 0};
  o.budget = plan_step(f.graph, f.value_bytes, f.facts, o).smallest_budget - 1;
  const PlannedStep s = plan_step(f.graph, f.value_bytes, f.facts, o);
  ASSERT_FALSE(s.fits);
  const std::string said = budget_refusal(f.graph, f.value_bytes, f.facts, o, kBatch, s);
  EXPECT_NE(said.find("is too small for model 'fmnist_dag' at batch 32 with policy all"), std::string::npos) << said;
  try {
    Net(load_model("fmnist_dag"), f.net(o));
    ADD_FAILURE() << "the Net trained below the smallest budget";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), said);
  }
}

// The Planner's rows (`vdnn plan`) evaluate the step the Net runs: costs whose only algorithm needs
// the workspace the Net's kernels need give the Net's depth and peak under `--prefetch ahead`.
TEST(PlannedStep, ThePlannerPredictsTheNetsLookAhead) {
  const Facts f;
  NetworkCosts costs;
  costs.model = f.graph.name();
  costs.batch = kBatch;
  costs.link_bytes_per_second = 1e9;
  for (size_t i = 0; i < f.graph.nodes().size(); ++i)
    costs.nodes.push_back({f.graph.nodes()[i].layer->name(),
                           f.graph.nodes()[i].layer->type(),
                           {{"-", 1e-3, 1e-3, f.facts[i].scratch_bytes}}});
  const Planner planner(f.graph, f.value_bytes, f.facts, costs, SyncMode::kEvent);
  for (Policy policy : {Policy::kConv, Policy::kAll})
    for (size_t budget : {size_t{0}, f.between(policy)}) {
      SCOPED_TRACE(VDNN_MSG(to_string(policy) << " budget " << budget));
      const Evaluation e = planner.evaluate({policy, costs.fastest()}, budget, Prefetch::kAhead);
      ASSERT_TRUE(e.fits);
      const Net net(load_model("fmnist_dag"), f.net({policy, SyncMode::kEvent, Prefetch::kAhead, budget}));
      EXPECT_EQ(e.prefetch_depth, net.prefetch_depth());
      EXPECT_EQ(e.memory.peak_bytes, net.train_plan().peak_bytes);
      EXPECT_EQ(e.minimum_budget, planner.minimum_budget({policy, costs.fastest()}));
    }
}

}  // namespace test_planned_step
}  // namespace vdnn
