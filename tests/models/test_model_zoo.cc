// The model zoo (models/*.json): every shipped file loads, and the ImageNet networks have the
// published parameter counts and forward FLOPs. Only graphs are built (shapes, parameter specs,
// FLOPs): no memory and no kernels, so even VGG-416 costs milliseconds here.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "io/model_file.h"

namespace vdnn {
namespace test_model_zoo {

// Trainable parameters: weights, biases, BN weight/bias (not running statistics), as
// torchvision's sum(p.numel() for p in model.parameters()).
struct Published {
  const char* model;
  int64_t params;
};

TEST(ModelZoo, ExactPublishedParameterCounts) {
  const Published table[] = {
      {"vgg16", 138'357'544},   {"vgg19", 143'667'240},    {"resnet18", 11'689'512},  {"resnet34", 21'797'672},
      {"resnet50", 25'557'032}, {"resnet101", 44'549'160}, {"resnet152", 60'192'808},
  };
  for (const auto& [model, params] : table) {
    Graph g = load_model(model);
    EXPECT_EQ(g.parameter_count(), params) << model;
    EXPECT_EQ(g.input_shape(), (Shape{3, 224, 224})) << model;
    EXPECT_EQ(g.classes(), 1000) << model;
  }
}

TEST(ModelZoo, ApproximatePublishedParameterCounts) {
  // AlexNet with the original two-group conv2/4/5: 60,965,224 (Caffe bvlc_alexnet), "61 M".
  Graph alexnet = load_model("alexnet");
  EXPECT_NEAR(static_cast<double>(alexnet.parameter_count()), 61.0e6, 0.01 * 61.0e6);
  EXPECT_EQ(alexnet.input_shape(), (Shape{3, 227, 227}));
  // GoogLeNet without auxiliary classifiers: about 7.0 M (Caffe bvlc_googlenet: 6,998,552).
  Graph googlenet = load_model("googlenet");
  EXPECT_GE(googlenet.parameter_count(), 6'600'000);
  EXPECT_LE(googlenet.parameter_count(), 7'100'000);
  // OverFeat fast: "145 M" in Sermanet et al. 2014, table 2.
  Graph overfeat = load_model("overfeat");
  EXPECT_NEAR(static_cast<double>(overfeat.parameter_count()), 145.9e6, 0.01 * 145.9e6);
  EXPECT_EQ(overfeat.input_shape(), (Shape{3, 231, 231}));
}

TEST(ModelZoo, ForwardFlopsMatchCitedMultiplyAdds) {
  // Commonly cited multiply-adds per 224x224 image (conv + fc); vdnn counts 2 FLOPs per MAC and
  // also counts ReLU, pooling, LRN, BN and add, which stay within a few percent here.
  const struct {
    const char* model;
    double gmac;
  } table[] = {
      {"alexnet", 0.72},  // grouped convolutions, 227x227
      {"vgg16", 15.47},
      {"vgg19", 19.63},
      {"resnet18", 1.82},
      {"resnet34", 3.66},
      {"resnet50", 4.09},
      {"resnet101", 7.80},
      {"resnet152", 11.5},
      {"googlenet", 1.58},  // bvlc_googlenet as built (the paper rounds to
                            // "1.5 billion")
      {"overfeat", 2.81},   // fast model at 231x231 (the paper's table 2: 2.81 G)
  };
  for (const auto& [model, gmac] : table) {
    Graph g = load_model(model);
    const double flops = g.forward_flops_per_sample();
    EXPECT_NEAR(flops, 2e9 * gmac, 0.05 * 2e9 * gmac) << model << ": " << flops / 1e9 << " GFLOP";
  }
}

int64_t count_type(const Graph& g, const std::string& type) {
  return std::count_if(g.nodes().begin(), g.nodes().end(), [&](const Node& n) { return n.layer->type() == type; });
}

TEST(ModelZoo, DeepVggAddsConvolutionsEvenlyAtVgg16Widths) {
  Graph vgg16 = load_model("vgg16");
  EXPECT_EQ(count_type(vgg16, "conv"), 13);
  for (int extra : {100, 200, 300, 400}) {
    const std::string name = "vgg" + std::to_string(16 + extra);
    Graph g = load_model(name);
    EXPECT_EQ(count_type(g, "conv"), 13 + extra) << name;
    EXPECT_EQ(count_type(g, "fc"), 3) << name;
    // Each extra conv keeps its block's channels: (c*c*9 + c) parameters, extra/5 per block.
    int64_t added = 0;
    for (int64_t c : {64, 128, 256, 512, 512}) added += (extra / 5) * (c * c * 9 + c);
    EXPECT_EQ(g.parameter_count(), vgg16.parameter_count() + added) << name;
    EXPECT_EQ(g.value(g.find_value("pool5")).shape, (Shape{512, 7, 7})) << name;
    const std::string last = "conv5_" + std::to_string(3 + extra / 5);
    EXPECT_NE(g.find_value(last), -1) << name << " lacks " << last;
  }
}

TEST(ModelZoo, ResNetShapesAndBlocks) {
  const struct {
    const char* model;
    int adds, convs;
    int64_t features;
  } table[] = {{"resnet18", 8, 20, 512},
               {"resnet34", 16, 36, 512},
               {"resnet50", 16, 53, 2048},
               {"resnet101", 33, 104, 2048},
               {"resnet152", 50, 155, 2048}};
  for (const auto& [model, adds, convs, features] : table) {
    Graph g = load_model(model);
    EXPECT_EQ(count_type(g, "add"), adds) << model;
    EXPECT_EQ(count_type(g, "conv"), convs) << model;  // including the projection shortcuts
    EXPECT_EQ(count_type(g, "batch_norm"), convs) << model;
    EXPECT_EQ(g.value(g.find_value("maxpool")).shape, (Shape{64, 56, 56})) << model;
    EXPECT_EQ(g.value(g.find_value("avgpool")).shape, (Shape{features, 1, 1})) << model;
  }
}

TEST(ModelZoo, GoogLeNetInceptionShapes) {
  Graph g = load_model("googlenet");
  EXPECT_EQ(count_type(g, "concat"), 9);
  EXPECT_EQ(count_type(g, "lrn"), 2);
  EXPECT_EQ(g.value(g.find_value("pool2_3x3_s2")).shape, (Shape{192, 28, 28}));
  EXPECT_EQ(g.value(g.find_value("inc3a_output")).shape, (Shape{256, 28, 28}));
  EXPECT_EQ(g.value(g.find_value("inc3b_output")).shape, (Shape{480, 28, 28}));
  EXPECT_EQ(g.value(g.find_value("inc4e_output")).shape, (Shape{832, 14, 14}));
  EXPECT_EQ(g.value(g.find_value("inc5b_output")).shape, (Shape{1024, 7, 7}));
}

TEST(ModelZoo, EveryShippedModelLoadsWithUniqueNamesAndClassesOverride) {
  const std::vector<std::string> names = model_names();
  for (const char* expected : {"alexnet", "overfeat", "googlenet", "vgg16", "vgg19", "vgg116", "vgg216", "vgg316",
                               "vgg416", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vgg16_cifar"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  for (const std::string& name : names) {
    Graph g = load_model(name);
    std::set<std::string> seen;
    for (const Value& v : g.values()) EXPECT_TRUE(seen.insert(v.name).second) << name << ": " << v.name;
    // "units": "classes" on the classifier, so --classes works.
    Graph h = load_model(name, {.classes = 7});
    EXPECT_EQ(h.classes(), 7) << name;
    const Shape logits = h.token_input() ? Shape{h.input_shape().dims[0], 7} : Shape{7};  // a token model: per token
    EXPECT_EQ(h.value(h.nodes().back().inputs[0]).shape, logits) << name;
  }
}

// The GPTs of models/generate_gpt.py: per block 12 C^2 + 13 C (c_attn 3C^2 + 3C, c_proj C^2 + C,
// c_fc 4C^2 + 4C, mlp.c_proj 4C^2 + C, two layer norms 4C), plus wte V C (lm_head tied to it:
// counted once), wpe T C, ln_f 2C. GPT-2's are the published counts (Hugging Face's
// GPT2LMHeadModel, sum(p.numel() for p in model.parameters())).
int64_t gpt_parameters(int64_t layers, int64_t C, int64_t V, int64_t T) {
  return layers * (12 * C * C + 13 * C) + V * C + T * C + 2 * C;
}

TEST(ModelZoo, GptsHoldTheirPublishedParameterCountsWithTheHeadTied) {
  struct Gpt {
    const char* model;
    int64_t layers, C, V, T, published;
  };
  for (const Gpt& m :
       {Gpt{"gpt_char", 6, 384, 65, 256, 10'770'816}, Gpt{"gpt2", 12, 768, 50257, 1024, 124'439'808},
        Gpt{"gpt2-medium", 24, 1024, 50257, 1024, 354'823'168}, Gpt{"gpt2-large", 36, 1280, 50257, 1024, 774'030'080},
        Gpt{"gpt2-xl", 48, 1600, 50257, 1024, 1'557'611'200}}) {
    SCOPED_TRACE(m.model);
    const Graph g = load_model(m.model);
    EXPECT_TRUE(g.token_input());
    EXPECT_EQ(g.input_shape(), (Shape{m.T}));
    EXPECT_EQ(g.labels_per_sample(), m.T);
    EXPECT_EQ(g.parameter_count(), gpt_parameters(m.layers, m.C, m.V, m.T));
    EXPECT_EQ(g.parameter_count(), m.published);
    int attention = 0;
    for (const Node& n : g.nodes()) attention += n.layer->kind() == LayerKind::kAttention;
    EXPECT_EQ(attention, m.layers);
    EXPECT_EQ(g.nodes()[g.nodes().size() - 2].param_owner, 0) << "lm_head shares the token embedding's weight";
  }
}

TEST(ModelZoo, Vgg16CifarIsVgg16WithBatchNormAt32x32) {
  Graph g = load_model("vgg16_cifar");
  EXPECT_EQ(g.input_shape(), (Shape{3, 32, 32}));
  EXPECT_EQ(count_type(g, "conv"), 13);
  EXPECT_EQ(count_type(g, "batch_norm"), 13);
  EXPECT_EQ(g.value(g.find_value("pool5")).shape, (Shape{512, 1, 1}));
  // 13 bias-free convolutions, 13 BN (weight, bias), fc 512, fc 10.
  EXPECT_EQ(g.parameter_count(), 14'710'464 + 2 * 4'224 + (512 * 512 + 512) + (10 * 512 + 10));
}

}  // namespace test_model_zoo
}  // namespace vdnn
