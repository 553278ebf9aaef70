// interop/onnx_node_reader.h — checked access to one ONNX node's attributes and constant inputs.
//
// Model: like LayerConfig for JSON layers, a node is read only through OnnxNodeReader, which knows
// where it came from ("resnet18.onnx: node '/layer1/layer1.0/conv1/Conv' (Conv)") so every error
// names the file, the node, the attribute or input, and what would be valid. Constant inputs are
// initializers or outputs of Constant nodes (OnnxConstants); tensors are FLOAT (to floats) or
// INT64/INT32/BOOL (to integers), stored inline or as raw little-endian bytes; external data is refused.
// A float attribute or scalar input that is NaN is refused here, naming it (NaN passes every range
// check written `v < lo || v > hi`); ranges are the layers' own (core/layer_config.h), which refuse
// infinities too.
//
//   OnnxConstants constants(*model.mutable_graph(), "m.onnx");
//   OnnxNodeReader node(proto, constants, "m.onnx");
//   std::vector<int64_t> pads = node.ints("pads", {0, 0, 0, 0}, /*count=*/4);
//   float eps = node.real("epsilon", 1e-5f);
//   const onnx::TensorProto* w = node.constant_input(1);      // nullptr: not a constant
//   std::vector<float> weights = onnx_floats(*w, node.where());
//   node.check_attributes_used();       // an attribute nobody read: an Error listing the valid ones
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace vdnn {

// The tensor's dims, checked (each >= 0, at most 2^36 elements in all); `where` names it in errors.
std::vector<int64_t> onnx_dims(const onnx::TensorProto& t, const std::string& where);
// A FLOAT tensor's values; throws naming `where` for another type or a size that disagrees.
std::vector<float> onnx_floats(const onnx::TensorProto& t, const std::string& where);
// An INT64, INT32 or BOOL tensor's values; throws naming `where` otherwise.
std::vector<int64_t> onnx_integers(const onnx::TensorProto& t, const std::string& where);

// Initializers and Constant nodes' values by name. release() frees an initializer's values once
// they are translated (a layer's weights, read once), so an import holds each weight once: the
// parsed file and the translated weights never both hold all of them (VGG-16: 528 MiB each).
class OnnxConstants {
 public:
  OnnxConstants(onnx::GraphProto& graph, const std::string& source);
  const onnx::TensorProto* find(const std::string& name) const;
  bool is_initializer(const std::string& name) const { return initializers_.count(name) > 0; }
  void release(const std::string& name);

 private:
  std::map<std::string, onnx::TensorProto*> tensors_;
  std::set<std::string> initializers_;
};

class OnnxNodeReader {
 public:
  OnnxNodeReader(const onnx::NodeProto& node, const OnnxConstants& constants, const std::string& source);

  const onnx::NodeProto& proto() const { return node_; }
  const std::string& op() const { return node_.op_type(); }
  const std::string& where() const { return where_; }

  // Integer list attribute; `count` (when > 0) is the required length.
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> fallback, size_t count = 0);
  int64_t integer(const std::string& name, int64_t fallback);
  float real(const std::string& name, float fallback);
  std::string text(const std::string& name, const std::string& fallback);
  const onnx::TensorProto* tensor(const std::string& name);  // nullptr when absent
  bool has(const std::string& name) const;

  // Input i's name ("" when absent or out of range), and its constant tensor (nullptr if none).
  std::string input(int i) const;
  const onnx::TensorProto* constant_input(int i) const;
  // The constant input i, required; throws naming the node when it is computed at run time.
  const onnx::TensorProto& require_constant(int i, const std::string& what) const;
  // A scalar FLOAT or integer constant input i, or `fallback` when the input is absent.
  double scalar_input(int i, double fallback, const std::string& what) const;

  void check_attributes_used() const;
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const onnx::AttributeProto* find(const std::string& name, onnx::AttributeProto::AttributeType type);

  const onnx::NodeProto& node_;
  const OnnxConstants& constants_;
  std::string where_;
  std::set<std::string> used_;
};

}  // namespace vdnn
