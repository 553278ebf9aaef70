// Sub-batched convolutions in the costs (AlgoCost::sub_batches, plan/roofline.h): on a device
// profile each batch-proportional workspace gets variants in k = 2..16 slices (the time of k
// kernels at batch / k, the workspace of one); `auto` may choose them, vDNN_dyn never does; the
// chosen counts reach the Net (conv_sub_batches_of) and survive a JSON round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "error_of.h"
#include "io/model_file.h"
#include "plan/auto_policy.h"
#include "plan/dyn.h"
#include "plan/planner.h"
#include "planning/plan_source.h"

namespace vdnn {
namespace test_sub_batch_costs {

// The costs with every sub-batched variant removed: what the planner had before them.
NetworkCosts whole_batch_only(NetworkCosts c) {
  for (NodeCost& n : c.nodes)
    n.algos.erase(std::remove_if(n.algos.begin(), n.algos.end(), [](const AlgoCost& a) { return a.sub_batches > 1; }),
                  n.algos.end());
  return c;
}

const AlgoCost* find(const NodeCost& n, const std::string& name, int k) {
  for (const AlgoCost& a : n.algos)
    if (a.name == name && a.sub_batches == k) return &a;
  return nullptr;
}

TEST(SubBatchCosts, AVariantTakesKSlicesTimeAndOneSlicesWorkspace) {
  const Graph g = load_model("vgg16");
  const PlanInputs in = plan_inputs(g, 64, {.device = "titan-x-maxwell"});
  const NodeCost& conv = in.costs.nodes[0];  // conv1_1
  ASSERT_EQ(conv.type, "conv");
  const PlanInputs quarter = plan_inputs(g, 16, {.device = "titan-x-maxwell"});
  const AlgoCost* whole = find(conv, "gemm", 1);
  const AlgoCost* sliced = find(conv, "gemm", 4);
  const AlgoCost* alone = find(quarter.costs.nodes[0], "gemm", 1);
  ASSERT_TRUE(whole && sliced && alone);
  EXPECT_EQ(sliced->workspace_bytes, alone->workspace_bytes);  // im2col of 16 samples
  EXPECT_EQ(sliced->workspace_bytes * 4, whole->workspace_bytes);
  EXPECT_GT(sliced->forward_seconds, whole->forward_seconds);  // launches, weights read again
  EXPECT_NEAR(sliced->forward_seconds, 4 * alone->forward_seconds, 1e-3 * sliced->forward_seconds);
  EXPECT_EQ(sliced->label(), "gemm/4");
  // Fused Winograd keeps only transformed filters: no workspace to divide, no variant.
  for (const NodeCost& n : in.costs.nodes)
    for (const AlgoCost& a : n.algos) EXPECT_FALSE(a.name == "winograd" && a.sub_batches > 1) << n.name;
  // k must divide the batch: at batch 6 only 2 does.
  const PlanInputs six = plan_inputs(g, 6, {.device = "titan-x-maxwell"});
  for (const AlgoCost& a : six.costs.nodes[0].algos) EXPECT_TRUE(a.sub_batches == 1 || a.sub_batches == 2) << a.label();
}

TEST(SubBatchCosts, AutoChoosesThemOnVgg16AtTwelveGibAndDynKeepsThePapersAlgorithms) {
  const Graph g = load_model("vgg16");
  const PlanInputs in = plan_inputs(g, 256, {.device = "titan-x-maxwell"});
  const size_t budget = size_t{12} << 30;
  const Planner with(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const NetworkCosts plain = whole_batch_only(in.costs);
  const Planner without(g, in.value_bytes, in.facts, plain, SyncMode::kEvent);
  const AutoChoice a = choose_auto(with, budget), b = choose_auto(without, budget);
  ASSERT_TRUE(a.fits) << a.why;
  ASSERT_TRUE(b.fits) << b.why;
  EXPECT_GT(a.summary.sub_batched, 0);
  const double oracle = with.oracle_seconds();
  EXPECT_DOUBLE_EQ(oracle, without.oracle_seconds());  // the fastest algorithms are whole-batch ones
  const double t_with = with.evaluate(a.config, budget, a.prefetch).time.iteration_seconds;
  const double t_without = without.evaluate(b.config, budget, b.prefetch).time.iteration_seconds;
  std::printf("VGG-16 b256, Titan X, 12 GiB: auto %.3fx the oracle with sub-batches, %.3fx without\n", t_with / oracle,
              t_without / oracle);
  EXPECT_LT(t_with, t_without);
  const std::vector<int> k = conv_sub_batches_of(with.costs(), a.config.algos);
  ASSERT_EQ(k.size(), g.nodes().size());
  EXPECT_EQ(static_cast<int>(std::count_if(k.begin(), k.end(), [](int x) { return x > 1; })), a.summary.sub_batched);
  const std::vector<size_t> workspace = conv_workspace_of(with.costs(), a.config.algos);  // the CUDA Net's caps
  for (size_t i = 0; i < g.nodes().size(); ++i)
    EXPECT_EQ(workspace[i],
              in.costs.nodes[i].type == "conv" ? in.costs.nodes[i].algos[a.config.algos[i]].workspace_bytes : 0)
        << in.costs.nodes[i].name;
  const DynChoice d = choose_dyn(with, budget);
  ASSERT_TRUE(d.fits) << d.why;
  EXPECT_TRUE(conv_sub_batches_of(with.costs(), d.config.algos).empty()) << "vDNN_dyn picked a sub-batched algorithm";
  EXPECT_EQ(d.config, choose_dyn(without, budget).config) << "dyn's choice moved with the variants present";
}

TEST(SubBatchCosts, RoundTripThroughJsonAndRefuseACountThatDoesNotDivideTheBatch) {
  const Graph g = load_model("vgg16");
  const NetworkCosts c = plan_inputs(g, 8, {.device = "titan-x-maxwell"}).costs;
  const NetworkCosts back = NetworkCosts::from_json(c.to_json(), "c.json");
  ASSERT_EQ(back.nodes[0].algos.size(), c.nodes[0].algos.size());
  for (size_t i = 0; i < c.nodes[0].algos.size(); ++i)
    EXPECT_EQ(back.nodes[0].algos[i].sub_batches, c.nodes[0].algos[i].sub_batches);
  EXPECT_TRUE(conv_sub_batches_of(c, c.fastest()).empty());
  nlohmann::json j = c.to_json();
  for (const nlohmann::json bad : {nlohmann::json(3), nlohmann::json(2.5), nlohmann::json(true), nlohmann::json(16)}) {
    j["nodes"][0]["algos"][0]["sub_batches"] = bad;
    const std::string e = test::error_of([&] { NetworkCosts::from_json(j, "c.json"); });
    EXPECT_NE(
        e.find("c.json: nodes[0].algos[0]: 'sub_batches' must be an integer dividing the batch 8, got " + bad.dump()),
        std::string::npos)
        << e;
  }
  j = c.to_json();
  const int pool = static_cast<int>(
      std::find_if(c.nodes.begin(), c.nodes.end(), [](const NodeCost& n) { return n.type == "max_pool"; }) -
      c.nodes.begin());
  j["nodes"][pool]["algos"][0]["sub_batches"] = 2;
  std::string e = test::error_of([&] { NetworkCosts::from_json(j, "c.json"); });
  EXPECT_NE(e.find("'sub_batches' 2 on a max_pool layer (only convolutions run in sub-batches)"), std::string::npos)
      << e;
  // A node with sub-batched algorithms only has no whole-batch one for dyn and the oracle.
  j = c.to_json();
  for (nlohmann::json& a : j["nodes"][0]["algos"]) a["sub_batches"] = 2;
  e = test::error_of([&] { NetworkCosts::from_json(j, "c.json"); });
  EXPECT_NE(e.find("every algorithm is sub-batched"), std::string::npos) << e;
}

}  // namespace test_sub_batch_costs
}  // namespace vdnn
