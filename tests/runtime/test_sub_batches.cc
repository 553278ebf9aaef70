// Sub-batched convolutions (NetOptions::conv_sub_batches, backends/cpu/sub_batched_kernel.cc):
// training with every convolution in k slices of the batch agrees with whole-batch training (the
// weight gradient's summation order differs: float rounding only), is bit-identical from run to
// run and under every offload policy, holds a slice's workspace, and bad counts are refused naming
// the layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "error_of.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace test_sub_batches {

// A linear net with batch norm after each convolution.
Graph bn_chain() {
  ModelBuilder b("bn_chain", {3, 16, 16}, 10);
  b.layer("conv", "conv1", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn1")
      .layer("relu", "relu1")
      .layer("max_pool", "pool1", {{"kernel", 2}})
      .layer("conv", "conv2", {{"channels", 32}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn2")
      .layer("relu", "relu2")
      .layer("conv", "conv3", {{"channels", 32}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu3")
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 10}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

// k for every convolution of `g`, 1 elsewhere.
std::vector<int> every_conv_in(const Graph& g, int k) {
  std::vector<int> out;
  for (const Node& n : g.nodes()) out.push_back(n.layer->kind() == LayerKind::kConv ? k : 1);
  return out;
}

using test::Trained;

Trained train(Graph g, const NetOptions& o, int steps) { return test::train_and_export(std::move(g), o, steps); }

TEST(SubBatches, TrainingAgreesWithTheWholeBatchOnABatchNormChainAndADag) {
  for (Graph (*make)() : {+[] { return bn_chain(); }, +[] { return test::offload_test_dag(); }}) {
    const Graph g = make();
    NetOptions whole{.batch = 16, .seed = 3};
    NetOptions sliced = whole;
    sliced.conv_sub_batches = every_conv_in(g, 4);
    const Trained a = train(make(), whole, 10), b = train(make(), sliced, 10);
    ASSERT_EQ(a.losses.size(), 10u);
    ASSERT_EQ(b.losses.size(), 10u);
    const test::Agreement d = test::agreement(a, b);
    const double loss_rel = d.loss_relative, weight_abs = d.weight_absolute;
    std::printf("%s, 4 sub-batches of 4, 10 steps: loss %.3g relative, weights %.3g absolute\n", g.name().c_str(),
                loss_rel, weight_abs);
    EXPECT_LE(loss_rel, 1e-6) << g.name();
    EXPECT_LE(weight_abs, 1e-5) << g.name();
  }
}

TEST(SubBatches, BitIdenticalFromRunToRunAndUnderEveryPolicy) {
  NetOptions o{.batch = 16, .seed = 5};
  o.conv_sub_batches = every_conv_in(test::offload_test_dag(), 2);
  const std::string first = test::train_for_hash(test::offload_test_dag(), o, 4);
  EXPECT_EQ(test::train_for_hash(test::offload_test_dag(), o, 4), first);
  for (Policy p : {Policy::kAll, Policy::kConv}) {
    o.policy = p;
    EXPECT_EQ(test::train_for_hash(test::offload_test_dag(), o, 4), first) << to_string(p);
  }
}

TEST(SubBatches, AConvolutionHoldsTheWorkspaceOfItsSliceAndOneSlicesWeightGradient) {
  // The workspace of a convolution in 8 slices of a batch of 64 is that of the same convolution at
  // batch 8, plus one slice's weight and bias gradient. (On this CPU oneDNN's scratchpads barely
  // grow with the batch — per-thread buffers — so the gain is on cuDNN's GEMM, FFT and Winograd
  // workspaces; the figures print.)
  const auto wide = [] {
    ModelBuilder b("wide", {64, 32, 32}, 10);
    b.layer("conv", "stem", {{"channels", 64}, {"kernel", 1}})  // the input in oneDNN's blocked layout
        .layer("conv", "conv", {{"channels", 64}, {"kernel", 3}, {"pad", 1}})
        .layer("avg_pool", "gap", {{"global", true}})
        .layer("fc", "fc", {{"units", 10}})
        .layer("softmax_cross_entropy", "loss");
    return b.build();
  };
  const size_t whole = Net(wide(), {.batch = 64}).backend().facts()[1].scratch_bytes;
  const size_t slice = Net(wide(), {.batch = 8}).backend().facts()[1].scratch_bytes;
  NetOptions o{.batch = 64};
  o.conv_sub_batches = every_conv_in(wide(), 8);
  const size_t sliced = Net(wide(), o).backend().facts()[1].scratch_bytes;
  std::printf(
      "3x3 conv, 64 channels, 32x32, batch 64: workspace %zu bytes whole, %zu in 8 sub-batches (%zu at batch 8)\n",
      whole, sliced, slice);
  const size_t gradients = 64 * 64 * 3 * 3 * 4 + 64 * 4;
  EXPECT_GE(sliced, slice + gradients);
  EXPECT_LE(sliced, slice + gradients + 3 * 64);  // alignment of each part to 64 bytes
}

TEST(SubBatches, BadCountsAreRefusedNamingTheLayer) {
  const Graph g = bn_chain();
  NetOptions o{.batch = 16};
  o.conv_sub_batches = every_conv_in(g, 3);
  std::string e = test::error_of([&] { Net(bn_chain(), o); });
  EXPECT_NE(e.find("conv1"), std::string::npos) << e;
  EXPECT_NE(e.find("do not divide the batch of 16"), std::string::npos) << e;
  o.conv_sub_batches = every_conv_in(g, 1);
  o.conv_sub_batches[1] = 2;  // bn1
  e = test::error_of([&] { Net(bn_chain(), o); });
  EXPECT_NE(e.find("bn1"), std::string::npos) << e;
  EXPECT_NE(e.find("only convolutions"), std::string::npos) << e;
  o.conv_sub_batches = {2, 2};
  e = test::error_of([&] { Net(bn_chain(), o); });
  EXPECT_NE(e.find("one per layer"), std::string::npos) << e;
  o.conv_sub_batches = every_conv_in(g, 0);
  e = test::error_of([&] { Net(bn_chain(), o); });
  EXPECT_NE(e.find(">= 1"), std::string::npos) << e;
  o.conv_sub_batches = {};
  o.conv_workspace_bytes = {1, 2};
  e = test::error_of([&] { Net(bn_chain(), o); });
  EXPECT_NE(e.find("workspace caps: 2 for the 12 layers of 'bn_chain'"), std::string::npos) << e;
}

}  // namespace test_sub_batches
}  // namespace vdnn
