// tests/interop/onnx_test_model.h — small ONNX models built in memory with libonnx's protobuf
// classes, for the importer's and the ONNX fuzz target's tests.
//
//   OnnxTestModel m({2, 3, 8, 8});                               // input "x", batch 2
//   m.init("c.weight", {4, 3, 3, 3}).init("c.bias", {4});          // initializers, seeded values
//   m.node("Conv", {"x", "c.weight", "c.bias"}, {"y"}, "conv").ints("pads", {1, 1, 1, 1});
//   m.output("y");
//   std::string bytes = m.bytes();
//   const nlohmann::json& conv = layer_named(import_onnx_bytes(bytes, "m.onnx").model, "conv");
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>
#include <nlohmann/json.hpp>

namespace vdnn::test {

// The layer of an imported model description named `name` (a test failure when there is none).
inline const nlohmann::json& layer_named(const nlohmann::json& model, const std::string& name) {
  for (const auto& l : model["layers"])
    if (l["name"] == name) return l;
  static const nlohmann::json none;
  ADD_FAILURE() << "no layer " << name << " in " << model.dump();
  return none;
}

// The float values of initializer `name` of `model` (empty when it has none).
inline std::vector<float> initializer_values(const onnx::ModelProto& model, const std::string& name) {
  for (const auto& t : model.graph().initializer())
    if (t.name() == name) return {t.float_data().begin(), t.float_data().end()};
  return {};
}

class OnnxTestModel {
 public:
  explicit OnnxTestModel(const std::vector<int64_t>& input, int64_t opset = 13) {
    model_.set_ir_version(7);
    model_.add_opset_import()->set_version(opset);
    auto* in = model_.mutable_graph()->add_input();
    in->set_name("x");
    auto* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : input) t->mutable_shape()->add_dim()->set_dim_value(d);
  }

  // An initializer with deterministic values (offset + 0.1 * sin(i + name length)).
  OnnxTestModel& init(const std::string& name, const std::vector<int64_t>& dims, float offset = 0) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) t->add_dims(d), n *= d;
    for (int64_t i = 0; i < n; ++i) t->add_float_data(offset + 0.1f * std::sin(float(i + name.size())));
    return *this;
  }
  OnnxTestModel& init_ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  OnnxTestModel& init_scalar(const std::string& name, float value) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
    return *this;
  }

  // Adds a node; attribute setters below apply to the last node added.
  OnnxTestModel& node(const std::string& op, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, const std::string& name) {
    last_ = model_.mutable_graph()->add_node();
    last_->set_op_type(op);
    last_->set_name(name);
    for (const auto& i : inputs) last_->add_input(i);
    for (const auto& o : outputs) last_->add_output(o);
    return *this;
  }
  OnnxTestModel& ints(const std::string& name, const std::vector<int64_t>& values) {
    auto* a = attr(name, onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
    return *this;
  }
  OnnxTestModel& integer(const std::string& name, int64_t value) {
    attr(name, onnx::AttributeProto::INT)->set_i(value);
    return *this;
  }
  OnnxTestModel& real(const std::string& name, float value) {
    attr(name, onnx::AttributeProto::FLOAT)->set_f(value);
    return *this;
  }
  OnnxTestModel& text(const std::string& name, const std::string& value) {
    attr(name, onnx::AttributeProto::STRING)->set_s(value);
    return *this;
  }

  OnnxTestModel& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }

  // conv(3x3, pad 1, bias) -> BN -> ReLU -> max pool 2 -> Flatten -> Gemm(10): a whole classifier
  // on a [2, 3, 8, 8] input, named as PyTorch exports name them.
  static OnnxTestModel small_classifier() {
    OnnxTestModel m({2, 3, 8, 8});
    m.init("features.0.weight", {4, 3, 3, 3}).init("features.0.bias", {4});
    m.init("features.1.weight", {4}).init("features.1.bias", {4});
    m.init("features.1.running_mean", {4}).init("features.1.running_var", {4}, 1.0f);
    m.init("fc.weight", {10, 64}).init("fc.bias", {10});
    m.node("Conv", {"x", "features.0.weight", "features.0.bias"}, {"c"}, "/features/features.0/Conv")
        .ints("kernel_shape", {3, 3})
        .ints("pads", {1, 1, 1, 1})
        .ints("strides", {1, 1});
    m.node("BatchNormalization",
           {"c", "features.1.weight", "features.1.bias", "features.1.running_mean", "features.1.running_var"},
           {"b", "b_mean", "b_var"}, "/features/features.1/BatchNormalization")
        .real("epsilon", 1e-5f)
        .real("momentum", 0.9f);
    m.node("Relu", {"b"}, {"r"}, "/features/features.2/Relu");
    m.node("MaxPool", {"r"}, {"p"}, "/features/features.3/MaxPool")
        .ints("kernel_shape", {2, 2})
        .ints("strides", {2, 2});
    m.node("Flatten", {"p"}, {"f"}, "/Flatten").integer("axis", 1);
    m.node("Gemm", {"f", "fc.weight", "fc.bias"}, {"logits"}, "/fc/Gemm").integer("transB", 1);
    m.output("logits");
    return m;
  }

  // small_classifier with names that are not UTF-8 (issue 42): the conv's initializers
  // "f\xfe.0.*" (so its layer "f\xfe.0") and the ReLU node "/r\xc3/Relu".
  static OnnxTestModel badly_named_classifier() {
    OnnxTestModel m = small_classifier();
    onnx::GraphProto& g = *m.proto().mutable_graph();
    auto rename = [](std::string* name) {
      if (name->rfind("features.0.", 0) == 0) *name = "f\xfe.0." + name->substr(11);
    };
    for (auto& t : *g.mutable_initializer()) rename(t.mutable_name());
    for (auto& in : *g.mutable_node(0)->mutable_input()) rename(&in);
    g.mutable_node(2)->set_name("/r\xc3/Relu");
    return m;
  }

 private:
  onnx::AttributeProto* attr(const std::string& name, onnx::AttributeProto::AttributeType type) {
    auto* a = last_->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }

  onnx::ModelProto model_;
  onnx::NodeProto* last_ = nullptr;
};

}  // namespace vdnn::test
