// `auto` with slice runs (plan/slice_search.h): the candidates are VGG's blocks and ResNet's stem; below the
// smallest budget any whole-batch configuration trains in, the search finds slice counts that fit;
// with room to spare it takes slices only when they make the step faster.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/model_file.h"
#include "plan/slice_search.h"
#include "planning/plan_source.h"

namespace vdnn {
namespace test_slice_search {

InputsOf titan_x(int64_t batch) {
  return [batch](const Graph& g) {
    PlanInputs in = plan_inputs(g, batch, {.device = "titan-x-maxwell"});
    return PlannerInputs{std::move(in.value_bytes), std::move(in.facts), std::move(in.costs)};
  };
}

TEST(SliceSearch, TheCandidatesAreVggsBlocksCutAfterEachPool) {
  const std::vector<SliceRun> c = slice_run_candidates(load_model("vgg16"));
  ASSERT_GE(c.size(), 5u);
  const char* blocks[][2] = {
      {"conv1_1", "pool1"}, {"conv2_1", "pool2"}, {"conv3_1", "pool3"}, {"conv4_1", "pool4"}, {"conv5_1", "pool5"}};
  for (size_t b = 0; b < 5; ++b) {
    EXPECT_EQ(c[b].first, blocks[b][0]);
    EXPECT_EQ(c[b].last, blocks[b][1]);
  }
  // Batch norm may be in a run: ResNet's stem is one, and each block's first batch norm up to
  // its second (the block's input is read by the residual join too, so its first convolution is out).
  const std::vector<SliceRun> r = slice_run_candidates(load_model("resnet18"));
  ASSERT_GE(r.size(), 2u);
  EXPECT_EQ(r[0].first + ":" + r[0].last, "conv1:maxpool");
  EXPECT_EQ(r[1].first + ":" + r[1].last, "layer1_0_bn1:layer1_0_bn2");
}

TEST(SliceSearch, BelowTheSmallestWholeBatchBudgetSlicesMakeAVggFit) {
  const int64_t batch = 256;
  const Graph g = load_model("vgg_cifar");
  const PlannerInputs in = titan_x(batch)(g);
  const Planner whole(g, in.value_bytes, in.facts, in.costs, SyncMode::kEvent);
  const size_t floor = whole.minimum_budget({Policy::kAll, whole.costs().leanest()});
  const size_t budget = floor * 3 / 4;
  ASSERT_FALSE(choose_auto(whole, budget).fits);
  const SliceRunChoice c = choose_slice_runs(g, batch, titan_x(batch), SyncMode::kEvent, budget);
  std::string tried;
  for (const std::string& t : c.tried) tried += t + "\n";
  ASSERT_TRUE(c.choice.fits) << tried;
  ASSERT_FALSE(c.runs.empty());
  EXPECT_EQ(c.runs[0].first, "conv1_1");  // the largest maps
  const SlicedGraph s = slice_runs(g, batch, c.runs);
  const PlannerInputs sin = titan_x(batch)(s.graph);
  const Planner sliced(s.graph, sin.value_bytes, sin.facts, sin.costs, SyncMode::kEvent);
  EXPECT_TRUE(sliced.fits(c.choice.config, budget));
  EXPECT_GT(c.choice.seconds, whole.oracle_seconds());
  // Each set of counts is searched at most once (a pass after the last change repeats the tries
  // of the pass before: they are answered from memory).
  std::vector<std::string> sets;
  for (const std::string& t : c.tried) sets.push_back(t.substr(0, t.find(": ")));
  std::sort(sets.begin(), sets.end());
  EXPECT_EQ(std::adjacent_find(sets.begin(), sets.end()), sets.end()) << tried;
  EXPECT_LE(static_cast<size_t>(c.evaluations + c.pruned), c.tried.size());
}

TEST(SliceSearch, WithRoomToSpareNoSlicesAreTaken) {
  const int64_t batch = 16;
  const Graph g = load_model("vgg16");
  const SliceRunChoice c = choose_slice_runs(g, batch, titan_x(batch), SyncMode::kEvent, size_t{12} << 30);
  ASSERT_TRUE(c.choice.fits);
  EXPECT_TRUE(c.runs.empty()) << to_string(c.runs[0]);  // slices re-read weights: slower when memory is free
  EXPECT_EQ(c.evaluations, 1);                          // at the oracle already: nothing to search
  EXPECT_EQ(c.tried.size(), 1u);
}

}  // namespace test_slice_search
}  // namespace vdnn
