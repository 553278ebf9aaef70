// The planner and vDNN_dyn: dyn takes the first configuration of the paper's order that fits, its
// choice really fits (the memory planner's exact answer), an impossible budget names the minimum;
// and what the planner predicts for a configuration is exactly what a Net of it plans and runs.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/cpu/compiled_graph.h"
#include "backends/cpu/profiler.h"
#include "io/model_file.h"
#include "plan/dyn.h"
#include "plan/planner.h"
#include "plan/program_builder.h"
#include "runtime/net.h"

namespace vdnn {
namespace test_planner {

// Convolutions get a fast algorithm with a large workspace and a slow one with none.
NetworkCosts two_algorithm_costs(const Graph& g, int64_t batch) {
  NetworkCosts c;
  c.model = g.name();
  c.batch = batch;
  c.link_bytes_per_second = 1e9;
  for (const Node& n : g.nodes()) {
    NodeCost node{n.layer->name(), n.layer->type(), {{"-", 1e-3, 2e-3, 0}}};
    if (n.layer->kind() == LayerKind::kConv)
      node.algos = {{"lean", 4e-3, 8e-3, 0}, {"fast", 1e-3, 2e-3, size_t{32} << 20}};
    c.nodes.push_back(node);
  }
  return c;
}

class PlannerTest : public ::testing::Test {
 protected:
  PlannerTest()
      : graph_(load_model("fmnist_cnn")),
        compiled_(graph_, 64, 1, engine_, ConvAlgo::kDirect),
        planner_(graph_, compiled_.value_bytes(), compiled_.facts(), two_algorithm_costs(graph_, 64),
                 SyncMode::kEvent) {}
  size_t min(Policy p, const AlgoChoice& a) const { return planner_.minimum_budget({p, a}); }
  size_t peak(Policy p, const AlgoChoice& a) const { return planner_.evaluate({p, a}, 0).memory.peak_bytes; }
  AlgoChoice fast() const { return planner_.costs().fastest(); }
  AlgoChoice lean() const { return planner_.costs().leanest(); }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  Graph graph_;
  CompiledGraph compiled_;
  Planner planner_;
};

TEST_F(PlannerTest, FastestAndLeanestPickOppositeAlgorithms) {
  int convs = 0;
  for (size_t i = 0; i < graph_.nodes().size(); ++i) {
    if (graph_.nodes()[i].layer->kind() != LayerKind::kConv) continue;
    ++convs;
    EXPECT_EQ(planner_.costs().nodes[i].algos[fast()[i]].name, "fast");
    EXPECT_EQ(planner_.costs().nodes[i].algos[lean()[i]].name, "lean");
  }
  EXPECT_GE(convs, 2);
  EXPECT_LT(planner_.costs().compute_seconds(fast()), planner_.costs().compute_seconds(lean()));
  // Workspace is memory: the fastest algorithms need more of it.
  EXPECT_GT(min(Policy::kAll, fast()), min(Policy::kAll, lean()));
  EXPECT_GT(min(Policy::kNone, fast()), min(Policy::kAll, fast()));
}

TEST_F(PlannerTest, GenerousBudgetKeepsEverythingOnTheDeviceWithTheFastestAlgorithms) {
  const DynChoice d = choose_dyn(planner_, size_t{1} << 30);
  ASSERT_TRUE(d.fits);
  EXPECT_EQ(d.step, 2);
  EXPECT_EQ(d.config.policy, Policy::kNone);
  EXPECT_EQ(d.config.algos, fast());
  EXPECT_EQ(planner_.evaluate(d.config, 0).time.iteration_seconds, planner_.oracle_seconds());
}

// Fitting is not monotone in the budget (best fit places differently in a smaller pool), but
// nothing fits below its peak: budgets just under a peak are the sharp test.
TEST_F(PlannerTest, TighterBudgetsOffloadFirstThenTakeLeanerAlgorithms) {
  const size_t all_fast = min(Policy::kAll, fast());
  const DynChoice offload = choose_dyn(planner_, all_fast);
  ASSERT_TRUE(offload.fits) << offload.why;
  EXPECT_EQ(offload.config.algos, fast());
  EXPECT_TRUE(planner_.fits(offload.config, all_fast));
  const size_t below_none = peak(Policy::kNone, fast()) - 1;
  const DynChoice no_room = choose_dyn(planner_, below_none);
  ASSERT_TRUE(no_room.fits);
  EXPECT_NE(no_room.config, (Configuration{Policy::kNone, fast()}));

  const size_t tight = peak(Policy::kAll, fast()) - 1;
  ASSERT_TRUE(planner_.fits({Policy::kAll, lean()}, tight)) << "the test needs a budget only leaner algorithms fit";
  const DynChoice lean_algos = choose_dyn(planner_, tight);
  ASSERT_TRUE(lean_algos.fits) << lean_algos.why;
  EXPECT_GE(lean_algos.step, 5);
  EXPECT_NE(lean_algos.config.algos, fast());
  EXPECT_TRUE(planner_.fits(lean_algos.config, tight));
  // Leaner algorithms cost time: the same policy with the fastest algorithms would be quicker.
  EXPECT_GT(planner_.evaluate(lean_algos.config, tight).time.iteration_seconds,
            planner_.evaluate({lean_algos.config.policy, fast()}, 0).time.iteration_seconds);
}

// --host-memory: a configuration whose host copies need more than the host budget does not fit,
// whatever the device budget, and dyn takes the first one in its order whose copies fit.
TEST_F(PlannerTest, AHostBudgetRulesOutWhatOffloadsTooMuch) {
  const size_t device = min(Policy::kAll, fast());
  const Evaluation all = planner_.evaluate({Policy::kAll, fast()}, device);
  const Evaluation conv = planner_.evaluate({Policy::kConv, fast()}, 0);
  ASSERT_TRUE(all.fits);
  ASSERT_GT(conv.memory.host_bytes, 0u) << "the test needs conv to offload something";
  ASSERT_GT(all.memory.host_bytes, conv.memory.host_bytes) << "the test needs conv to offload less than all";
  ASSERT_LT(device, min(Policy::kNone, fast())) << "the test needs a budget only offloading fits";
  planner_.set_host_budget(all.memory.host_bytes - 1);
  const Evaluation capped = planner_.evaluate({Policy::kAll, fast()}, device);
  EXPECT_FALSE(capped.fits);
  EXPECT_TRUE(capped.device_fits);
  EXPECT_FALSE(capped.host_fits);
  EXPECT_FALSE(planner_.fits({Policy::kAll, fast()}, device));
  EXPECT_EQ(planner_.host_bytes({Policy::kAll, fast()}), all.memory.host_bytes);
  // dyn goes on to what offloads less: conv, with leaner algorithms if the device needs them.
  const DynChoice d = choose_dyn(planner_, min(Policy::kConv, fast()));
  ASSERT_TRUE(d.fits) << d.why;
  EXPECT_NE(d.config.policy, Policy::kAll) << d.why;
  EXPECT_LE(planner_.host_bytes(d.config), planner_.host_budget());
  // No host memory at all: a roomy device keeps everything; a tight one has nothing left, and
  // dyn says the host is why.
  planner_.set_host_budget(1);
  const DynChoice roomy = choose_dyn(planner_, size_t{1} << 30);
  ASSERT_TRUE(roomy.fits) << roomy.why;
  EXPECT_EQ(roomy.config.policy, Policy::kNone);
  const DynChoice none_left = choose_dyn(planner_, device);
  EXPECT_FALSE(none_left.fits);
  EXPECT_NE(none_left.why.find("more than the host budget"), std::string::npos) << none_left.why;
  planner_.set_host_budget(all.memory.host_bytes);  // exactly what it needs
  EXPECT_TRUE(planner_.evaluate({Policy::kAll, fast()}, device).fits);
}

TEST_F(PlannerTest, AnImpossibleBudgetNamesTheMinimum) {
  const size_t least = min(Policy::kAll, lean());
  const DynChoice d = choose_dyn(planner_, peak(Policy::kAll, lean()) - 1);
  EXPECT_FALSE(d.fits);
  EXPECT_EQ(d.minimum_budget, least);
  EXPECT_NE(d.why.find("needs at least"), std::string::npos) << d.why;
  EXPECT_TRUE(choose_dyn(planner_, least).fits);
}

TEST_F(PlannerTest, ProfilesOfAnotherNetworkAreRefused) {
  NetworkCosts other = two_algorithm_costs(load_model("fmnist_dag"), 64);
  EXPECT_THROW(Planner(graph_, compiled_.value_bytes(), compiled_.facts(), other, SyncMode::kEvent), Error);
}

TEST_F(PlannerTest, OverheadIsMeasuredAgainstTheOracleAndBoundedBelowByTheBusiestStream) {
  for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll}) {
    const Evaluation e = planner_.evaluate({p, fast()}, 0);
    EXPECT_GE(e.time.iteration_seconds, planner_.oracle_seconds() - 1e-12) << to_string(p);
    EXPECT_GE(e.time.iteration_seconds, e.bound_seconds - 1e-12) << to_string(p);
    EXPECT_TRUE(e.fits);
    EXPECT_LE(e.memory.high_water_bytes, e.minimum_budget) << to_string(p);
  }
}

// The Planner's Program cache (plan/program_cache.h): a configuration asked about by fits(),
// minimum_budget(), evaluate() and program() is built once for training and once for evaluation
// (which depends on the algorithms alone); what it hands out is what building anew gives; a key
// that differs in anything (the decisions, the optimizer) is built again.
TEST_F(PlannerTest, AConfigurationIsBuiltOnceHoweverOftenItIsPlanned) {
  const Configuration all{Policy::kAll, fast()};
  const size_t before = planner_.programs_built();
  const size_t smallest = planner_.minimum_budget(all);
  EXPECT_TRUE(planner_.fits(all, smallest));
  EXPECT_FALSE(planner_.fits(all, smallest - 1));
  const Evaluation e = planner_.evaluate(all, smallest);
  EXPECT_EQ(e.minimum_budget, smallest);
  EXPECT_EQ(planner_.programs_built() - before, 2u) << "the training and the evaluation Program";
  std::vector<NodeFacts> facts = compiled_.facts();
  for (size_t i = 0; i < facts.size(); ++i)
    facts[i].scratch_bytes = planner_.costs().nodes[i].algos[all.algos[i]].workspace_bytes;
  EXPECT_EQ(planner_.program(all, true).to_text(),
            build_program(graph_, compiled_.value_bytes(), facts, {Policy::kAll, SyncMode::kEvent, true}).to_text());
  planner_.minimum_budget({Policy::kConv, fast()});
  EXPECT_EQ(planner_.programs_built() - before, 3u) << "conv's training Program; the evaluation one is shared";
  Configuration decided = all;
  decided.decisions.values.assign(graph_.values().size(), {});
  planner_.fits(decided, smallest);
  EXPECT_EQ(planner_.programs_built() - before, 4u) << "explicit decisions are another key";
  planner_.set_optimizer(OptimizerKind::kAdamW);
  EXPECT_GT(planner_.minimum_budget(all), smallest) << "AdamW's two moments: built again, not served from the cache";
  EXPECT_EQ(planner_.programs_built() - before, 6u);
}

// A policy's Program is keyed by what it does: without a convolution-class layer `conv` offloads
// nothing, so its Program and evaluation are `none`'s, made once; what it hands out still names conv.
// With convolutions (the fixture's fmnist_cnn) the two stay apart.
TEST_F(PlannerTest, WithoutAConvolutionConvIsNoneBuiltAndEvaluatedOnce) {
  const Graph relus = parse_model_text(R"({"name": "relus", "input": [3, 8, 8], "classes": 10, "layers": [
      {"type": "relu", "name": "r1"}, {"type": "relu", "name": "r2"}, {"type": "fc", "name": "fc", "units": "classes"},
      {"type": "softmax_cross_entropy", "name": "loss"}]})",
                                       "relus.json");
  const CompiledGraph compiled(relus, 4, 1, engine_, ConvAlgo::kDirect);
  const Planner planner(relus, compiled.value_bytes(), compiled.facts(), two_algorithm_costs(relus, 4),
                        SyncMode::kEvent);
  const AlgoChoice fastest = planner.costs().fastest();
  const Evaluation none = planner.evaluate({Policy::kNone, fastest}, 0);
  const Evaluation conv = planner.evaluate({Policy::kConv, fastest}, 0);
  EXPECT_EQ(planner.evaluations_made(), 1u);
  EXPECT_EQ(planner.programs_built(), 2u) << "one training and one evaluation Program for both";
  EXPECT_EQ(conv.config.policy, Policy::kConv);
  EXPECT_EQ(conv.memory.peak_bytes, none.memory.peak_bytes);
  EXPECT_EQ(conv.time.iteration_seconds, none.time.iteration_seconds);
  EXPECT_EQ(planner.program({Policy::kConv, fastest}, true).policy, Policy::kConv);
  planner.evaluate({Policy::kAll, fastest}, 0);
  EXPECT_EQ(planner.evaluations_made(), 2u) << "all offloads: another Program";

  const size_t before = planner_.evaluations_made();
  planner_.evaluate({Policy::kNone, fast()}, 0);
  planner_.evaluate({Policy::kConv, fast()}, 0);
  EXPECT_EQ(planner_.evaluations_made() - before, 2u) << "fmnist_cnn's conv offloads its convolutions' inputs";
}

// With this machine's measured costs, what the planner predicts for a configuration is what a Net
// built with that configuration plans (the same Program, the same allocator), on a linear net and
// a DAG; and dyn's choice under a tight budget really trains in that budget.
TEST(PlannerPrediction, PredictedMemoryIsTheMemoryTheRunUses) {
  for (const char* model : {"fmnist_cnn", "fmnist_dag"}) {
    const Graph g = load_model(model);
    const NetworkCosts costs = measure_costs(g, 16, {.repeats = 1});
    const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    const CompiledGraph direct(g, 16, 1, engine, ConvAlgo::kDirect);
    const Planner planner(g, direct.value_bytes(), direct.facts(), costs, SyncMode::kEvent);
    for (Policy p : {Policy::kNone, Policy::kConv, Policy::kAll}) {
      const Evaluation e = planner.evaluate({p, costs.fastest()}, 0);
      Net net(load_model(model), {.batch = 16, .policy = p, .conv_algos = conv_algos_of(costs, costs.fastest())});
      EXPECT_EQ(net.train_plan().high_water_bytes, e.memory.high_water_bytes) << model << " " << to_string(p);
      EXPECT_EQ(net.train_plan().peak_bytes, e.memory.peak_bytes) << model << " " << to_string(p);
      EXPECT_EQ(net.train_plan().host_bytes, e.memory.host_bytes) << model << " " << to_string(p);
    }
    const size_t tight = planner.minimum_budget({Policy::kAll, costs.fastest()});
    const DynChoice d = choose_dyn(planner, tight);
    ASSERT_TRUE(d.fits) << d.why;
    Net net(load_model(model), {.batch = 16,
                                .policy = d.config.policy,
                                .device_memory = tight,
                                .conv_algos = conv_algos_of(costs, d.config.algos)});
    std::vector<float> images(static_cast<size_t>(16 * g.input_shape().elements()), 0.5f);
    std::vector<int32_t> labels(16, 1);
    net.set_batch(images.data(), labels.data(), 16);
    EXPECT_TRUE(std::isfinite(net.forward(true))) << model;
    net.backward();
    EXPECT_EQ(net.arena_bytes(), tight) << model;
  }
}

// Below 4x4 outputs `auto` computes a convolution's weight gradient by GEMM: the profile offers that
// variant as "gemm", a choice of it runs as `auto`, and the Net plans the workspace profiled for it.
TEST(PlannerPrediction, TinyConvolutionsOfferTheGemmWeightGradientThatAutoRuns) {
  auto tiny_net = [] {
    ModelBuilder b("tiny_outputs", {16, 6, 6}, 3);
    b.layer("conv", "c1", {{"channels", 32}, {"kernel", 3}, {"stride", 2}, {"pad", 1}})
        .layer("relu", "r1")
        .layer("conv", "c2", {{"channels", 32}, {"kernel", 3}, {"pad", 1}})
        .layer("fc", "fc", {{"units", 3}})
        .layer("softmax_cross_entropy", "loss");
    return b.build();
  };
  const Graph g = tiny_net();
  const NetworkCosts costs = measure_costs(g, 8, {.repeats = 1});
  AlgoChoice gemm(costs.nodes.size(), 0);
  for (size_t i = 0; i < costs.nodes.size(); ++i) {
    if (costs.nodes[i].type != "conv") continue;
    const auto& algos = costs.nodes[i].algos;
    const auto it = std::find_if(algos.begin(), algos.end(), [](const AlgoCost& a) { return a.name == "gemm"; });
    ASSERT_NE(it, algos.end()) << costs.nodes[i].name;
    gemm[i] = static_cast<int>(it - algos.begin());
  }
  const std::vector<ConvAlgo> algos = conv_algos_of(costs, gemm);
  EXPECT_EQ(algos[0], ConvAlgo::kAuto);
  EXPECT_EQ(algos[2], ConvAlgo::kAuto);
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const CompiledGraph direct(g, 8, 1, engine, ConvAlgo::kDirect);
  const Planner planner(g, direct.value_bytes(), direct.facts(), costs, SyncMode::kEvent);
  const Evaluation e = planner.evaluate({Policy::kAll, gemm}, 0);
  Net net(tiny_net(), {.batch = 8, .policy = Policy::kAll, .conv_algos = algos});
  EXPECT_EQ(net.train_plan().peak_bytes, e.memory.peak_bytes);
  EXPECT_EQ(net.train_plan().by_class.peak(MemoryClass::kWorkspace), e.memory.by_class.peak(MemoryClass::kWorkspace));
}

}  // namespace test_planner
}  // namespace vdnn
