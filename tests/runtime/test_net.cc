// The Net on whole graphs: gradients of every parameter by finite differences through a DAG
// (concat, add, BN, in-place ReLU, pooling), determinism of training, and a DAG that learns.
#include <gtest/gtest.h>

#include <algorithm>

#include "data/synthetic.h"
#include "io/model_file.h"
#include "runtime/gradient_check.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"
#include "runtime/trainer.h"

namespace vdnn {
namespace test_net {

Graph small_dag() {
  ModelBuilder b("small_dag", {3, 6, 6}, 4);
  b.layer("conv", "stem", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn")
      .layer("relu", "relu")  // in place: bn's backward does not read bn's output
      .layer("conv", "a", {{"channels", 8}, {"kernel", 1}}, {"relu"})
      .layer("conv", "b", {{"channels", 8}, {"kernel", 3}, {"pad", 1}, {"groups", 2}}, {"relu"})
      .layer("concat", "cat", {}, {"a", "b", "relu"})
      .layer("max_pool", "pool", {{"kernel", 2}})
      .layer("conv", "c", {{"channels", 24}, {"kernel", 1}})
      .layer("add", "res", {}, {"c", "pool"})
      .layer("lrn", "lrn", {{"size", 3}, {"k", 2.0}})
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 4}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

// conv -> relu twice (the first may be a relu6): both run in place and are fused into their convolutions.
Graph fused_chain(const std::string& first = "relu") {
  ModelBuilder b("fused_chain", {3, 6, 6}, 4);
  b.layer("conv", "c1", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
      .layer(first, "r1")
      .layer("conv", "c2", {{"channels", 16}, {"kernel", 3}, {"stride", 2}})
      .layer("relu", "r2")
      .layer("fc", "fc", {{"units", 4}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

using test::expect_gradients_match_finite_differences;

TEST(Net, EveryParameterGradientMatchesFiniteDifferences) { expect_gradients_match_finite_differences(small_dag()); }

// A fused ReLU that did not apply, or applied twice or to the wrong buffer, would make the loss
// disagree with the gradients (ReLU's backward reads its output).
TEST(Net, ReluFusedIntoConvolutionKeepsTheGradientsRight) {
  Net net(fused_chain(), {.batch = 2, .seed = 1});
  for (int node : {0, 2}) EXPECT_NE(net.backend().implementation(node).find("+ relu"), std::string::npos) << node;
  for (int node : {1, 3}) EXPECT_NE(net.backend().implementation(node).find("fused"), std::string::npos) << node;
  // Not into a convolution whose output the ReLU does not read (stem -> bn -> relu: into bn).
  Net dag(small_dag(), {.batch = 2, .seed = 1});
  EXPECT_EQ(dag.backend().implementation(0).find("+ relu"), std::string::npos);
  expect_gradients_match_finite_differences(fused_chain());
}

// Issue 24's fusions: bn -> relu (fuse_norm_relu) and add -> relu (a binary add's post-op), as in
// every ResNet block; the loss and the gradients agree, and the program keeps the same tensors.
TEST(Net, ReluFusedIntoBatchNormAndAddKeepsTheGradientsRight) {
  const auto dag = [] { return test::offload_test_dag("fusions", /*with_dropout=*/false); };
  Net net(dag(), {.batch = 2, .seed = 1});
  const Graph& g = net.graph();
  auto node = [&](const std::string& name) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      if (g.nodes()[i].layer->name() == name) return static_cast<int>(i);
    ADD_FAILURE() << "no node " << name;
    return 0;
  };
  for (const char* producer : {"bn", "res"})
    EXPECT_NE(net.backend().implementation(node(producer)).find("+ relu"), std::string::npos)
        << producer << ": " << net.backend().implementation(node(producer));
  for (const char* relu : {"relu", "res_relu"})
    EXPECT_NE(net.backend().implementation(node(relu)).find("fused"), std::string::npos) << relu;
  for (const auto& t : net.train_program().tensors) EXPECT_EQ(t.name.find("relu:out"), std::string::npos) << t.name;
  expect_gradients_match_finite_differences(dag());
}

// An add writes over its first input when nothing else reads it (ResNet's bn3 + shortcut): one
// storage for the two values and one gradient, so its backward copies dy to the other inputs only.
// Where the first input is read elsewhere (a shortcut first), or is every input (x + x), it does not.
TEST(Net, AResidualAddRunsInPlaceOverItsFirstInputOnly) {
  const Graph dag = test::offload_test_dag("in_place_add", /*with_dropout=*/false);
  auto node = [](const Graph& g, const std::string& name) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      if (g.nodes()[i].layer->name() == name) return static_cast<int>(i);
    ADD_FAILURE() << "no node " << name;
    return 0;
  };
  const int res = node(dag, "res"), c = node(dag, "c");  // res = c + pool
  ASSERT_TRUE(dag.runs_in_place(res));
  EXPECT_TRUE(dag.runs_in_place_over(res, dag.nodes()[c].output));
  EXPECT_FALSE(dag.runs_in_place_over(res, dag.nodes()[res].inputs[1]));
  Net net(test::offload_test_dag("in_place_add", false), {.batch = 2, .seed = 1});
  const Program& p = net.train_program();
  for (const auto& t : p.tensors) EXPECT_NE(t.name, "res:out");
  const NodeBinding& b = p.nodes[res];
  EXPECT_EQ(b.out, p.nodes[c].out);
  EXPECT_EQ(b.d_in[0], b.d_out);
  EXPECT_NE(b.d_in[1], b.d_out);

  const auto shortcut_first = [] {
    ModelBuilder m("shortcut_first", {4, 6, 6}, 3);
    m.layer("conv", "stem", {{"channels", 4}, {"kernel", 3}, {"pad", 1}})
        .layer("conv", "branch", {{"channels", 4}, {"kernel", 3}, {"pad", 1}})
        .layer("add", "join", {}, {"stem", "branch"})
        .layer("add", "twice", {}, {"join", "join"})
        .layer("fc", "fc", {{"units", 3}})
        .layer("softmax_cross_entropy", "loss");
    return m.build();
  };
  const Graph g = shortcut_first();
  EXPECT_FALSE(g.runs_in_place(node(g, "join")));   // stem is read by branch too
  EXPECT_FALSE(g.runs_in_place(node(g, "twice")));  // its first input is its second as well
  test::expect_gradients_match_finite_differences(shortcut_first());
}

// A ReLU fused into batch norm has no backward of its own (batch norm's reads the mask), so the
// Program keeps the pair's output only for readers that need it: before max pooling, none, and
// policy `all` frees it in forward. Training under `all` ends on `none`'s weights.
TEST(Net, AReluFusedIntoBatchNormKeepsNoOutputForItsBackward) {
  const auto net_graph = [] {
    ModelBuilder b("bn_relu_pool", {3, 8, 8}, 4);
    b.layer("conv", "stem", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
        .layer("batch_norm", "bn")
        .layer("relu", "relu")
        .layer("max_pool", "pool", {{"kernel", 2}})
        .layer("fc", "fc", {{"units", 4}})
        .layer("softmax_cross_entropy", "loss");
    return b.build();
  };
  Net net(net_graph(), {.batch = 4, .seed = 1, .policy = Policy::kAll});
  const Program& p = net.train_program();
  const int relu = 2;
  ASSERT_EQ(p.node_names[relu], "relu");
  EXPECT_FALSE(p.nodes[relu].backward_reads_out);
  EXPECT_FALSE(p.nodes[relu].backward_reads_in);
  // bn:out (the ReLU writes it in place) is neither offloaded nor kept: freed before the first backward.
  int freed = -1, first_backward = -1;
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const Step& s = p.steps[k];
    const bool bn_out = s.tensor >= 0 && p.tensors[s.tensor].name == "bn:out";
    EXPECT_FALSE(bn_out && s.op == Op::kOffload);
    if (bn_out && s.op == Op::kFree) freed = static_cast<int>(k);
    if (s.op == Op::kBackward && first_backward < 0) first_backward = static_cast<int>(k);
  }
  EXPECT_GE(freed, 0);
  EXPECT_LT(freed, first_backward);
  EXPECT_EQ(test::train_for_hash(net_graph(), {.batch = 4, .seed = 1, .policy = Policy::kAll}, 3),
            test::train_for_hash(net_graph(), {.batch = 4, .seed = 1, .policy = Policy::kNone}, 3));
}

// ReLU6 fused (issue 20's conv+ReLU6): the clip applied once, where the unfused kernel would (the
// gradients would disagree with the loss otherwise), and the same logits as ReLU6 run on its own.
TEST(Net, Relu6FusedIntoConvolutionKeepsTheGradientsAndTheLogits) {
  Net net(fused_chain("relu6"), {.batch = 2, .seed = 1});
  EXPECT_NE(net.backend().implementation(0).find("+ relu6"), std::string::npos) << net.backend().implementation(0);
  EXPECT_NE(net.backend().implementation(1).find("fused"), std::string::npos);
  EXPECT_EQ(net.backend().implementation(2).find("+ relu6"), std::string::npos);
  EXPECT_NE(net.backend().implementation(2).find("+ relu"), std::string::npos);
  expect_gradients_match_finite_differences(fused_chain("relu6"));
  // The clip itself: a 1x1 convolution of weight 1 and an identity fc make the logits the fused
  // output, min(max(x, 0), 6), exactly (a ReLU without its ceiling would pass 9 and 40).
  ModelBuilder b("relu6_values", {1, 3, 3}, 9);
  b.layer("conv", "c", {{"channels", 1}, {"kernel", 1}, {"pad", 0}, {"bias", false}})
      .layer("relu6", "r")
      .layer("fc", "fc", {{"units", "classes"}})
      .layer("softmax_cross_entropy", "loss");
  Net values(b.build(), {.batch = 1, .seed = 1});
  ASSERT_NE(values.backend().implementation(0).find("+ relu6"), std::string::npos);
  std::vector<float> identity(81, 0.0f);
  for (int i = 0; i < 9; ++i) identity[i * 9 + i] = 1.0f;
  for (size_t i = 0; i < values.params().size(); ++i) {
    const std::string& name = values.params()[i].name;
    const size_t n = static_cast<size_t>(values.params()[i].spec.elements());
    values.import_param(i, name == "c.weight"    ? std::vector<float>{1.0f}
                           : name == "fc.weight" ? identity
                                                 : std::vector<float>(n, 0.0f));
  }
  const std::vector<float> x{-2.0f, 0.0f, 0.5f, 3.0f, 5.99f, 6.0f, 9.0f, 40.0f, -0.25f};
  const std::vector<int32_t> label{0};
  values.set_batch(x.data(), label.data(), 1);
  values.forward(false);
  ASSERT_EQ(values.logits().size(), 9u);
  for (size_t i = 0; i < 9; ++i) EXPECT_EQ(values.logits()[i], std::min(std::max(x[i], 0.0f), 6.0f)) << i;
}

TEST(Net, ReluRunsInPlaceOnlyWhenSafe) {
  Net net(small_dag(), {.batch = 2, .seed = 1});
  // stem -> bn -> relu: relu overwrites bn's output buffer, so it has no storage of its own.
  auto has = [&](const std::string& name) {
    for (const auto& t : net.train_program().tensors)
      if (t.name == name) return true;
    return false;
  };
  EXPECT_TRUE(has("bn:out"));
  EXPECT_TRUE(has("stem:out"));
  EXPECT_FALSE(has("relu:out"));
}

TrainResult train_synthetic(Graph g, uint64_t seed, int64_t iterations) {
  Dataset data =
      make_synthetic(96, g.input_shape().channels(), g.input_shape().height(), g.input_shape().width(), g.classes(), 3);
  Net net(std::move(g), {.batch = 16, .seed = seed});
  TrainConfig cfg;
  cfg.iterations = iterations;
  cfg.lr = 0.05;
  cfg.seed = seed;
  Trainer trainer(net, cfg);
  return trainer.run(data, &data);
}

TEST(Net, SameSeedGivesIdenticalWeights) {
  const auto a = train_synthetic(small_dag(), 7, 8);
  const auto b = train_synthetic(small_dag(), 7, 8);
  const auto c = train_synthetic(small_dag(), 8, 8);
  EXPECT_EQ(a.weights_sha256, b.weights_sha256);
  EXPECT_NE(a.weights_sha256, c.weights_sha256);
  EXPECT_EQ(a.weights_sha256.size(), 64u);
}

TEST(Net, DagLearnsSyntheticClasses) {
  const auto r = train_synthetic(small_dag(), 3, 60);
  ASSERT_GE(r.epochs.size(), 2u);
  EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss);
  EXPECT_GT(r.test_accuracy, 0.6) << "4 classes: chance is 0.25";
}

TEST(Net, ShippedDagModelTrainsEndToEnd) {
  const auto r = train_synthetic(load_model("fmnist_dag"), 2, 30);
  EXPECT_EQ(r.iterations, 30);
  EXPECT_LT(r.epochs.back().train_loss, r.epochs.front().train_loss);
}

}  // namespace test_net
}  // namespace vdnn
