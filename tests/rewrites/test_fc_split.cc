// The fc split (rewrites/fc_split.h): on a small MLP and a small CNN ending in fc layers, with random
// weights, the logits of an inference Net before and after the split agree to float rounding —
// max |before - after| <= 1e-6 * max(1, max |logit|) — while every fc over the block size is its
// blocks and a concat under its name, each block's weight and bias the exact rows of the original;
// an fc that fits stays as it is; an error leaves graph and weights as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "error_of.h"
#include "io/model_file.h"
#include "rewrites/fc_split.h"
#include "runtime/checkpoint.h"

namespace vdnn {
namespace test_fc_split {

constexpr int64_t kBatch = 3;

// Every parameter of `g` under its name, in the file's shape (`plain`: in its plain dims): normal
// with std sqrt(2/fan_in), biases in [-0.2, 0.2].
SafeTensors random_weights(const Graph& g, bool plain = false) {
  std::mt19937 rng(11);
  SafeTensors f;
  f.path = "random.safetensors";
  for (const Node& node : g.nodes())
    for (const ParamSpec& p : node.params) {
      std::normal_distribution<double> normal(0, std::sqrt(2.0 / static_cast<double>(p.fan_in)));
      std::uniform_real_distribution<double> uniform(-0.2, 0.2);
      std::vector<float> v(static_cast<size_t>(p.elements()));
      for (float& x : v) x = static_cast<float>(p.name == "bias" ? uniform(rng) : normal(rng));
      f.tensors.push_back({node.layer->name() + "." + p.name, plain ? p.dims : p.file_dims(), v});
    }
  return f;
}

// The logits of an inference Net of `g` with `weights` on fixed random inputs.
std::vector<float> infer_logits(Graph g, const SafeTensors& weights) {
  std::mt19937 rng(99);
  std::vector<float> x(static_cast<size_t>(kBatch * g.input_shape().elements()));
  for (float& v : x) v = static_cast<float>(std::uniform_real_distribution<double>(-1, 1)(rng));
  Net net(std::move(g), {.batch = kBatch, .inference = true});
  load_weights(weights, net);
  const std::vector<int32_t> labels(kBatch, 0);
  net.set_batch(x.data(), labels.data(), kBatch);
  net.forward(/*training=*/false);
  return net.logits();
}

struct LayerInfo {
  std::string name, type;
  std::vector<std::string> inputs;
  bool operator==(const LayerInfo&) const = default;
};

std::vector<LayerInfo> describe(const Graph& g) {
  std::vector<LayerInfo> out;
  for (const Node& n : g.nodes()) {
    out.push_back({n.layer->name(), n.layer->type(), {}});
    for (ValueId in : n.inputs) out.back().inputs.push_back(g.value(in).name);
  }
  return out;
}

const LayerInfo& layer(const std::vector<LayerInfo>& layers, const std::string& name) {
  static const LayerInfo none{"(none)", "", {}};
  for (const LayerInfo& l : layers)
    if (l.name == name) return l;
  return none;
}

// Splits `model()` at `max_block_bytes` and expects the same logits; returns the split graph's
// layers, the weights before and after, and what the split said.
struct Outcome {
  FcSplit split;
  std::vector<LayerInfo> layers;
  SafeTensors before, after;
};

Outcome split_and_compare(const std::function<Graph()>& model, size_t max_block_bytes, bool plain = false) {
  Graph graph = model();
  Outcome o{{}, {}, random_weights(graph, plain), {}};
  o.after = o.before;
  o.after.metadata["weights_sha256"] = weights_sha256(o.before, graph);
  const std::vector<float> before = infer_logits(model(), o.before);
  o.split = split_wide_fc(graph, o.after, max_block_bytes);
  o.layers = describe(graph);
  const std::vector<float> after = infer_logits(std::move(graph), o.after);
  EXPECT_EQ(after.size(), before.size());
  float largest = 0, worst = 0;
  for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
    largest = std::max(largest, std::abs(before[i]));
    worst = std::max(worst, std::abs(before[i] - after[i]));
  }
  EXPECT_LE(worst, 1e-6f * std::max(1.0f, largest)) << "largest logit " << largest;
  EXPECT_GT(largest, 0.05f);  // the logits are not all ~0 (that would agree trivially)
  return o;
}

// Blocks "<layer>_block<j>" hold, in order, the rows of the original's weight and bias, in its shape.
void expect_exact_blocks(const Outcome& o, const std::string& name, const std::vector<int64_t>& units) {
  for (const char* param : {".weight", ".bias"}) {
    const SafeTensor* whole = o.before.find(name + param);
    if (!whole) continue;
    EXPECT_EQ(o.after.find(name + param), nullptr) << name + param << " stays";
    const size_t row = whole->data.size() / static_cast<size_t>(whole->shape[0]);
    size_t first = 0;
    for (size_t j = 0; j < units.size(); ++j) {
      const std::string block = name + "_block" + std::to_string(j) + param;
      const SafeTensor* b = o.after.find(block);
      ASSERT_NE(b, nullptr) << block;
      std::vector<int64_t> shape = whole->shape;
      shape[0] = units[j];
      EXPECT_EQ(b->shape, shape) << block;
      const std::vector<float> rows(whole->data.begin() + first, whole->data.begin() + first + units[j] * row);
      EXPECT_EQ(b->data, rows) << block;
      first += units[j] * row;
    }
    EXPECT_EQ(first, whole->data.size());
    EXPECT_EQ(o.after.find(name + "_block" + std::to_string(units.size()) + param), nullptr);
  }
}

ModelBuilder builder(std::vector<int64_t> input) { return ModelBuilder("split", std::move(input), 5); }

// fc1: 10 units x (20 inputs + bias) x 4 B = 840 B; at 400 B a block holds 4 units: 4 + 3 + 3.
// fc2 (280 B) and fc3 (160 B) fit.
Graph mlp() {
  return builder({20})
      .layer("fc", "fc1", {{"units", 10}})
      .layer("relu", "r1")
      .layer("fc", "fc2", {{"units", 7}, {"bias", false}})
      .layer("relu", "r2")
      .layer("fc", "fc3", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss")
      .build();
}

TEST(FcSplit, MlpLayerSplitsIntoUnequalBlocksWithTheSameLogits) {
  const Outcome o = split_and_compare(mlp, 400);
  EXPECT_EQ(o.split.layers_split, 1);
  EXPECT_EQ(o.split.blocks, 3);
  for (int j = 0; j < 3; ++j)
    EXPECT_EQ(layer(o.layers, "fc1_block" + std::to_string(j)),
              (LayerInfo{"fc1_block" + std::to_string(j), "fc", {"data"}}));
  EXPECT_EQ(layer(o.layers, "fc1"), (LayerInfo{"fc1", "concat", {"fc1_block0", "fc1_block1", "fc1_block2"}}));
  EXPECT_EQ(layer(o.layers, "r1").inputs, std::vector<std::string>{"fc1"});
  EXPECT_EQ(o.layers.size(), 9u);
  expect_exact_blocks(o, "fc1", {4, 3, 3});
  for (const char* kept : {"fc2.weight", "fc3.weight", "fc3.bias"}) {
    ASSERT_NE(o.after.find(kept), nullptr) << kept;
    EXPECT_EQ(o.after.find(kept)->data, o.before.find(kept)->data) << kept;
  }
  EXPECT_EQ(o.after.metadata.count("weights_sha256"), 0u);
  ASSERT_EQ(o.split.notes.size(), 2u);
  EXPECT_NE(o.split.notes[0].find("fc 'fc1' (10 units x 20 inputs"), std::string::npos) << o.split.notes[0];
  EXPECT_NE(o.split.notes[0].find("3 blocks of 3 to 4 units"), std::string::npos) << o.split.notes[0];
  EXPECT_NE(o.split.notes[1].find("weights_sha256"), std::string::npos) << o.split.notes[1];
}

// The blocks sit where the original was in the file, and a checkpoint's momentum of a split
// layer goes (one left for a layer that stays).
TEST(FcSplit, BlocksTakeTheOriginalsPlaceAndItsMomentumGoes) {
  Graph g = mlp();
  SafeTensors w = random_weights(g);
  for (const char* name : {"fc1.weight", "fc1.bias", "fc2.weight"})
    w.tensors.push_back({std::string(name) + ":momentum", w.find(name)->shape, w.find(name)->data});
  const FcSplit s = split_wide_fc(g, w, 400);
  std::vector<std::string> names;
  for (const SafeTensor& t : w.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1_block0.weight", "fc1_block1.weight", "fc1_block2.weight",
                                             "fc1_block0.bias", "fc1_block1.bias", "fc1_block2.bias", "fc2.weight",
                                             "fc3.weight", "fc3.bias", "fc2.weight:momentum"}));
  ASSERT_EQ(s.notes.size(), 2u);
  EXPECT_NE(s.notes[1].find("2 momentum tensors"), std::string::npos) << s.notes[1];
}

// fc6 on a 4x4x4 image: 12 units x 65 x 4 B = 260 B a unit, 2 units a 700 B block: 6 blocks.
// fc7 without bias: 16 units x 12 x 4 B = 48 B a unit, 768 B: 2 blocks of 8. fc8 (340 B) fits.
Graph cnn() {
  return builder({3, 8, 8})
      .layer("conv", "conv1", {{"channels", 4}, {"kernel", 3}, {"pad", 1}})
      .layer("relu", "relu1")
      .layer("max_pool", "pool1", {{"kernel", 2}, {"stride", 2}})
      .layer("fc", "fc6", {{"units", 12}})
      .layer("relu", "relu6")
      .layer("fc", "fc7", {{"units", 16}, {"bias", false}})
      .layer("relu", "relu7")
      .layer("fc", "fc8", {{"units", 5}})
      .layer("softmax_cross_entropy", "loss")
      .build();
}

TEST(FcSplit, CnnFcsOnAnImageAndWithoutBiasSplitWithTheSameLogits) {
  for (bool plain : {false, true}) {
    SCOPED_TRACE(plain ? "weights in plain dims [units, C, H, W]" : "weights in the file's shape [units, C*H*W]");
    const Outcome o = split_and_compare(cnn, 700, plain);
    EXPECT_EQ(o.split.layers_split, 2);
    EXPECT_EQ(o.split.blocks, 8);
    EXPECT_EQ(layer(o.layers, "fc6_block5"), (LayerInfo{"fc6_block5", "fc", {"pool1"}}));
    EXPECT_EQ(layer(o.layers, "fc6").inputs.size(), 6u);
    EXPECT_EQ(layer(o.layers, "fc7"), (LayerInfo{"fc7", "concat", {"fc7_block0", "fc7_block1"}}));
    EXPECT_EQ(layer(o.layers, "fc7_block1").inputs, std::vector<std::string>{"relu6"});
    EXPECT_EQ(layer(o.layers, "fc8"), (LayerInfo{"fc8", "fc", {"relu7"}}));
    expect_exact_blocks(o, "fc6", {2, 2, 2, 2, 2, 2});
    expect_exact_blocks(o, "fc7", {8, 8});
    EXPECT_EQ(o.after.find("fc7_block0.bias"), nullptr);
    EXPECT_EQ(o.after.find("fc6_block0.weight")->shape,
              (plain ? std::vector<int64_t>{2, 4, 4, 4} : std::vector<int64_t>{2, 64}));
  }
}

TEST(FcSplit, LayersThatFitAreLeftAsTheyAre) {
  Graph g = cnn();
  const std::vector<LayerInfo> layers = describe(g);
  SafeTensors w = random_weights(g);
  w.metadata["weights_sha256"] = "kept";
  const SafeTensors before = w;
  const FcSplit s = split_wide_fc(g, w, 12 * 65 * 4);  // fc6 exactly fits
  EXPECT_EQ(s.layers_split + s.blocks, 0);
  EXPECT_TRUE(s.notes.empty());
  EXPECT_EQ(describe(g), layers);
  EXPECT_EQ(w.tensors.size(), before.tensors.size());
  for (size_t i = 0; i < w.tensors.size(); ++i) EXPECT_EQ(w.tensors[i].data, before.tensors[i].data);
  EXPECT_EQ(w.metadata.at("weights_sha256"), "kept");
}

// Each error names what is wrong and leaves graph and weights exactly as they were.
TEST(FcSplit, AnErrorLeavesGraphAndWeightsAsTheyWere) {
  const auto expect_untouched_error = [](Graph g, SafeTensors w, size_t bytes,
                                         std::initializer_list<std::string> fragments) {
    const std::vector<LayerInfo> layers = describe(g);
    const SafeTensors before = w;
    test::expect_error([&] { split_wide_fc(g, w, bytes); }, fragments);
    EXPECT_EQ(describe(g), layers);
    ASSERT_EQ(w.tensors.size(), before.tensors.size());
    for (size_t i = 0; i < w.tensors.size(); ++i) {
      EXPECT_EQ(w.tensors[i].name, before.tensors[i].name);
      EXPECT_EQ(w.tensors[i].shape, before.tensors[i].shape);
      EXPECT_EQ(w.tensors[i].data, before.tensors[i].data);
    }
    EXPECT_EQ(w.metadata, before.metadata);
  };
  const Graph model = cnn();
  SafeTensors w = random_weights(model);
  w.metadata["weights_sha256"] = "kept";

  expect_untouched_error(cnn(), w, 0, {"fc split of model 'split'", "block size above 0"});
  // fc7's weight is misshapen: fc6, checked first and fine, is not split either.
  SafeTensors misshapen = w;
  for (SafeTensor& t : misshapen.tensors)
    if (t.name == "fc7.weight") t.shape = {16, 13};
  expect_untouched_error(cnn(), misshapen, 700,
                         {"random.safetensors", "'fc7.weight'", "[16, 13]", "needs shape [16, 12]",
                          "fc split of model 'split' (fc layer 'fc7')"});
  SafeTensors missing = w;
  std::erase_if(missing.tensors, [](const SafeTensor& t) { return t.name == "fc6.bias"; });
  expect_untouched_error(cnn(), missing, 700, {"random.safetensors", "'fc6.bias'", "missing", "fc layer 'fc6'"});
  expect_untouched_error(cnn(), w, 200, {"fc layer 'fc6'", "at most 200 bytes", "64 weights and bias alone take 260"});

  Graph wide = builder({1})
                   .layer("fc", "wide", {{"units", 70}, {"bias", false}})
                   .layer("fc", "out", {{"units", 5}})
                   .layer("softmax_cross_entropy", "loss")
                   .build();
  SafeTensors wide_weights = random_weights(wide);
  expect_untouched_error(std::move(wide), std::move(wide_weights), 4,
                         {"fc layer 'wide'", "70 blocks", "64 inputs a concat takes"});

  const auto taken = [] {
    return builder({20})
        .layer("fc", "fc1", {{"units", 10}})
        .layer("relu", "fc1_block1")
        .layer("fc", "fc3", {{"units", 5}})
        .layer("softmax_cross_entropy", "loss")
        .build();
  };
  expect_untouched_error(taken(), random_weights(taken()), 400, {"fc layer 'fc1'", "'fc1_block1' is taken"});
  SafeTensors stale = random_weights(mlp());
  stale.tensors.push_back({"fc1_block2.bias", {3}, {1, 2, 3}});
  expect_untouched_error(mlp(), stale, 400, {"random.safetensors already hold a tensor 'fc1_block2.bias'"});
}

TEST(FcSplit, APlansGraphIsCutAsTheWeightsGraphIsAndTheRuleIsTheModels) {
  Graph plan = load_model("vgg16");
  size_t weights = 0;
  for (const Node& n : plan.nodes())
    for (const ParamSpec& p : n.params) weights += static_cast<size_t>(p.elements()) * sizeof(float);
  EXPECT_EQ(streaming_block_bytes(plan), weights / 8);  // 66 MiB of VGG-16's 528
  const FcSplit s = split_wide_fc(plan, streaming_block_bytes(plan));
  // fc6 (392 MiB) alone is wider: 6 blocks; fc7 (64 MiB) and fc8 fit.
  EXPECT_EQ(s.layers_split, 1);
  EXPECT_EQ(s.blocks, 6);
  ASSERT_GE(plan.find_value("fc6_block5"), 0);
  EXPECT_LT(plan.find_value("fc6_block6"), 0);
  const Value& fc6 = plan.value(plan.find_value("fc6"));
  EXPECT_EQ(plan.nodes()[fc6.producer].layer->type(), "concat");
  EXPECT_EQ(fc6.shape.elements(), 4096);
  EXPECT_NE(test::error_of([&] { split_wide_fc(plan, 0); }).find("block size above 0 bytes"), std::string::npos);
}

TEST(FcSplit, AHeadOfAFewUnitsHoldingMostWeightsIsNeverRefusedByTheStreamingRule) {
  // One fc of 3 units over 4x32x32 inputs: 3 units of 16 KiB, all the weights. An eighth of them
  // is less than one unit; the rule takes one unit instead, so the cut works (3 blocks of 1 unit).
  ModelBuilder b("wide_head", {4, 32, 32}, 3);
  b.layer("fc", "head", {{"units", "classes"}}).layer("softmax_cross_entropy", "loss");
  Graph g = b.build();
  EXPECT_EQ(streaming_block_bytes(g), (4u * 32 * 32 + 1) * sizeof(float));
  const FcSplit s = split_wide_fc(g, streaming_block_bytes(g));
  EXPECT_EQ(s.blocks, 3);
}

}  // namespace test_fc_split
}  // namespace vdnn
