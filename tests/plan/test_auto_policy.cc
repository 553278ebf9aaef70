// The `auto` policy (plan/auto_policy.h): per-tensor keep/offload/recompute and algorithms.
//   - its choice trains with weights bit-identical to `none`, at budgets from none's smallest down
//     to all's, on a linear net of every cheap layer kind and on a DAG (measured CPU costs);
//   - device-free, on zoo networks and a GPU profile: it fits wherever `all` fits and is never
//     slower than the best of none/conv/all/dyn that fits.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/cpu/compiled_graph.h"
#include "backends/cpu/profiler.h"
#include "io/model_file.h"
#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "planning/plan_source.h"
#include "planning/planned_policy.h"
#include "runtime/decisions_by_layer.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace test_auto_policy {

NetOptions options_of(const AutoChoice& a, const Planner& planner, size_t budget) {
  NetOptions o;
  o.batch = 16;
  o.policy = a.config.policy;
  o.decisions = a.config.decisions;
  use_algorithms(o, planner.costs(), a.config.algos);
  o.prefetch_ahead = a.prefetch == Prefetch::kAhead;
  o.device_memory = budget;
  return o;
}

bool decides_something(const AutoChoice& a) {
  return a.config.policy != Policy::kNone &&
         (a.config.policy != Policy::kAuto || a.config.decisions.any(StorageAction::kOffload) ||
          a.config.decisions.any(StorageAction::kRecompute) || a.summary.leaner_algorithms > 0);
}

TEST(AutoPolicy, TrainsBitIdenticalToNoneFromNonesBudgetToAlls) {
  const std::vector<std::pair<std::string, Graph (*)()>> nets = {
      {"cheap_layers", [] { return test::cheap_layers_net(); }},
      {"offload_dag", [] { return test::offload_test_dag(); }}};
  for (const auto& [name, make] : nets) {
    const Graph g = make();
    const NetworkCosts costs = measure_costs(g, 16, {.repeats = 1});
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const CompiledGraph compiled(g, 16, 1, engine, ConvAlgo::kDirect);
    const Planner planner(g, compiled.value_bytes(), compiled.facts(), costs, SyncMode::kEvent);
    const size_t none_min = planner.minimum_budget({Policy::kNone, costs.fastest()});
    const size_t all_min = planner.minimum_budget({Policy::kAll, costs.leanest()});
    ASSERT_LT(all_min, none_min) << name;
    for (const size_t budget : {none_min, (none_min + all_min) / 2, all_min}) {
      const AutoChoice a = choose_auto(planner, budget);
      ASSERT_TRUE(a.fits) << name << " at " << budget << ": " << a.why;
      if (budget < none_min) EXPECT_TRUE(decides_something(a)) << name << " at " << budget;
      // The reference: `none` with the same algorithms (another algorithm is other arithmetic).
      NetOptions none;
      none.batch = 16;
      none.conv_algos = conv_algos_of(costs, a.config.algos);
      EXPECT_EQ(test::train_for_hash(make(), options_of(a, planner, budget), 4), test::train_for_hash(make(), none, 4))
          << name << " at " << budget << ": " << describe(a);
    }
  }
}

// Device-free, on the CUDA target's sizes and a GPU's roofline.
TEST(AutoPolicy, FitsWhereAllFitsAndIsNeverSlowerThanVdnn) {
  for (const char* model : {"vgg16", "googlenet", "resnet50"}) {
    const Graph g = load_model(model);
    const PlanInputs in = plan_inputs(g, 32, {.device = "titan-x-maxwell"});
    const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
    const NetworkCosts& costs = planner.costs();
    const size_t none_min = planner.minimum_budget({Policy::kNone, costs.fastest()});
    const size_t all_min = planner.minimum_budget({Policy::kAll, costs.leanest()});
    for (const double f : {1.0, 0.75, 0.5}) {
      const size_t budget = std::max(all_min, static_cast<size_t>(none_min * f));
      const AutoChoice a = choose_auto(planner, budget);
      ASSERT_TRUE(a.fits) << model << " at " << budget << ": " << a.why;
      EXPECT_TRUE(planner.fits(a.config, budget)) << model;
      const Evaluation mine = planner.evaluate(a.config, budget, a.prefetch);
      EXPECT_DOUBLE_EQ(mine.time.iteration_seconds, a.seconds) << model;
      double best = 1e30;
      for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll})
        for (Prefetch f2 : {Prefetch::kVdnn, Prefetch::kAhead})
          if (planner.fits({p, costs.fastest()}, budget))
            best = std::min(best, planner.evaluate({p, costs.fastest()}, budget, f2).time.iteration_seconds);
      const DynChoice d = choose_dyn(planner, budget);
      if (d.fits) best = std::min(best, planner.evaluate(d.config, budget).time.iteration_seconds);
      EXPECT_LE(a.seconds, best * (1 + 1e-12)) << model << " at " << budget;
    }
  }
}

TEST(AutoPolicy, ABudgetNothingFitsNamesTheSmallestThatDoes) {
  const Graph g = load_model("vgg16");
  const PlanInputs in = plan_inputs(g, 64, {.device = "titan-x-maxwell"});
  const Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const AutoChoice a = choose_auto(planner, size_t{64} << 20);
  EXPECT_FALSE(a.fits);
  EXPECT_NE(a.why.find("needs"), std::string::npos) << a.why;
  EXPECT_NE(describe(a).find("nothing fits"), std::string::npos);
}

TEST(AutoPolicy, UnderAHostBudgetItRecomputesWhatItWouldHaveOffloaded) {
  // VGG-16 b256 in 12 GiB on the Titan X: auto offloads 1.67 GiB when the host is unbounded. With
  // 1 GiB of host memory it must keep its copies within it — recomputing values instead of
  // offloading them — and still fit, where every vDNN policy's copies (8.7 and 16 GiB) do not.
  const Graph g = load_model("vgg16");
  const PlanInputs in = plan_inputs(g, 256, {.device = "titan-x-maxwell"});
  Planner planner(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const size_t budget = size_t{12} << 30, host = size_t{1} << 30;
  const AutoChoice free = choose_auto(planner, budget);
  ASSERT_TRUE(free.fits) << free.why;
  ASSERT_GT(planner.host_bytes(free.config), host) << "the host budget would not bind";
  planner.set_host_budget(host);
  const AutoChoice bound = choose_auto(planner, budget);
  ASSERT_TRUE(bound.fits) << bound.why;
  EXPECT_LE(planner.host_bytes(bound.config), host);
  EXPECT_TRUE(planner.evaluate(bound.config, budget, bound.prefetch).fits);
  EXPECT_LT(bound.summary.offloaded_bytes, free.summary.offloaded_bytes);
  EXPECT_FALSE(choose_dyn(planner, budget).fits);
}

}  // namespace test_auto_policy
}  // namespace vdnn
