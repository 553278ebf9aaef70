// ONNX import of what ONNX's conformance data writes beyond torchvision's training exports (issue
// 41): an older opset converted (and said so), auto_pad SAME_UPPER / SAME_LOWER as explicit pads,
// asymmetric pooling pads, a trailing Softmax, a zero Pad before a max pool of ReLU outputs,
// Gemm's alpha, beta and broadcast bias, Clip without bounds, negative axes; and the errors that
// must say plainly what is wrong: a one-class output, `vdnn infer` on a model without weights.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "cli/cli_run.h"
#include "error_of.h"
#include "interop/onnx_import.h"
#include "interop/onnx_test_model.h"
#include "io/npy.h"

namespace vdnn {
namespace test_onnx_import_forms {

using test::error_of;
using test::initializer_values;
using test::layer_named;
using test::OnnxTestModel;

// conv(3x3, pad 1) -> Clip(0, 6) -> Flatten -> Gemm(5) on [2, 3, 6, 6], in `opset`; Clip's
// bounds are attributes before opset 11 and inputs since.
OnnxTestModel clip_classifier(int64_t opset) {
  OnnxTestModel m({2, 3, 6, 6}, opset);
  m.init("c.weight", {4, 3, 3, 3}).init("fc.weight", {5, 4 * 6 * 6});
  m.node("Conv", {"x", "c.weight"}, {"c"}, "conv").ints("pads", {1, 1, 1, 1});
  if (opset < 11) {
    m.node("Clip", {"c"}, {"six"}, "clip").real("min", 0).real("max", 6);
  } else {
    m.init_scalar("lo", 0).init_scalar("hi", 6);
    m.node("Clip", {"c", "lo", "hi"}, {"six"}, "clip");
  }
  m.node("Flatten", {"six"}, {"f"}, "flat").integer("axis", 1);
  m.node("Gemm", {"f", "fc.weight"}, {"logits"}, "fc").integer("transB", 1);
  m.output("logits");
  return m;
}

TEST(OnnxImportForms, AnOlderOpsetIsConvertedWithOnnxsConverterAndTheImportSaysSo) {
  OnnxTestModel old = clip_classifier(9);
  const ImportedModel imported = import_onnx_bytes(old.bytes(), "old.onnx");
  ASSERT_EQ(imported.notes.size(), 1u);
  EXPECT_EQ(imported.notes[0].rfind("old.onnx: opset 9 converted to 13 with ONNX's version converter (libonnx 1.", 0),
            0u)
      << imported.notes[0];
  EXPECT_EQ(layer_named(imported.model, "clip")["type"], "relu6");  // the bounds, now inputs, read back
  const SafeTensor* fc = imported.weights.find("fc.weight");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->data, initializer_values(old.proto(), "fc.weight"));
  // The same network written in opset 13 imports to the same description, with no note.
  OnnxTestModel current = clip_classifier(13);
  const ImportedModel same = import_onnx_bytes(current.bytes(), "old.onnx");
  EXPECT_TRUE(same.notes.empty());
  EXPECT_EQ(same.model, imported.model);

  // What the converter cannot convert is one line naming the file, the opset and the reason.
  OnnxTestModel bad = clip_classifier(9);
  bad.proto().mutable_opset_import(0)->set_version(0);
  test::expect_error([&] { import_onnx_bytes(bad.bytes(), "zero.onnx"); },
                     {"zero.onnx: opset 0 is older than vdnn reads (13), and ONNX's version converter",
                      "cannot convert it: ", "invalid version"});
}

// An older opset goes through libonnx's shape inference before its converter, which divides by a
// convolution's or pool's strides, dilations and kernel unchecked (the fuzzer's SIGFPE): a 0 there
// is one clear error naming the node, before libonnx sees it.
TEST(OnnxImportForms, AZeroStrideDilationKernelOrGroupInAnOlderOpsetIsRefusedBeforeLibonnxDividesByIt) {
  for (const std::string attribute : {"strides", "dilations", "kernel_shape", "group"}) {
    SCOPED_TRACE(attribute);
    OnnxTestModel old = clip_classifier(9);
    onnx::NodeProto* conv = old.proto().mutable_graph()->mutable_node(0);
    onnx::AttributeProto* a = conv->add_attribute();
    a->set_name(attribute);
    if (attribute == "group") {
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(0);
    } else {
      a->set_type(onnx::AttributeProto::INTS);
      a->add_ints(attribute == "strides" ? 0 : 1);
      a->add_ints(attribute == "strides" ? 1 : 0);
    }
    test::expect_error([&] { import_onnx_bytes(old.bytes(), "zero.onnx"); },
                       {"zero.onnx: node 'conv' (Conv): attribute '" + attribute + "'", "1 or more"});
  }
}

TEST(OnnxImportForms, AutoPadSameAndAsymmetricPoolingPadsBecomeExplicitPadAndPadEnd) {
  OnnxTestModel m({1, 2, 6, 6});
  m.init("c.weight", {3, 2, 3, 3}).init("fc.weight", {4, 3 * 2 * 2});
  // 6 -> 3 at stride 2 takes 1 padded row and column: SAME_UPPER puts it at the end.
  m.node("Conv", {"x", "c.weight"}, {"c"}, "conv").text("auto_pad", "SAME_UPPER").ints("strides", {2, 2});
  // 3 -> 3 with a 2x2 window takes 1: SAME_LOWER puts it at the start.
  m.node("MaxPool", {"c"}, {"p"}, "max").ints("kernel_shape", {2, 2}).text("auto_pad", "SAME_LOWER");
  // pads [top, left, bottom, right] = [0, 1, 1, 0]: 3 -> 2 rows, 3 -> 2 columns.
  m.node("AveragePool", {"p"}, {"a"}, "avg")
      .ints("kernel_shape", {2, 2})
      .ints("strides", {2, 2})
      .ints("pads", {0, 1, 1, 0});
  m.node("Flatten", {"a"}, {"f"}, "flat").integer("axis", 1);
  m.node("Gemm", {"f", "fc.weight"}, {"logits"}, "fc").integer("transB", 1);
  m.output("logits");
  const ImportedModel imported = import_onnx_bytes(m.bytes(), "same.onnx");
  const nlohmann::json& conv = layer_named(imported.model, "c");  // named after its weight "c.weight"
  EXPECT_EQ(conv["pad"], 0);
  EXPECT_EQ(conv["pad_end"], nlohmann::json({1, 1}));
  const nlohmann::json& max = layer_named(imported.model, "max");
  EXPECT_EQ(max["pad"], 1);
  EXPECT_EQ(max["pad_end"], nlohmann::json({0, 0}));
  const nlohmann::json& avg = layer_named(imported.model, "avg");
  EXPECT_EQ(avg["pad"], nlohmann::json({0, 1}));
  EXPECT_EQ(avg["pad_end"], nlohmann::json({1, 0}));
  const Graph g = parse_model(imported.model, "same.onnx");
  EXPECT_EQ(g.value(g.find_value("c")).shape, (Shape{3, 3, 3}));
  EXPECT_EQ(g.value(g.find_value("max")).shape, (Shape{3, 3, 3}));
  EXPECT_EQ(g.value(g.find_value("avg")).shape, (Shape{3, 2, 2}));

  m.proto().mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_s("SAME");
  test::expect_error([&] { import_onnx_bytes(m.bytes(), "bad.onnx"); },
                     {"bad.onnx: node 'conv' (Conv): auto_pad 'SAME' is not one of NOTSET, VALID, SAME_UPPER, "
                      "SAME_LOWER"});
}

// small_classifier's Gemm writes "z", and a Softmax over it is the graph's output.
OnnxTestModel classifier_with_softmax(int64_t axis) {
  OnnxTestModel m = OnnxTestModel::small_classifier();
  m.proto().mutable_graph()->mutable_node(5)->set_output(0, "z");
  m.node("Softmax", {"z"}, {"logits"}, "softmax").integer("axis", axis);
  return m;
}

TEST(OnnxImportForms, ATrailingSoftmaxIsTheSoftmaxOfTheLossAndNothingElseIs) {
  for (int64_t axis : {1, -1}) {
    OnnxTestModel m = classifier_with_softmax(axis);
    const ImportedModel imported = import_onnx_bytes(m.bytes(), "soft.onnx");
    EXPECT_TRUE(imported.output_is_softmax);
    EXPECT_EQ(imported.model["layers"].back()["inputs"], nlohmann::json({"fc"}));  // the loss reads the logits
    ASSERT_EQ(imported.notes.size(), 1u);
    EXPECT_NE(imported.notes[0].find("soft.onnx: node 'softmax' (Softmax): the graph's last node is the softmax of "
                                     "vdnn's loss"),
              std::string::npos)
        << imported.notes[0];
  }
  EXPECT_FALSE(import_onnx_bytes(OnnxTestModel::small_classifier().bytes(), "plain.onnx").output_is_softmax);

  // Before the classifier, it would change what the layers after it compute.
  OnnxTestModel middle = OnnxTestModel::small_classifier();
  middle.proto().mutable_graph()->mutable_node(4)->set_input(0, "s");  // Flatten reads the softmax
  middle.node("Softmax", {"p"}, {"s"}, "softmax").integer("axis", 1);
  middle.proto().mutable_graph()->mutable_node()->SwapElements(4, 6);  // the Softmax before the Flatten
  middle.proto().mutable_graph()->mutable_node()->SwapElements(5, 6);
  test::expect_error([&] { import_onnx_bytes(middle.bytes(), "mid.onnx"); },
                     {"mid.onnx: node 'softmax' (Softmax): a Softmax is supported only as the graph's last node"});
}

TEST(OnnxImportForms, AZeroPadFoldsIntoAMaxPoolOfReluOutputsAndAloneIsRefusedNamingIt) {
  auto padded = [](const std::string& before_pool) {
    OnnxTestModel m({1, 2, 5, 5});
    m.init_ints("pads", {0, 0, 0, 1, 0, 0, 1, 0}).init("fc.weight", {3, 2 * 5 * 5});
    m.node("Relu", {"x"}, {"r"}, "relu");
    m.node("Pad", {before_pool, "pads"}, {"padded"}, "pad");  // top 0, left 1, bottom 1, right 0
    m.node("MaxPool", {"padded"}, {"p"}, "max").ints("kernel_shape", {2, 2}).ints("strides", {1, 1});
    m.node("Flatten", {"p"}, {"f"}, "flat").integer("axis", 1);
    m.node("Gemm", {"f", "fc.weight"}, {"logits"}, "fc").integer("transB", 1);
    m.output("logits");
    return m;
  };
  OnnxTestModel after_relu = padded("r");
  const ImportedModel imported = import_onnx_bytes(after_relu.bytes(), "relu.onnx");
  const nlohmann::json& max = layer_named(imported.model, "max");
  EXPECT_EQ(max["pad"], nlohmann::json({0, 1}));
  EXPECT_EQ(max["pad_end"], nlohmann::json({1, 0}));
  EXPECT_EQ(max["inputs"], nlohmann::json({"relu"}));

  OnnxTestModel raw = padded("x");
  test::expect_error(
      [&] { import_onnx_bytes(raw.bytes(), "raw.onnx"); },
      {"raw.onnx: node 'max' (MaxPool): reads the zero Pad 'pad' of 'x', which may be negative", "only after a Relu"});

  OnnxTestModel alone({1, 2, 5, 5});
  alone.init_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1});
  alone.node("Pad", {"x", "pads"}, {"y"}, "pad").output("y");
  test::expect_error([&] { import_onnx_bytes(alone.bytes(), "alone.onnx"); },
                     {"alone.onnx: the graph's output 'y': reads the output of the zero Pad 'pad'; vdnn has no "
                      "layer that pads alone"});
}

TEST(OnnxImportForms, GemmScalesByAlphaAndBetaAndBroadcastsOneBiasButNotOnePerRow) {
  OnnxTestModel m({2, 6});
  m.init("w", {6, 4}).init_scalar("c", 0.25f);
  m.node("Gemm", {"x", "w", "c"}, {"logits"}, "fc").real("alpha", 0.5f).real("beta", 2.0f);
  m.output("logits");
  const ImportedModel imported = import_onnx_bytes(m.bytes(), "gemm.onnx");
  const std::vector<float> w = initializer_values(m.proto(), "w");  // [K 6, units 4]
  const SafeTensor* weight = imported.weights.find("fc.weight");
  ASSERT_NE(weight, nullptr);
  ASSERT_EQ(weight->shape, (std::vector<int64_t>{4, 6}));
  for (int u = 0; u < 4; ++u)
    for (int k = 0; k < 6; ++k) EXPECT_EQ(weight->data[u * 6 + k], 0.5f * w[k * 4 + u]);
  ASSERT_NE(imported.weights.find("fc.bias"), nullptr);
  EXPECT_EQ(imported.weights.find("fc.bias")->data, std::vector<float>(4, 0.5f));

  OnnxTestModel rows({2, 6});
  rows.init("w", {6, 4}).init("c", {2, 4});
  rows.node("Gemm", {"x", "w", "c"}, {"logits"}, "fc").output("logits");
  test::expect_error([&] { import_onnx_bytes(rows.bytes(), "rows.onnx"); },
                     {"rows.onnx: node 'fc' (Gemm): C has shape 2x4, a bias per row (sample)"});
}

TEST(OnnxImportForms, ClipWithoutBoundsIsTheIdentity) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int bounds : {0, 1}) {
    OnnxTestModel m = OnnxTestModel::small_classifier();
    auto* relu = m.proto().mutable_graph()->mutable_node(2);
    relu->set_op_type("Clip");
    if (bounds) {
      m.init_scalar("lo", -inf).init_scalar("hi", inf);
      relu->add_input("lo");
      relu->add_input("hi");
    }
    const ImportedModel imported = import_onnx_bytes(m.bytes(), "clip.onnx");
    for (const auto& layer : imported.model["layers"])
      EXPECT_NE(layer["name"], "/features/features.2/Relu") << "a layer for Clip(-inf, inf)";
    EXPECT_EQ(layer_named(imported.model, "/features/features.3/MaxPool")["inputs"], nlohmann::json({"features.1"}));
  }
}

TEST(OnnxImportForms, ConcatAndFlattenTakeNegativeAxes) {
  OnnxTestModel m({2, 6});
  m.init("u.weight", {3, 6}).init("v.weight", {2, 6});
  m.node("Gemm", {"x", "u.weight"}, {"u"}, "u").integer("transB", 1);
  m.node("Gemm", {"x", "v.weight"}, {"v"}, "v").integer("transB", 1);
  m.node("Concat", {"u", "v"}, {"logits"}, "cat").integer("axis", -1);  // the features of [N, K]
  m.output("logits");
  const ImportedModel imported = import_onnx_bytes(m.bytes(), "cat.onnx");
  EXPECT_EQ(imported.model["classes"], 5);
  EXPECT_EQ(layer_named(imported.model, "cat")["inputs"], nlohmann::json({"u", "v"}));

  OnnxTestModel f = OnnxTestModel::small_classifier();
  f.proto().mutable_graph()->mutable_node(4)->mutable_attribute(0)->set_i(-3);  // axis 1 of [N, C, H, W]
  EXPECT_EQ(import_onnx_bytes(f.bytes(), "flat.onnx").model["classes"], 10);
}

TEST(OnnxImportForms, AOneClassOutputSaysAClassifierNeedsTwoClassesNamingTheNode) {
  OnnxTestModel m({2, 6});
  m.init("fc.weight", {1, 6});
  m.node("Gemm", {"x", "fc.weight"}, {"logits"}, "/fc/Gemm").integer("transB", 1).output("logits");
  test::expect_error([&] { import_onnx_bytes(m.bytes(), "one.onnx"); },
                     {"one.onnx: node '/fc/Gemm' (Gemm): its output 'logits', the logits, has 1 value per sample; "
                      "a classifier needs 2 or more classes"});
}

// `vdnn infer` on ONNX files: one without weights (no parameters) needs no --weights, and an older
// opset's conversion is one note on stderr; a zoo model without --weights says what is missing.
TEST(OnnxImportCli, AFileWithoutWeightsInfersAndAnOlderOpsetIsOneNote) {
  namespace fs = std::filesystem;
  const fs::path dir = test::temp_dir("onnx_forms");
  OnnxTestModel m({2, 3, 4, 4}, 11);
  m.node("GlobalAveragePool", {"x"}, {"g"}, "gap");
  m.node("Flatten", {"g"}, {"logits"}, "flat").integer("axis", 1).output("logits");
  std::ofstream((dir / "gap.onnx").string(), std::ios::binary) << m.bytes();
  std::vector<float> x(2 * 3 * 4 * 4);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  write_npy((dir / "x.npy").string(), {2, 3, 4, 4}, x);
  const test::CliRun r = test::vdnn("infer --model " + (dir / "gap.onnx").string() + " --batch 2 --images " +
                                    (dir / "x.npy").string() + " --logits " + (dir / "y.npy").string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: " + (dir / "gap.onnx").string() + ": opset 11 converted to 13"), std::string::npos)
      << r.output;
  // `vdnn models` says so too; `vdnn profile` loads the model twice and says it once.
  const std::string note = "note: " + (dir / "gap.onnx").string() + ": opset 11 converted to 13";
  for (const std::string& args : {"models --model " + (dir / "gap.onnx").string(),
                                  "profile --model " + (dir / "gap.onnx").string() + " --batch 2 --repeats 1"}) {
    const test::CliRun again = test::vdnn(args);
    ASSERT_EQ(again.exit_code, 0) << args << "\n" << again.output;
    const size_t at = again.output.find(note);
    EXPECT_NE(at, std::string::npos) << args << "\n" << again.output;
    EXPECT_EQ(again.output.find(note, at + 1), std::string::npos) << args << ": said twice\n" << again.output;
  }
  const NpyArray y = read_npy((dir / "y.npy").string());
  ASSERT_EQ(y.shape, (std::vector<int64_t>{2, 3}));
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c) {
      double mean = 0;
      for (int k = 0; k < 16; ++k) mean += x[(n * 3 + c) * 16 + k] / 16.0;
      EXPECT_NEAR(y.data[n * 3 + c], mean, 1e-6);
    }
  write_npy((dir / "f.npy").string(), {1, 1, 28, 28}, std::vector<float>(28 * 28, 0.5f));
  test::expect_user_error(
      "infer --model fmnist_cnn --images " + (dir / "f.npy").string() + " --logits " + (dir / "g.npy").string(),
      "--weights is required: model 'fmnist_cnn' has ");
  fs::remove_all(dir);
}

}  // namespace test_onnx_import_forms
}  // namespace vdnn
