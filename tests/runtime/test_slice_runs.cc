// Slice runs (rewrites/slice_runs.h, NetOptions::slice_runs): a run of layers computed in k slices of the
// batch, each slice's maps values of their own. Training agrees with the whole batch (the weight
// gradients' summation order differs: float rounding only), is bit-identical from run to run and
// under every offload policy, trains below the largest layer's input plus output, and bad runs are
// refused naming the run and the layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "error_of.h"
#include "io/model_file.h"
#include "layers/batch_norm_slices.h"
#include "rewrites/slice_runs.h"
#include "runtime/train_for_hash.h"

namespace vdnn {
namespace test_slice_runs {

// VGG-like: two convolutions at full resolution, then a batch norm and a dropout outside any run
// (slicing moves the dropout's node index, not its masks).
Graph chain() {
  ModelBuilder b("chain", {3, 16, 16}, 10);
  b.layer("conv", "conv1", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu1")
      .layer("conv", "conv2", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu2")
      .layer("max_pool", "pool1", {{"kernel", 2}})
      .layer("conv", "conv3", {{"channels", 32}, {"kernel", 3}, {"pad", 1}})
      .layer("batch_norm", "bn3")
      .layer("relu", "relu3")
      .layer("dropout", "drop", {{"rate", 0.25}})
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 10}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

// A DAG with two runs: one from the input, one inside (its input a layer's output, so the slices'
// gradients fill that value's gradient), between a concat, a residual add and an LRN.
Graph dag() {
  ModelBuilder b("dag", {3, 12, 12}, 5);
  b.layer("conv", "stem", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "stem_relu")
      .layer("lrn", "lrn", {{"size", 3}})
      .layer("conv", "a", {{"channels", 8}, {"kernel", 1}}, {"lrn"})
      .layer("conv", "b", {{"channels", 8}, {"kernel", 3}, {"pad", 1}}, {"lrn"})
      .layer("concat", "cat", {}, {"a", "b"})
      .layer("batch_norm", "bn")
      .layer("relu", "bn_relu")
      .layer("conv", "c", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "c_relu")
      .layer("max_pool", "pool", {{"kernel", 2}})
      .layer("conv", "d", {{"channels", 16}, {"kernel", 3}, {"pad", 1}})
      .layer("add", "res", {}, {"d", "pool"})
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("flatten", "flat")
      .layer("fc", "fc", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

// ResNet-like: a stem (conv, batch norm, relu, pool) and a block with two batch norms.
Graph resnet_like() {
  ModelBuilder b("resnet_like", {3, 16, 16}, 10);
  b.layer("conv", "conv1", {{"channels", 16}, {"kernel", 3}, {"pad", 1}, {"bias", false}})
      .layer("batch_norm", "bn1")
      .layer("relu", "relu1")
      .layer("max_pool", "pool1", {{"kernel", 2}})
      .layer("conv", "conv_a", {{"channels", 16}, {"kernel", 3}, {"pad", 1}, {"bias", false}})
      .layer("batch_norm", "bn_a")
      .layer("relu", "relu_a")
      .layer("conv", "conv_b", {{"channels", 16}, {"kernel", 3}, {"pad", 1}, {"bias", false}})
      .layer("batch_norm", "bn_b")
      .layer("add", "res", {}, {"bn_b", "pool1"})
      .layer("relu", "relu_res")
      .layer("avg_pool", "gap", {{"global", true}})
      .layer("fc", "fc", {{"units", 10}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

using test::Trained;

Trained train(Graph g, const NetOptions& o, int steps) { return test::train_and_export(std::move(g), o, steps); }

TEST(SliceRuns, TheSlicedGraphSharesEachLayersParametersAmongItsSlices) {
  const Graph g = chain();
  const SlicedGraph s = slice_runs(g, 16, {parse_slice_run("conv1:pool1:4")});
  // 4 x (slice + 5 layers) + gather, and the 7 layers after the run.
  ASSERT_EQ(s.graph.nodes().size(), 4u * 6 + 1 + 7);
  EXPECT_EQ(s.graph.parameter_count(), g.parameter_count());
  const Node& owner = s.graph.nodes()[s.node_of[0]];
  EXPECT_EQ(owner.layer->name(), "conv1/s0");
  EXPECT_EQ(owner.slices, 4);
  EXPECT_EQ(owner.param_owner, -1);
  EXPECT_EQ(&owner.layer->original(), g.nodes()[0].layer.get());
  int shared = 0;
  for (const Node& n : s.graph.nodes())
    if (n.param_owner == s.node_of[0]) {
      ++shared;
      EXPECT_EQ(n.layer->type(), "conv");
    }
  EXPECT_EQ(shared, 3);
  EXPECT_EQ(s.graph.nodes()[s.node_of[5]].layer->name(), "conv3");  // after the run: itself
  EXPECT_EQ(s.graph.value(s.graph.nodes()[s.node_of[5]].inputs[0]).name, "pool1/gather");
}

TEST(SliceRuns, ABatchNormInARunTakesItsStatisticsInAPassOfItsOwn) {
  const Graph g = resnet_like();
  const SlicedGraph s = slice_runs(g, 16, {parse_slice_run("conv1:pool1:2")});
  std::vector<std::string> names;
  for (const Node& n : s.graph.nodes()) names.push_back(n.layer->name());
  // The statistics pass (each slice's convolution made for it), then the run's own pass.
  const std::vector<std::string> head = {"data/s0",          "conv1/s0/for_bn1", "bn1/stats/s0", "data/s1",
                                         "conv1/s1/for_bn1", "bn1/stats/s1",     "bn1/stats",    "conv1/s0",
                                         "bn1/s0",           "relu1/s0",         "pool1/s0",     "conv1/s1",
                                         "bn1/s1",           "relu1/s1",         "pool1/s1",     "pool1/gather"};
  ASSERT_GE(names.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + head.size()), head);
  // conv1's four nodes share the first one's parameters; bn1's two bn_apply nodes the first's,
  // and exactly one of them updates the running averages.
  EXPECT_EQ(s.graph.nodes()[s.node_of[0]].layer->name(), "conv1/s0/for_bn1");
  EXPECT_EQ(s.graph.nodes()[s.node_of[1]].layer->name(), "bn1/s0");
  EXPECT_EQ(s.graph.parameter_count(false), g.parameter_count(false));
  int updating = 0, sharing = 0;
  for (const Node& n : s.graph.nodes()) {
    if (n.layer->type() == "bn_apply") updating += static_cast<const BnApplyLayer&>(*n.layer).updates_running();
    sharing += n.param_owner == s.node_of[0];
  }
  EXPECT_EQ(updating, 1);
  EXPECT_EQ(sharing, 3);
}

TEST(SliceRuns, TrainingAgreesWithTheWholeBatchOnAChainWithBatchNormAndOnADag) {
  const std::vector<std::pair<Graph (*)(), std::vector<std::string>>> cases = {
      {+[] { return chain(); }, {"conv1:pool1:4"}},
      {+[] { return dag(); }, {"stem:stem_relu:4", "c:pool:2"}},
  };
  for (const auto& [make, runs] : cases) {
    NetOptions whole{.batch = 16, .seed = 3};
    NetOptions sliced = whole;
    for (const std::string& r : runs) sliced.slice_runs.push_back(parse_slice_run(r));
    const Trained a = train(make(), whole, 10), b = train(make(), sliced, 10);
    ASSERT_EQ(a.losses.size(), 10u);
    ASSERT_EQ(b.losses.size(), 10u);
    ASSERT_EQ(a.weights.size(), b.weights.size());
    const test::Agreement d = test::agreement(a, b);
    const double loss_rel = d.loss_relative, weight_abs = d.weight_absolute;
    std::printf("%s, runs %s..., 10 steps: loss %.3g relative, weights %.3g absolute\n", make().name().c_str(),
                runs[0].c_str(), loss_rel, weight_abs);
    EXPECT_LE(loss_rel, 1e-6) << runs[0];
    EXPECT_LE(weight_abs, 1e-5) << runs[0];
    EXPECT_GT(loss_rel + weight_abs, 0.0) << "summation order changed nothing: are the slices run at all?";
  }
}

// A batch norm of the input itself, first in its run.
Graph normalized_input() {
  ModelBuilder b("normalized_input", {3, 8, 8}, 4);
  b.layer("batch_norm", "bn0")
      .layer("conv", "conv", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu")
      .layer("max_pool", "pool", {{"kernel", 2}})
      .layer("flatten", "flat")
      .layer("fc", "fc", {{"units", 4}})
      .layer("softmax_cross_entropy", "loss");
  return b.build();
}

TEST(SliceRuns, TrainingAgreesWithTheWholeBatchWhenRunsHoldBatchNorms) {
  const std::vector<std::pair<Graph (*)(), std::vector<std::string>>> cases = {
      {+[] { return resnet_like(); }, {"conv1:pool1:4"}},             // a batch norm after a convolution
      {+[] { return resnet_like(); }, {"bn_a:bn_b:2"}},               // two, the first at the run's input
      {+[] { return chain(); }, {"conv1:pool1:2", "conv3:relu3:4"}},  // and a run of conv, batch norm, relu
  };
  for (const auto& [make, runs] : cases) {
    NetOptions whole{.batch = 16, .seed = 3};
    NetOptions sliced = whole;
    for (const std::string& r : runs) sliced.slice_runs.push_back(parse_slice_run(r));
    const Trained a = train(make(), whole, 10), b = train(make(), sliced, 10);
    ASSERT_EQ(a.losses.size(), 10u);
    const test::Agreement d = test::agreement(a, b);
    std::printf("%s, runs %s..., 10 steps: loss %.3g relative, weights %.3g absolute\n", make().name().c_str(),
                runs.back().c_str(), d.loss_relative, d.weight_absolute);
    EXPECT_LE(d.loss_relative, 1e-6) << runs.back();
    EXPECT_LE(d.weight_absolute, 1e-5) << runs.back();
  }
}

TEST(SliceRuns, ABatchNormOfTheDataAgreesWithTheWholeBatch) {
  // No data gradient: bn_stats' backward does nothing, bn_apply's data gradient goes to scratch.
  // Rounding in the slices' statistics compounds over steps more here than in the cases above
  // (8.3e-7 relative loss after 10 steps on this machine, near the bound), so 3 steps are checked.
  NetOptions whole{.batch = 16, .seed = 3}, sliced = whole;
  sliced.slice_runs = {parse_slice_run("bn0:pool:4")};
  const test::Agreement d = test::agreement(train(normalized_input(), whole, 3), train(normalized_input(), sliced, 3));
  std::printf("normalized_input, bn0:pool:4, 3 steps: loss %.3g relative, weights %.3g absolute\n", d.loss_relative,
              d.weight_absolute);
  EXPECT_LE(d.loss_relative, 1e-6);
  EXPECT_LE(d.weight_absolute, 1e-5);
}

TEST(SliceRuns, EvaluationOfAPartialBatchAgreesWhenTheLogitsAreAGatheredSlice) {
  // A run holding relu6, lrn, avg_pool, flatten and fc whose last layer makes the logits (the loss
  // reads the gather), evaluated on 13 valid samples of a batch of 16.
  const auto tail = [] {
    ModelBuilder b("tail", {3, 8, 8}, 4);
    b.layer("conv", "conv", {{"channels", 8}, {"kernel", 3}, {"pad", 1}})
        .layer("batch_norm", "bn")
        .layer("relu6", "act")
        .layer("lrn", "lrn", {{"size", 3}})
        .layer("avg_pool", "pool", {{"kernel", 2}})
        .layer("flatten", "flat")
        .layer("fc", "fc", {{"units", 4}})
        .layer("softmax_cross_entropy", "loss");
    return b.build();
  };
  const Dataset data = make_synthetic(16, 3, 8, 8, 4, 5);
  NetOptions whole{.batch = 16, .seed = 2}, sliced = whole;
  sliced.slice_runs = {parse_slice_run("act:fc:4")};
  Net a(tail(), whole), b(tail(), sliced);
  float loss[2];
  int i = 0;
  for (Net* n : {&a, &b}) {
    n->set_batch(data.images.data(), data.labels.data(), 13);
    loss[i++] = n->forward(/*training=*/false);
  }
  ASSERT_EQ(a.logits().size(), 13u * 4);
  ASSERT_EQ(b.logits().size(), a.logits().size());
  for (size_t k = 0; k < a.logits().size(); ++k) EXPECT_NEAR(a.logits()[k], b.logits()[k], 1e-5) << k;
  EXPECT_NEAR(loss[0], loss[1], 1e-6 * std::abs(loss[0]));
  EXPECT_EQ(b.compute_graph().value(b.compute_graph().nodes().back().inputs[0]).name, "fc/gather");
  // Training through it agrees too (relu6's and lrn's backward on slices).
  const test::Agreement d = test::agreement(train(tail(), whole, 6), train(tail(), sliced, 6));
  EXPECT_LE(d.loss_relative, 1e-6);
  EXPECT_LE(d.weight_absolute, 1e-5);
}

TEST(SliceRuns, BitIdenticalFromRunToRunAndUnderEveryPolicy) {
  const std::vector<std::pair<Graph (*)(), std::vector<std::string>>> cases = {
      {+[] { return dag(); }, {"stem:stem_relu:4", "c:pool:2"}},
      {+[] { return resnet_like(); }, {"conv1:pool1:4", "bn_a:bn_b:2"}},  // batch norms in runs
  };
  for (const auto& [make, runs] : cases) {
    NetOptions o{.batch = 16, .seed = 5};
    for (const std::string& r : runs) o.slice_runs.push_back(parse_slice_run(r));
    const std::string first = test::train_for_hash(make(), o, 4);
    EXPECT_EQ(test::train_for_hash(make(), o, 4), first) << runs[0];
    for (Policy p : {Policy::kAll, Policy::kConv}) {
      o.policy = p;
      EXPECT_EQ(test::train_for_hash(make(), o, 4), first) << to_string(p) << ", " << runs[0];
    }
  }
}

// The floor of every policy without slices (issue 21): the largest layer's input plus output at
// the whole batch, plus parameters, their gradients and momentum. Checks that `runs` make the
// smallest budget of `model` under `all` fall below it, and trains a step there (`direct`: every
// convolution on oneDNN's direct algorithm, the one with the least workspace).
void trains_below_the_floor(const std::string& model, const ModelOptions& mo, int64_t batch,
                            const std::vector<std::string>& runs, bool direct = false) {
  Net whole(load_model(model, mo), {.batch = batch, .policy = Policy::kAll});
  const std::vector<size_t> bytes = whole.backend().value_bytes();
  size_t largest = 0, persistent = 0;
  for (const Node& n : whole.graph().nodes()) largest = std::max(largest, bytes[n.inputs[0]] + bytes[n.output]);
  for (const ProgramTensor& t : whole.train_program().tensors) persistent += t.persistent ? t.bytes : 0;
  NetOptions o{.batch = batch, .policy = Policy::kAll};
  for (const std::string& r : runs) o.slice_runs.push_back(parse_slice_run(r));
  if (direct)
    o.conv_algos.assign(slice_runs(load_model(model, mo), batch, o.slice_runs).graph.nodes().size(), ConvAlgo::kDirect);
  const Net sliced(load_model(model, mo), o);
  const size_t smallest = minimum_budget(sliced.train_program(), sliced.eval_program());
  std::printf(
      "%s b%lld, all: largest layer's input + output %zu + parameters, gradients, momentum %zu = %zu "
      "bytes; smallest budget %zu whole, %zu sliced\n",
      model.c_str(), static_cast<long long>(batch), largest, persistent, largest + persistent,
      minimum_budget(whole.train_program(), whole.eval_program()), smallest);
  ASSERT_LT(smallest, largest + persistent);
  o.device_memory = smallest;
  const Trained t = train(load_model(model, mo), o, 1);
  EXPECT_TRUE(std::isfinite(t.losses.back()));
  EXPECT_LE(t.peak, smallest);
}

TEST(SliceRuns, TrainsBelowTheLargestLayersInputPlusOutputPlusTheParameters) {
  // vgg_cifar at batch 128: conv1_2 reads and writes 128 x 64 x 32 x 32 floats (32 MiB each); with
  // its block in 8 slices and the next in 4, under `all` the device never holds both.
  trains_below_the_floor("vgg_cifar", {}, 128, {"conv1_1:pool1:8", "conv2_1:pool2:4", "conv3_1:pool3:4"});
}

TEST(SliceRuns, AResNetTrainsBelowItsLargestLayerWithItsStemsBatchNormInARun) {
  // resnet18 at 3x64x64, batch 256: bn1 reads and writes 256 x 64 x 32 x 32 floats (64 MiB each);
  // the stem (conv1, bn1, relu, maxpool) in 8 slices never holds a whole one. (The default
  // algorithms' 44 MiB workspace of a layer3 convolution would then be what limits on AVX-512; on
  // AVX2 oneDNN's direct backward of a layer4 convolution takes 72 MiB at any batch, which with the
  // 128 MiB of parameters, gradients and momentum is above batch 128's floor, 192 MiB.)
  trains_below_the_floor("resnet18", {.input = Shape{3, 64, 64}, .classes = 10}, 256, {"conv1:maxpool:8"}, true);
}

TEST(SliceRuns, DecisionsOnTheSlicedGraphsValuesTrainBitIdenticalToNone) {
  // What vdnn train --policy auto --slice-run hands the Net: decisions per value of the sliced
  // graph. Recompute one slice's conv output, offload another's.
  NetOptions o{.batch = 16, .seed = 7};
  o.slice_runs = {parse_slice_run("conv1:pool1:4")};
  const Graph g = chain();
  const SlicedGraph s = slice_runs(g, 16, o.slice_runs);
  const std::string none = test::train_for_hash(chain(), o, 4);
  o.decisions.values.assign(s.graph.values().size(), {});
  o.decisions.values.at(s.graph.find_value("conv2/s1")) = {StorageAction::kRecompute};
  o.decisions.values.at(s.graph.find_value("conv1/s2")) = {StorageAction::kOffload};
  Net net(chain(), o);
  auto tensor = [&](const std::string& name) -> const ProgramTensor& {
    for (const ProgramTensor& t : net.train_program().tensors)
      if (t.name == name) return t;
    throw std::runtime_error("no tensor " + name);
  };
  EXPECT_TRUE(tensor("conv2/s1:out").recomputed);
  EXPECT_TRUE(tensor("conv1/s2:out").offloaded);
  EXPECT_FALSE(tensor("conv1/s1:out").offloaded || tensor("conv1/s1:out").recomputed);
  EXPECT_EQ(test::train_for_hash(chain(), o, 4), none);
}

TEST(SliceRuns, DecisionsOnABatchNormsSlicesTrainBitIdenticalToNone) {
  // Recompute a normalized slice (bn_apply, its ReLU in place), the statistics and a statistics-pass
  // convolution's output; offload a slice's statistics and another normalized slice.
  NetOptions o{.batch = 16, .seed = 7};
  o.slice_runs = {parse_slice_run("conv1:pool1:4"), parse_slice_run("bn_a:bn_b:2")};
  const SlicedGraph s = slice_runs(resnet_like(), 16, o.slice_runs);
  const std::string none = test::train_for_hash(resnet_like(), o, 4);
  o.decisions.values.assign(s.graph.values().size(), {});
  auto decide = [&](const std::string& value, StorageAction a) {
    ASSERT_GE(s.graph.find_value(value), 0) << value;
    o.decisions.values.at(s.graph.find_value(value)) = {a};
  };
  decide("bn1/s1", StorageAction::kRecompute);
  decide("bn1/stats", StorageAction::kRecompute);
  decide("conv1/s2/for_bn1", StorageAction::kRecompute);
  decide("bn_a/s0/for_bn_b", StorageAction::kRecompute);  // bn_a's slice, made for bn_b's statistics
  decide("bn1/stats/s3", StorageAction::kOffload);
  decide("bn_b/s1", StorageAction::kOffload);
  const Net net(resnet_like(), o);
  EXPECT_GT(net.train_program().recomputed_bytes(), 0u);
  EXPECT_GT(net.train_program().offloaded_bytes(), 0u);
  EXPECT_EQ(test::train_for_hash(resnet_like(), o, 4), none);
}

TEST(SliceRuns, BadRunsAreRefusedNamingTheRunAndTheLayer) {
  const auto refusal = [](std::vector<std::string> runs, int64_t batch = 16, Graph g = chain()) {
    NetOptions o{.batch = batch};
    return test::error_of([&] {
      for (const std::string& r : runs) o.slice_runs.push_back(parse_slice_run(r));
      Net(std::move(g), o);
    });
  };
  auto has = [](const std::string& e, const std::string& what) { return e.find(what) != std::string::npos; };
  std::string e = refusal({"conv3:drop:2"});
  EXPECT_TRUE(has(e, "layer 'drop'") && has(e, "dropout draws its mask per batch")) << e;
  e = refusal({"conv1:pool1:3"});
  EXPECT_TRUE(has(e, "slice run 'conv1:pool1:3'") && has(e, "dividing the batch of 16")) << e;
  e = refusal({"conv1:relu2:2", "relu2:pool1:2"});
  EXPECT_TRUE(has(e, "slice runs 'conv1:relu2:2' and 'relu2:pool1:2' overlap at layer 'relu2'")) << e;
  e = refusal({"conv1:nope:2"});
  EXPECT_TRUE(has(e, "has no layer 'nope'")) << e;
  e = refusal({"pool1:conv1:2"});
  EXPECT_TRUE(has(e, "comes after")) << e;
  e = refusal({"conv1:pool1"});
  EXPECT_TRUE(has(e, "expected FIRST:LAST:K or LAYER:K")) << e;
  e = refusal({"conv1:pool1:x"});
  EXPECT_TRUE(has(e, "expected FIRST:LAST:K")) << e;
  e = refusal({"a:2"}, 16, dag());
  EXPECT_TRUE(has(e, "its input 'lrn' is read by other layers too")) << e;
  e = refusal({"lrn:a:2"}, 16, dag());
  EXPECT_TRUE(has(e, "layer 'lrn'") && has(e, "read outside the run")) << e;
  NetOptions o{.batch = 16, .inference = true};
  o.slice_runs = {parse_slice_run("conv1:2")};
  e = test::error_of([&] { Net(chain(), o); });
  EXPECT_TRUE(has(e, "do not combine with an inference Net")) << e;
  o.inference = false;
  o.backend = BackendKind::kCuda;  // refused before any backend is made: no GPU needed
  e = test::error_of([&] { Net(chain(), o); });
  EXPECT_TRUE(has(e, "--backend cuda")) << e;
  o.backend = BackendKind::kCpu;
  o.conv_sub_batches.assign(slice_runs(chain(), 16, o.slice_runs).graph.nodes().size(), 1);
  o.conv_sub_batches[1] = 16;  // conv1/s0 runs 8 samples
  e = test::error_of([&] { Net(chain(), o); });
  EXPECT_TRUE(has(e, "layer 'conv1/s0'") && has(e, "16 sub-batches do not divide the batch of 8")) << e;
  o.conv_sub_batches.clear();
  o.conv_algos.assign(chain().nodes().size(), ConvAlgo::kDirect);  // the graph's count, not the sliced one's
  e = test::error_of([&] { Net(chain(), o); });
  EXPECT_TRUE(has(e, "convolution algorithms:") && has(e, "one per layer of the graph the Net runs")) << e;
}

}  // namespace test_slice_runs
}  // namespace vdnn
