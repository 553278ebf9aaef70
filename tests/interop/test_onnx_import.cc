// ONNX import (interop/onnx_import.h): models built in memory with libonnx's classes become the
// vdnn layers, names and weights they describe, and every kind of bad input is one clear error
// naming the file and the node.
#include <gtest/gtest.h>

#include <cmath>

#include "error_of.h"
#include "interop/onnx_import.h"
#include "interop/onnx_test_model.h"
#include "runtime/checkpoint.h"
#include "runtime/net.h"

namespace vdnn {
namespace test_onnx_import {

using test::error_of;
using test::OnnxTestModel;

const nlohmann::json& layer_named(const ImportedModel& m, const std::string& name) {
  return test::layer_named(m.model, name);
}

std::vector<float> initializer(OnnxTestModel& m, const std::string& name) {
  return test::initializer_values(m.proto(), name);
}

TEST(OnnxImport, SmallClassifierKeepsItsNamesShapesAndWeights) {
  OnnxTestModel m = OnnxTestModel::small_classifier();
  const ImportedModel imported = import_onnx_bytes(m.bytes(), "small.onnx");
  EXPECT_EQ(imported.model["input"], nlohmann::json({3, 8, 8}));
  EXPECT_EQ(imported.model["classes"], 10);
  const auto& conv = layer_named(imported, "features.0");
  EXPECT_EQ(conv["type"], "conv");
  EXPECT_EQ(conv["channels"], 4);
  EXPECT_EQ(conv["pad"], 1);
  const auto& bn = layer_named(imported, "features.1");
  EXPECT_EQ(bn["momentum"].get<double>(), 0.1);  // ONNX's 0.9f is PyTorch's 0.1, exactly
  EXPECT_EQ(bn["eps"].get<double>(), 1e-5);
  EXPECT_EQ(layer_named(imported, "fc")["units"], 10);
  EXPECT_EQ(imported.model["layers"].back()["type"], "softmax_cross_entropy");

  // The Net takes the initializers under their own names and keeps them bit for bit.
  Net net(parse_model(imported.model, "small.onnx"), {.batch = 2});
  load_weights(imported.weights, net);
  for (const char* name : {"features.0.weight", "features.1.running_var", "fc.weight", "fc.bias"}) {
    const SafeTensor* t = imported.weights.find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->data, initializer(m, name)) << name;
  }
  EXPECT_EQ(net.graph().parameter_count(), 4 * 27 + 4 + 4 + 4 + 640 + 10);
}

TEST(OnnxImport, PadFoldsIntoTheConvAndMatMulAddBecomesOneFullyConnectedLayer) {
  OnnxTestModel m({1, 2, 6, 6});
  m.init_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1}).init("c.weight", {3, 2, 3, 3});
  m.init("w", {108, 5}).init("b", {5});
  m.node("Pad", {"x", "pads"}, {"padded"}, "pad");
  m.node("Conv", {"padded", "c.weight"}, {"c"}, "conv").ints("pads", {0, 0, 0, 0});
  m.node("Flatten", {"c"}, {"f"}, "flat").integer("axis", 1);
  m.node("MatMul", {"f", "w"}, {"mm"}, "matmul");
  m.node("Add", {"mm", "b"}, {"logits"}, "bias");
  m.output("logits");
  const ImportedModel imported = import_onnx_bytes(m.bytes(), "pad.onnx");
  EXPECT_EQ(layer_named(imported, "c")["pad"], 1);
  EXPECT_FALSE(layer_named(imported, "c")["bias"].get<bool>());
  const auto& fc = layer_named(imported, "matmul");
  EXPECT_EQ(fc["units"], 5);
  EXPECT_TRUE(fc["bias"].get<bool>());
  // MatMul's [K, units] weight is stored transposed, as vdnn's (and PyTorch's) [units, K].
  const std::vector<float> w = initializer(m, "w");
  const SafeTensor* t = imported.weights.find("matmul.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->shape, (std::vector<int64_t>{5, 108}));
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 108; ++k) ASSERT_EQ(t->data[i * 108 + k], w[k * 5 + i]);
  EXPECT_EQ(imported.weights.find("matmul.bias")->data, initializer(m, "b"));
}

TEST(OnnxImport, AddWithoutAnOutputAfterAMatMulIsAnErrorNamingTheAdd) {
  // Found by fuzz_onnx_import: the MatMul+Add fold read the Add's output 0 before any check.
  OnnxTestModel m({1, 4});
  m.init("w", {4, 3}).init("b", {3});
  m.node("MatMul", {"x", "w"}, {"mm"}, "matmul");
  m.node("Add", {"mm", "b"}, {"logits"}, "bias");
  m.output("logits");
  m.proto().mutable_graph()->mutable_node(1)->clear_output();
  const std::string msg = error_of([&] { import_onnx_bytes(m.bytes(), "noout.onnx"); });
  EXPECT_NE(msg.find("noout.onnx: node 'bias' (Add): has no output"), std::string::npos) << msg;
}

TEST(OnnxImport, PadBeforeAnAveragePoolIsItsCountedPadding) {
  // PyTorch's AvgPool2d(3, 1, 1) (count_include_pad=True) exports as Pad + AveragePool.
  OnnxTestModel m({1, 2, 6, 6});
  m.init_ints("pads", {0, 0, 1, 1, 0, 0, 1, 1}).init("fc.weight", {3, 72});
  m.node("Pad", {"x", "pads"}, {"padded"}, "pad");
  m.node("AveragePool", {"padded"}, {"p"}, "avg").ints("kernel_shape", {3, 3}).ints("strides", {1, 1});
  m.node("Flatten", {"p"}, {"f"}, "flat").integer("axis", 1);
  m.node("Gemm", {"f", "fc.weight"}, {"logits"}, "fc").integer("transB", 1);
  m.output("logits");
  const ImportedModel imported = import_onnx_bytes(m.bytes(), "avg.onnx");
  const nlohmann::json& pool = layer_named(imported, "avg");
  EXPECT_EQ(pool["pad"], 1);
  EXPECT_FALSE(pool["exclude_padding"].get<bool>());
  EXPECT_EQ(pool["inputs"], nlohmann::json({"data"}));

  m.proto().mutable_graph()->mutable_node(1)->set_op_type("MaxPool");  // -inf, not 0, pads a max pool
  const std::string msg = error_of([&] { import_onnx_bytes(m.bytes(), "max.onnx"); });
  EXPECT_NE(msg.find("node 'avg' (MaxPool): reads the zero Pad 'pad' of 'x', which may be negative"), std::string::npos)
      << msg;
}

TEST(OnnxImport, TruncatedFileIsOneErrorNamingIt) {
  const std::string bytes = OnnxTestModel::small_classifier().bytes();
  for (size_t keep : {size_t{0}, size_t{7}, bytes.size() / 2, bytes.size() - 3}) {
    const std::string msg = error_of([&] { import_onnx_bytes(bytes.substr(0, keep), "cut.onnx"); });
    EXPECT_EQ(msg.rfind("cut.onnx", 0), 0u) << msg;
  }
}

TEST(OnnxImport, UnsupportedOperatorNamesTheNodeAndWhatIsSupported) {
  OnnxTestModel m = OnnxTestModel::small_classifier();
  m.proto().mutable_graph()->mutable_node(2)->set_op_type("Softsign");
  const std::string msg = error_of([&] { import_onnx_bytes(m.bytes(), "odd.onnx"); });
  EXPECT_NE(msg.find("odd.onnx: node '/features/features.2/Relu' (Softsign): operator Softsign is not supported"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("BatchNormalization"), std::string::npos) << msg;
}

TEST(OnnxImport, UnsupportedAttributeAndAttributeValueAreErrors) {
  OnnxTestModel a = OnnxTestModel::small_classifier();
  auto* attr = a.proto().mutable_graph()->mutable_node(0)->add_attribute();
  attr->set_name("fancy");
  attr->set_type(onnx::AttributeProto::INT);
  std::string msg = error_of([&] { import_onnx_bytes(a.bytes(), "a.onnx"); });
  EXPECT_NE(msg.find("node '/features/features.0/Conv' (Conv): attribute 'fancy' is not supported"), std::string::npos)
      << msg;

  OnnxTestModel b = OnnxTestModel::small_classifier();
  b.proto().mutable_graph()->mutable_node(4)->mutable_attribute(0)->set_i(2);  // Flatten axis 2
  msg = error_of([&] { import_onnx_bytes(b.bytes(), "b.onnx"); });
  EXPECT_NE(msg.find("node '/Flatten' (Flatten): only axis 1"), std::string::npos) << msg;
}

TEST(OnnxImport, DynamicBatchDimensionIsRefused) {
  OnnxTestModel m = OnnxTestModel::small_classifier();
  auto* dim =
      m.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(
          0);
  dim->set_dim_param("batch_size");
  const std::string msg = error_of([&] { import_onnx_bytes(m.bytes(), "dyn.onnx"); });
  EXPECT_NE(msg.find("dyn.onnx: input 'x': dimension 0 is dynamic ('batch_size')"), std::string::npos) << msg;
}

TEST(OnnxImport, ShapeThatDoesNotAgreeNamesTheNode) {
  OnnxTestModel m = OnnxTestModel::small_classifier();
  auto* fc_weight = m.proto().mutable_graph()->mutable_initializer(6);
  ASSERT_EQ(fc_weight->name(), "fc.weight");
  fc_weight->set_dims(1, 63);  // the flattened input has 64 features
  fc_weight->mutable_float_data()->Truncate(630);
  const std::string msg = error_of([&] { import_onnx_bytes(m.bytes(), "shape.onnx"); });
  EXPECT_NE(msg.find("shape.onnx: node '/fc/Gemm' (Gemm): weight 'fc.weight': has shape 10x63, the layer needs 10x64"),
            std::string::npos)
      << msg;
}

TEST(OnnxImport, InferenceFormBatchNormAndReadsOfUnknownValuesAreRefused) {
  OnnxTestModel m = OnnxTestModel::small_classifier();
  m.proto().mutable_graph()->mutable_node(1)->mutable_output()->DeleteSubrange(1, 2);  // eval-mode export
  std::string msg = error_of([&] { import_onnx_bytes(m.bytes(), "eval.onnx"); });
  EXPECT_NE(msg.find("(BatchNormalization): is in inference form"), std::string::npos) << msg;

  OnnxTestModel n = OnnxTestModel::small_classifier();
  n.proto().mutable_graph()->mutable_node(3)->set_input(0, "nowhere");
  msg = error_of([&] { import_onnx_bytes(n.bytes(), "dangling.onnx"); });
  EXPECT_NE(msg.find("(MaxPool): reads 'nowhere', which no earlier node produces"), std::string::npos) << msg;
}

TEST(OnnxImport, ClipIsReluOrReluSixAndNothingElse) {
  auto with_clip = [](float lo, float hi) {
    OnnxTestModel m = OnnxTestModel::small_classifier();
    m.init_scalar("lo", lo).init_scalar("hi", hi);
    auto* relu = m.proto().mutable_graph()->mutable_node(2);
    relu->set_op_type("Clip");
    relu->add_input("lo");
    relu->add_input("hi");
    return m;
  };
  OnnxTestModel six = with_clip(0, 6);
  const ImportedModel imported = import_onnx_bytes(six.bytes(), "six.onnx");
  EXPECT_EQ(layer_named(imported, "/features/features.2/Relu")["type"], "relu6");
  OnnxTestModel odd = with_clip(-1, 1);
  const std::string msg = error_of([&] { import_onnx_bytes(odd.bytes(), "clip.onnx"); });
  EXPECT_NE(msg.find("Clip(min -1, max 1) is supported only as ReLU"), std::string::npos) << msg;
  // Opset 10 holds the bounds as attributes, which libonnx's converter turns into inputs: the
  // message names them as the file does.
  OnnxTestModel old({2, 4}, 10);
  old.node("Clip", {"x"}, {"logits"}, "clip0").real("min", 1).real("max", 2);
  old.output("logits");
  const std::string old_msg = error_of([&] { import_onnx_bytes(old.bytes(), "clip10.onnx"); });
  EXPECT_NE(old_msg.find("node 'clip0' (Clip): Clip(min 1, max 2) is supported only as ReLU"), std::string::npos)
      << old_msg;
}

TEST(OnnxImport, SharedWeightsAreRefused) {
  OnnxTestModel shared({2, 8});
  shared.init("w", {8, 8}).init("fc.weight", {3, 8});
  shared.node("Gemm", {"x", "w"}, {"a"}, "g1").integer("transB", 1);
  shared.node("Gemm", {"a", "w"}, {"b"}, "g2").integer("transB", 1);
  shared.node("Gemm", {"b", "fc.weight"}, {"logits"}, "fc").integer("transB", 1);
  shared.output("logits");
  const std::string msg = error_of([&] { import_onnx_bytes(shared.bytes(), "shared.onnx"); });
  EXPECT_NE(msg.find("node 'g2' (Gemm): weight 'w': is used by a second node"), std::string::npos) << msg;
}

}  // namespace test_onnx_import
}  // namespace vdnn
