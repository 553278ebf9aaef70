// Model files and the builder: valid graphs, shape inference, and one clear error per mistake.
#include <gtest/gtest.h>

#include "io/model_file.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_model_file {

using nlohmann::json;

json tiny_model() {
  return json::parse(R"({"name": "tiny", "input": [3, 8, 8], "classes": 4, "layers": [
      {"name": "c1", "type": "conv", "channels": 8, "kernel": 3, "pad": 1},
      {"name": "r1", "type": "relu"},
      {"name": "p1", "type": "max_pool", "kernel": 2},
      {"name": "fc", "type": "fc", "units": "classes"},
      {"name": "loss", "type": "softmax_cross_entropy"}]})");
}

// Expects parse_model to throw a vdnn::Error whose message contains every fragment.
void expect_error(const json& model, std::initializer_list<std::string> fragments) {
  try {
    parse_model(model, "m.json");
    ADD_FAILURE() << "no error for " << model.dump();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << "one line: " << what;
    for (const auto& f : fragments) EXPECT_NE(what.find(f), std::string::npos) << f << " not in: " << what;
  }
}

TEST(ModelFile, InfersShapesParametersAndFlops) {
  Graph g = parse_model(tiny_model(), "m.json");
  ASSERT_EQ(g.nodes().size(), 5u);
  EXPECT_EQ(g.value(g.find_value("c1")).shape, (Shape{8, 8, 8}));
  EXPECT_EQ(g.value(g.find_value("p1")).shape, (Shape{8, 4, 4}));
  EXPECT_EQ(g.value(g.find_value("fc")).shape, (Shape{4}));
  EXPECT_EQ(g.parameter_count(), 8 * 3 * 9 + 8 + 4 * 128 + 4);
  const double conv_flops = 2.0 * 8 * 8 * 8 * 3 * 9;
  EXPECT_GE(g.forward_flops_per_sample(), conv_flops + 2.0 * 128 * 4);
  EXPECT_EQ(g.nodes()[0].layer->kind(), LayerKind::kConv);
  EXPECT_TRUE(g.nodes()[0].layer->backward_reads_input());
  EXPECT_TRUE(g.nodes()[1].layer->can_run_in_place());
  EXPECT_FALSE(g.nodes()[2].layer->backward_reads_input());  // max pool keeps indices only
}

TEST(ModelFile, OptionsOverrideInputAndClasses) {
  Graph g = parse_model(tiny_model(), "m.json", {Shape{3, 16, 16}, 7});
  EXPECT_EQ(g.value(g.find_value("p1")).shape, (Shape{8, 8, 8}));
  EXPECT_EQ(g.classes(), 7);
  EXPECT_EQ(g.value(g.find_value("fc")).shape, (Shape{7}));
}

TEST(ModelFile, DagWithConcatAndAdd) {
  ModelBuilder b("dag", {4, 6, 6}, 3);
  b.layer("conv", "a", {{"channels", 4}, {"kernel", 1}}, {"data"})
      .layer("conv", "b", {{"channels", 2}, {"kernel", 3}, {"pad", 1}}, {"data"})
      .layer("concat", "cat", {}, {"a", "b"})
      .layer("conv", "c", {{"channels", 4}, {"kernel", 1}})
      .layer("add", "sum", {}, {"c", "a"})
      .layer("fc", "fc", {{"units", 3}})
      .layer("softmax_cross_entropy", "loss");
  Graph g = b.build();
  EXPECT_EQ(g.value(g.find_value("cat")).shape, (Shape{6, 6, 6}));
  EXPECT_EQ(g.value(g.find_value("a")).consumers.size(), 2u);
  EXPECT_EQ(g.value(0).consumers.size(), 2u);
}

TEST(ModelFile, EveryMistakeGetsANamedError) {
  auto with = [](auto edit) {
    json m = tiny_model();
    edit(m);
    return m;
  };
  expect_error(with([](json& m) { m["layers"][0]["kernel"] = "big"; }),
               {"m.json", "layer 'c1'", "'kernel'", "integer"});
  expect_error(with([](json& m) { m["layers"][0].erase("channels"); }), {"layer 'c1'", "'channels'"});
  expect_error(with([](json& m) { m["layers"][0]["chanels"] = 3; }),
               {"layer 'c1'", "unknown field 'chanels'", "channels"});
  expect_error(with([](json& m) { m["layers"][1]["type"] = "swish"; }),
               {"layer 'r1'", "unknown layer type 'swish'", "relu"});
  expect_error(with([](json& m) { m["layers"][2]["inputs"] = {"nope"}; }), {"layer 'p1'", "input 'nope'"});
  expect_error(with([](json& m) { m["layers"][2]["name"] = "c1"; }), {"'c1'", "already used"});
  expect_error(with([](json& m) { m["layers"][0]["kernel"] = 20; }), {"layer 'c1'", "does not fit"});
  expect_error(with([](json& m) { m["layers"].erase(4); }), {"last layer", "loss"});
  expect_error(with([](json& m) { m["layers"][3]["units"] = 5; }), {"loss", "5 logits", "4 classes"});
  expect_error(with([](json& m) { m["input"] = {3, 8}; }), {"m.json", "'input'", "[C, H, W]"});
  expect_error(with([](json& m) { m["layers"] = json::array(); }), {"'layers'"});
  expect_error(with([](json& m) { m["layer"] = 1; }), {"unknown top-level field 'layer'"});
  expect_error(with([](json& m) { m["layers"][0]["groups"] = 3; }), {"'groups'", "divisor"});
  expect_error(with([](json& m) {
                 m["layers"][4]["inputs"] = {"fc"};
                 m["layers"][3]["inputs"] = {"r1"};
               }),
               {"'p1'", "never used"});
}

// floor((H + pad + pad_end - dilation*(kernel-1) - 1) / stride) + 1, PyTorch's and ONNX's rule.
TEST(ModelFile, ConvDilationAndPadEndSetTheOutputShape) {
  ModelBuilder b("atrous", {3, 11, 10}, 4);
  b.layer(
       "conv", "a",
       {{"channels", 4}, {"kernel", 3}, {"dilation", {2, 3}}, {"pad", {1, 0}}, {"pad_end", {0, 2}}, {"stride", {2, 1}}})
      .layer("relu6", "r")
      .layer("fc", "fc", {{"units", 4}})
      .layer("softmax_cross_entropy", "loss");
  const Graph g = b.build();
  // H: (11 + 1 + 0 - 5) / 2 + 1 = 4; W: (10 + 0 + 2 - 7) / 1 + 1 = 6.
  EXPECT_EQ(g.value(g.find_value("a")).shape, (Shape{4, 4, 6}));
  EXPECT_EQ(g.value(g.find_value("r")).shape, (Shape{4, 4, 6}));
  EXPECT_TRUE(g.nodes()[1].layer->can_run_in_place());
  EXPECT_TRUE(g.nodes()[1].layer->backward_reads_output());
  EXPECT_FALSE(g.nodes()[1].layer->backward_reads_input());
  // Dilation spreads the taps, it adds none: 2 FLOPs per tap per output.
  EXPECT_EQ(g.nodes()[0].layer->forward_flops({Shape{3, 11, 10}}, Shape{4, 4, 6}), 2.0 * 3 * 9 * 4 * 4 * 6);

  auto with = [](auto edit) {
    json m = tiny_model();
    edit(m);
    return m;
  };
  expect_error(with([](json& m) { m["layers"][0]["dilation"] = 0; }), {"layer 'c1'", "'dilation'", "pair [h, w]"});
  expect_error(with([](json& m) { m["layers"][0]["pad_end"] = -1; }), {"layer 'c1'", "'pad_end'"});
  expect_error(with([](json& m) { m["layers"][0]["dilation"] = 5; }),  // 11 wide on 8 + 1 + 1
               {"layer 'c1'", "does not fit", "dilation 5x5"});
}

TEST(ModelFile, AddRejectsMismatchedShapes) {
  ModelBuilder b("bad", {4, 6, 6}, 3);
  b.layer("conv", "a", {{"channels", 4}, {"kernel", 1}}).layer("conv", "b", {{"channels", 2}, {"kernel", 1}}, {"data"});
  b.layer("add", "sum", {}, {"a", "b"});
  EXPECT_THROW(
      {
        try {
          b.build();
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("layer 'sum' (add): add needs inputs of equal shape, got 4x6x6, 2x6x6"),
                    std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
}

TEST(ModelFile, LoadsShippedModelsByNameAndRejectsUnknownNames) {
  for (const auto& name : model_names()) EXPECT_NO_THROW(load_model(name)) << name;
  EXPECT_GE(model_names().size(), 3u);
  try {
    load_model("no_such_model");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fmnist_cnn"), std::string::npos) << "lists known models";
  }
}

TEST(ModelFile, ParsesShapes) {
  EXPECT_EQ(parse_shape("3x224x224", "--input"), (Shape{3, 224, 224}));
  EXPECT_EQ(parse_shape("10", "--input"), (Shape{10}));
  for (const char* bad : {"", "3x", "x3", "3x-1x2", "3x2", "axbxc", "3x224x224x1"})
    EXPECT_THROW(parse_shape(bad, "--input"), Error) << bad;
}

}  // namespace test_model_file
}  // namespace vdnn
