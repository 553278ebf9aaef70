// The lower bound beside every `auto` plan (plan/step_bound.h): no plan at the budget is faster —
// not auto's, not dyn's, on whole and sliced graphs, from the floor to where everything fits — it
// is never below the oracle, it rises where the budget rules out a layer's fastest algorithm, and
// a budget that no layer's kernels fit on any algorithm is infeasible.
#include <gtest/gtest.h>

#include "io/model_file.h"
#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "plan/step_bound.h"
#include "planning/plan_source.h"
#include "rewrites/slice_runs.h"

namespace vdnn {
namespace test_step_bound {

struct Planned {
  Graph graph;
  PlanInputs in;
  Planner planner;
  Planned(Graph g, int64_t batch)
      : graph(std::move(g)),
        in(plan_inputs(graph, batch, {.device = "titan-x-maxwell"})),
        planner(graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent) {}
};

void expect_below_every_plan(const Planner& p, const std::string& what) {
  const size_t floor = p.minimum_budget({Policy::kAll, p.costs().leanest()});
  const size_t top = p.minimum_budget({Policy::kNone, p.costs().fastest()});
  for (size_t budget : {floor, floor + (top - floor) / 3, (floor + top) / 2, top - 1, top}) {
    SCOPED_TRACE(what + " at " + std::to_string(budget));
    const StepBound b = step_lower_bound(p, budget);
    ASSERT_TRUE(b.feasible);
    EXPECT_GE(b.seconds, p.oracle_seconds() * (1 - 1e-12));
    const AutoChoice a = choose_auto(p, budget);
    ASSERT_TRUE(a.fits);
    EXPECT_LE(b.seconds, a.seconds * (1 + 1e-12));
    const DynChoice d = choose_dyn(p, budget);
    ASSERT_TRUE(d.fits);
    EXPECT_LE(b.seconds, p.evaluate(d.config, budget).time.iteration_seconds * (1 + 1e-12));
  }
}

TEST(StepBound, NoPlanAtTheBudgetIsFasterWholeOrSliced) {
  for (const auto& [model, batch] : {std::pair<const char*, int64_t>{"vgg_cifar", 256}, {"resnet18", 32},
                                     {"fmnist_dag", 64}}) {
    const Planned whole(load_model(model), batch);
    expect_below_every_plan(whole.planner, model);
  }
  const Graph g = load_model("vgg_cifar");
  for (const char* run : {"conv1_1:pool1:4", "conv2_1:pool2:16"}) {
    const SlicedGraph s = slice_runs(g, 256, {parse_slice_run(run)});
    const PlanInputs in = plan_inputs(s.graph, 256, {.device = "titan-x-maxwell"});
    const Planner sliced(s.graph, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
    expect_below_every_plan(sliced, std::string("vgg_cifar ") + run);
  }
}

// VGG-16 b256 on the Titan X at 12 GiB: conv1_2's fastest algorithm (13.8 GiB of workspace) cannot
// fit beside its own maps, so the bound is above the oracle, and still below auto's plan.
TEST(StepBound, ABudgetThatRulesOutAFastestAlgorithmRaisesIt) {
  const Planned vgg(load_model("vgg16"), 256);
  const size_t budget = size_t{12} << 30;
  const StepBound b = step_lower_bound(vgg.planner, budget);
  ASSERT_TRUE(b.feasible);
  EXPECT_GE(b.leaner_layers, 1);
  EXPECT_GT(b.seconds, vgg.planner.oracle_seconds());
  EXPECT_LE(b.seconds, choose_auto(vgg.planner, budget).seconds);
  const StepBound roomy = step_lower_bound(vgg.planner, size_t{1} << 40);
  EXPECT_EQ(roomy.leaner_layers, 0);
  EXPECT_DOUBLE_EQ(roomy.seconds, vgg.planner.oracle_seconds());
  EXPECT_FALSE(step_lower_bound(vgg.planner, size_t{1} << 30).feasible) << "conv1_2's maps alone exceed 1 GiB";
}

}  // namespace test_step_bound
}  // namespace vdnn
