// Inference rewrites (rewrites/inference_rewrites.h): on small graphs with random weights and running
// statistics far from 0 and 1, the evaluation logits of a Net before and after the rewrite agree
// to float noise — max |before - after| <= 1e-4 * max(1, max |logit|) — while the folded batch
// norms and the dropouts are gone from the graph and their tensors from the weights; a batch norm
// that cannot fold stays with a note; an error leaves graph and weights as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "error_of.h"
#include "io/model_file.h"
#include "rewrites/inference_rewrites.h"
#include "runtime/checkpoint.h"

namespace vdnn {
namespace test_inference_rewrites {

constexpr int64_t kBatch = 3;

// Every parameter of `g` under its name and file shape: weights normal with std sqrt(2/fan_in),
// biases and shifts in [-0.2, 0.2], scales in [0.5, 1.5], running means in [-0.3, 0.3], running
// variances in [0.5, 2]; each batch norm's num_batches_tracked, as PyTorch writes it.
SafeTensors random_weights(const Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  const auto uniform = [&](double lo, double hi) {
    return static_cast<float>(std::uniform_real_distribution<double>(lo, hi)(rng));
  };
  SafeTensors f;
  f.path = "random.safetensors";
  for (const Node& node : g.nodes()) {
    const bool bn = node.layer->type() == "batch_norm";
    for (const ParamSpec& p : node.params) {
      std::vector<float> v(static_cast<size_t>(p.elements()));
      const double std_dev = std::sqrt(2.0 / static_cast<double>(p.fan_in));
      for (float& x : v) {
        if (p.name == "weight")
          x = bn ? uniform(0.5, 1.5) : static_cast<float>(std::normal_distribution<double>(0, std_dev)(rng));
        else if (p.name == "bias")
          x = uniform(-0.2, 0.2);
        else if (p.name == "running_mean")
          x = uniform(-0.3, 0.3);
        else
          x = uniform(0.5, 2.0);  // running_var
      }
      f.tensors.push_back({node.layer->name() + "." + p.name, p.file_dims(), v});
    }
    if (bn) f.tensors.push_back({node.layer->name() + ".num_batches_tracked", {}, {}, "I64", {7}});
  }
  return f;
}

std::vector<float> random_images(const Graph& g) {
  std::mt19937 rng(99);
  std::vector<float> x(static_cast<size_t>(kBatch * g.input_shape().elements()));
  for (float& v : x) v = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  return x;
}

// The evaluation logits of `g` with `weights` on `images`.
std::vector<float> eval_logits(Graph g, const SafeTensors& weights, const std::vector<float>& images) {
  Net net(std::move(g), {.batch = kBatch, .seed = 1});
  load_weights(weights, net);
  const std::vector<int32_t> labels(kBatch, 0);
  net.set_batch(images.data(), labels.data(), kBatch);
  net.forward(/*training=*/false);
  return net.logits();
}

// What a test asserts about a rewritten graph: each layer's type, inputs and parameters.
struct LayerInfo {
  std::string name, type;
  std::vector<std::string> inputs, params;
};

struct Outcome {
  InferenceRewrites rewrites;
  std::vector<LayerInfo> layers;
  SafeTensors weights;
  const LayerInfo* layer(const std::string& name) const {
    for (const LayerInfo& l : layers)
      if (l.name == name) return &l;
    return nullptr;
  }
  int count(const std::string& type) const {
    return static_cast<int>(std::count_if(layers.begin(), layers.end(), [&](auto& l) { return l.type == type; }));
  }
};

std::vector<LayerInfo> describe(const Graph& g) {
  std::vector<LayerInfo> out;
  for (const Node& n : g.nodes()) {
    LayerInfo l{n.layer->name(), n.layer->type(), {}, {}};
    for (ValueId in : n.inputs) l.inputs.push_back(g.value(in).name);
    for (const ParamSpec& p : n.params) l.params.push_back(p.name);
    out.push_back(l);
  }
  return out;
}

// Rewrites `model` with random weights (whose weights_sha256 it records first, as vdnn's weight
// files have it) and expects the logits of the rewritten graph and weights to agree with the
// original's.
Outcome rewrite_and_compare(const std::function<Graph()>& model, uint32_t seed = 5) {
  Graph graph = model();
  SafeTensors weights = random_weights(graph, seed);
  {
    Net net(model(), {.batch = kBatch, .seed = 1});
    load_weights(weights, net);
    weights.metadata["weights_sha256"] = net.weights_sha256();
  }
  const std::vector<float> images = random_images(graph);
  const std::vector<float> before = eval_logits(model(), weights, images);
  Outcome o{rewrite_for_inference(graph, weights), describe(graph), {}};
  const std::vector<float> after = eval_logits(std::move(graph), weights, images);
  o.weights = std::move(weights);
  EXPECT_EQ(after.size(), before.size());
  float largest = 0, worst = 0;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    largest = std::max(largest, std::abs(before[i]));
    worst = std::max(worst, std::abs(before[i] - after[i]));
  }
  EXPECT_LE(worst, 1e-4f * std::max(1.0f, largest)) << "largest logit " << largest;
  EXPECT_GT(largest, 0.05f);  // the logits are not all ~0 (that would agree trivially)
  return o;
}

ModelBuilder builder(std::vector<int64_t> input) { return ModelBuilder("rw", std::move(input), 5); }

// Every batch norm folded and every dropout removed, as many as expected.
void expect_all_rewritten(const Outcome& o, int folded, int dropouts) {
  EXPECT_EQ(o.rewrites.batch_norms_folded, folded);
  EXPECT_EQ(o.rewrites.dropouts_removed, dropouts);
  EXPECT_EQ(o.count("batch_norm"), 0);
  EXPECT_EQ(o.count("dropout"), 0);
}

TEST(InferenceRewrites, BatchNormFoldsIntoConvWithAndWithoutBias) {
  const auto model = [] {
    return builder({3, 8, 8})
        .layer("conv", "c1", {{"channels", 6}, {"kernel", 3}, {"pad", 1}, {"bias", false}})
        .layer("batch_norm", "bn1", {{"eps", 1e-3}})
        .layer("relu", "r1")
        .layer("conv", "c2", {{"channels", 4}, {"kernel", 3}, {"groups", 2}})
        .layer("batch_norm", "bn2")
        .layer("relu", "r2")
        .layer("fc", "fc", {{"units", 5}})
        .layer("softmax_cross_entropy", "loss")
        .build();
  };
  const Outcome o = rewrite_and_compare(model);
  expect_all_rewritten(o, 2, 0);
  ASSERT_EQ(o.layers.size(), 6u);
  EXPECT_EQ(o.layer("c1")->params, (std::vector<std::string>{"weight", "bias"}));  // gained a bias
  EXPECT_EQ(o.layer("r1")->inputs, std::vector<std::string>{"c1"});
  EXPECT_EQ(o.layer("r2")->inputs, std::vector<std::string>{"c2"});
  for (const char* gone :
       {"bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked", "bn2.running_var"})
    EXPECT_EQ(o.weights.find(gone), nullptr) << gone;
  ASSERT_NE(o.weights.find("c1.bias"), nullptr);
  EXPECT_EQ(o.weights.find("c1.bias")->shape, std::vector<int64_t>{6});
  EXPECT_EQ(o.weights.find("c2.weight")->shape, (std::vector<int64_t>{4, 3, 3, 3}));  // PyTorch's grouped shape
  EXPECT_EQ(o.weights.metadata.count("weights_sha256"), 0u);
  ASSERT_EQ(o.rewrites.notes.size(), 1u);
  EXPECT_NE(o.rewrites.notes[0].find("weights_sha256"), std::string::npos);
}

TEST(InferenceRewrites, BatchNormFoldsIntoFullyConnected) {
  const auto model = [] {
    return builder({2, 4, 4})
        .layer("fc", "fc1", {{"units", 12}})
        .layer("batch_norm", "bn")
        .layer("relu", "r")
        .layer("fc", "fc2", {{"units", 5}, {"bias", false}})
        .layer("batch_norm", "bn_out")
        .layer("softmax_cross_entropy", "loss")
        .build();
  };
  const Outcome o = rewrite_and_compare(model);
  expect_all_rewritten(o, 2, 0);
  EXPECT_EQ(o.layer("loss")->inputs, std::vector<std::string>{"fc2"});
  EXPECT_EQ(o.layer("fc2")->params, (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(o.weights.find("fc1.weight")->shape, (std::vector<int64_t>{12, 32}));  // the file's shape kept
}

TEST(InferenceRewrites, DropoutsGoAndABatchNormFoldsThroughOne) {
  const auto model = [] {
    return builder({3, 6, 6})
        .layer("dropout", "d0", {{"rate", 0.3}})  // reads the network input
        .layer("conv", "c1", {{"channels", 4}, {"kernel", 3}})
        .layer("dropout", "d1")
        .layer("batch_norm", "bn1")
        .layer("relu", "r1")
        .layer("fc", "fc1", {{"units", 8}})
        .layer("dropout", "d2", {{"rate", 0.5}})
        .layer("dropout", "d3", {{"rate", 0.5}})
        .layer("fc", "fc2", {{"units", 5}})
        .layer("softmax_cross_entropy", "loss")
        .build();
  };
  const Outcome o = rewrite_and_compare(model);
  expect_all_rewritten(o, 1, 4);
  EXPECT_EQ(o.layer("c1")->inputs, std::vector<std::string>{"data"});
  EXPECT_EQ(o.layer("r1")->inputs, std::vector<std::string>{"c1"});
  EXPECT_EQ(o.layer("fc2")->inputs, std::vector<std::string>{"fc1"});
}

TEST(InferenceRewrites, BatchNormsThatCannotFoldStayWithTheReason) {
  const auto model = [] {
    return builder({4, 6, 6})
        .layer("batch_norm", "bn_in")  // first in the net
        .layer("conv", "a", {{"channels", 4}, {"kernel", 3}, {"pad", 1}})
        .layer("conv", "b", {{"channels", 4}, {"kernel", 1}}, {"bn_in"})
        .layer("add", "sum", {}, {"a", "b"})
        .layer("batch_norm", "bn_sum")           // after a join
        .layer("batch_norm", "bn_a", {}, {"a"})  // a is read by sum too
        .layer("concat", "cat", {}, {"bn_sum", "bn_a"})
        .layer("batch_norm", "bn_cat")  // after a join
        .layer("max_pool", "pool", {{"kernel", 2}, {"stride", 2}})
        .layer("batch_norm", "bn_pool")
        .layer("conv", "c", {{"channels", 5}, {"kernel", 3}})
        .layer("batch_norm", "bn_c")  // folds
        .layer("flatten", "flat")
        .layer("softmax_cross_entropy", "loss")
        .build();
  };
  const Outcome o = rewrite_and_compare(model);
  EXPECT_EQ(o.rewrites.batch_norms_folded, 1);
  EXPECT_EQ(o.count("batch_norm"), 5);
  EXPECT_EQ(o.layer("bn_c"), nullptr);
  EXPECT_EQ(o.layer("flat")->inputs, std::vector<std::string>{"c"});
  const std::vector<std::string>& notes = o.rewrites.notes;
  ASSERT_EQ(notes.size(), 6u);  // five batch norms and the hash
  const auto note_of = [&](const std::string& bn) {
    for (const std::string& n : notes)
      if (n.find("batch norm '" + bn + "' stays") != std::string::npos) return n;
    return std::string("(none for " + bn + ")");
  };
  EXPECT_NE(note_of("bn_in").find("network input 'data'"), std::string::npos) << note_of("bn_in");
  EXPECT_NE(note_of("bn_sum").find("add layer 'sum', not a conv or fc"), std::string::npos) << note_of("bn_sum");
  EXPECT_NE(note_of("bn_a").find("also read by 1 other layer"), std::string::npos) << note_of("bn_a");
  EXPECT_NE(note_of("bn_cat").find("concat layer 'cat'"), std::string::npos) << note_of("bn_cat");
  EXPECT_NE(note_of("bn_pool").find("max_pool layer 'pool'"), std::string::npos) << note_of("bn_pool");
  ASSERT_NE(o.weights.find("bn_sum.running_var"), nullptr);  // the weights of those that stay stay
  EXPECT_NE(o.weights.find("bn_sum.num_batches_tracked"), nullptr);
}

TEST(InferenceRewrites, NothingToRewriteChangesNothing) {
  Graph g = builder({1, 4, 4}).layer("fc", "fc", {{"units", 5}}).layer("softmax_cross_entropy", "loss").build();
  SafeTensors w = random_weights(g, 1);
  w.metadata["weights_sha256"] = "kept";
  const InferenceRewrites r = rewrite_for_inference(g, w);
  EXPECT_EQ(r.batch_norms_folded + r.dropouts_removed, 0);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(w.metadata.at("weights_sha256"), "kept");
}

TEST(InferenceRewrites, AnErrorLeavesGraphAndWeightsAsTheyWere) {
  const auto model = [] {
    return builder({2, 4, 4})
        .layer("conv", "c", {{"channels", 3}, {"kernel", 3}})
        .layer("batch_norm", "bn")
        .layer("dropout", "d")
        .layer("fc", "fc", {{"units", 5}})
        .layer("softmax_cross_entropy", "loss")
        .build();
  };
  Graph g = model();
  SafeTensors w = random_weights(g, 2);
  std::erase_if(w.tensors, [](const SafeTensor& t) { return t.name == "bn.running_mean"; });
  const size_t tensors = w.tensors.size();
  test::expect_error([&] { rewrite_for_inference(g, w); },
                     {"random.safetensors", "'bn.running_mean'", "inference rewrite of model 'rw'"});
  EXPECT_EQ(g.nodes().size(), 5u);
  EXPECT_EQ(w.tensors.size(), tensors);

  SafeTensors negative = random_weights(g, 2);
  for (SafeTensor& t : negative.tensors)
    if (t.name == "bn.running_var") t.data[1] = -1;
  test::expect_error([&] { rewrite_for_inference(g, negative); },
                     {"random.safetensors", "'bn.running_var'", "channel 1", "cannot fold"});
  EXPECT_EQ(g.nodes().size(), 5u);
  EXPECT_NE(negative.find("bn.running_var"), nullptr);
}

// A zoo network at a small input: every batch norm of ResNet-18 follows a conv read by it alone.
TEST(InferenceRewrites, ResNet18FoldsEveryBatchNorm) {
  const auto model = [] { return load_model("resnet18", {Shape{3, 32, 32}, 5}); };
  const Outcome o = rewrite_and_compare(model);
  expect_all_rewritten(o, 20, 0);
  EXPECT_EQ(o.layer("layer1_0_add")->inputs, (std::vector<std::string>{"layer1_0_conv2", "maxpool"}));
}

// fmnist_cnn: batch norms and dropout in a shipped model.
TEST(InferenceRewrites, FashionMnistCnnLosesItsDropoutAndBatchNorms) {
  const auto model = [] { return load_model("fmnist_cnn"); };
  const Graph g = model();
  int bns = 0, dropouts = 0;
  for (const Node& n : g.nodes()) {
    bns += n.layer->type() == "batch_norm";
    dropouts += n.layer->type() == "dropout";
  }
  ASSERT_GT(bns, 0);
  ASSERT_GT(dropouts, 0);
  const Outcome o = rewrite_and_compare(model);
  expect_all_rewritten(o, bns, dropouts);
  EXPECT_EQ(o.layers.size(), g.nodes().size() - bns - dropouts);
}

}  // namespace test_inference_rewrites
}  // namespace vdnn
