// Planning in one place (issue 16): plan_step is the one planner of a training step. The Net runs
// exactly the step it returns (Programs, placement, look-ahead depth), refuses a budget with its
// words, and the Planner (`vdnn plan`, dyn) evaluates that same step — so what the plan predicts
// for `--prefetch ahead` is what training uses.
#include <gtest/gtest.h>

#include "backend_api/backend.h"
#include "backends/backend_targets.h"
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
  std::vector<size_t> value_bytes;
  std::vector<NodeFacts> facts;
  Facts() {
    const std::unique_ptr<Backend> b = make_backend(graph, {BackendKind::kCpu, kBatch});
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
            .prefetch_ahead = s.prefetch == Prefetch::kAhead};
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
        if (!s.fits) {
          EXPECT_THROW(Net(load_model("fmnist_dag"), f.net(o)), Error);
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

TEST(PlannedStep, ARefusedBudgetIsNamedInTheNetsWords) {
  const Facts f;
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
