#include "interop/onnx_opset.h"

#include <onnx/common/version.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <set>

#include "vdnn/error.h"

namespace vdnn {

namespace {

// What libonnx's shape inference divides by without checking (convPoolShapeInference: a stride,
// dilation or kernel of 0 is a SIGFPE; a Conv's group of 0 too): positive in every node that has them.
void check_divisors(const onnx::NodeProto& node, const std::string& source) {
  for (const auto& a : node.attribute()) {
    const bool divisor = a.name() == "strides" || a.name() == "dilations" || a.name() == "kernel_shape";
    if (divisor)
      for (int64_t v : a.ints())
        if (v <= 0)
          VDNN_THROW(source << ": node '" << node.name() << "' (" << node.op_type() << "): attribute '" << a.name()
                            << "' holds " << v << "; expected values of 1 or more");
    if (a.name() == "group" && node.op_type() == "Conv" && a.i() <= 0)
      VDNN_THROW(source << ": node '" << node.name() << "' (Conv): attribute 'group' is " << a.i()
                        << "; expected 1 or more");
  }
}

// What libonnx's IR import (onnx/common/ir_pb_converter.cc) dereferences unchecked: every graph
// output is a defined value; and nested graphs, which no operator vdnn reads has. And what its shape
// inference, run before the conversion, divides by (check_divisors).
void check_convertible(const onnx::GraphProto& graph, const std::string& source) {
  std::set<std::string> defined;
  for (const auto& in : graph.input()) defined.insert(in.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& node : graph.node()) {
    for (const auto& out : node.output()) defined.insert(out);
    for (const auto& a : node.attribute())
      if (a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS || a.has_g() ||
          a.graphs_size() > 0)
        VDNN_THROW(source << ": node '" << node.name() << "' (" << node.op_type() << "): attribute '" << a.name()
                          << "' holds a graph, which no operator vdnn imports takes");
    check_divisors(node, source);
  }
  for (const auto& node : graph.node())
    for (const auto& in : node.input())
      if (!in.empty() && !defined.count(in))
        VDNN_THROW(source << ": node '" << node.name() << "' (" << node.op_type() << "): reads '" << in
                          << "', which no node, input or initializer defines");
  for (const auto& out : graph.output())
    if (!defined.count(out.name()))
      VDNN_THROW(source << ": the graph's output '" << out.name() << "' is defined by no node, input or initializer");
}

// The useful part of a libonnx assertion ("file:line: fn: Assertion `...` failed: <reason>").
std::string converter_reason(const std::string& what) {
  std::string reason = what.substr(0, what.find('\n'));
  const std::string failed = "failed: ";
  if (const size_t at = reason.rfind(failed); at != std::string::npos) reason = reason.substr(at + failed.size());
  return reason.empty() ? "no reason given" : reason;
}

}  // namespace

int64_t default_opset(const onnx::ModelProto& model, const std::string& source) {
  int64_t opset = 0, found = 0;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version(), ++found;
  if (found == 0) VDNN_THROW(source << ": imports no opset of the default ONNX domain (opset_import)");
  if (found > 1) VDNN_THROW(source << ": imports the default ONNX domain " << found << " times (opset_import)");
  return opset;
}

std::string convert_to_opset(onnx::ModelProto& model, const std::string& source, int64_t target) {
  const int64_t from = default_opset(model, source);
  check_convertible(model.graph(), source);
  const std::string what =
      VDNN_MSG(source << ": opset " << from << " converted to " << target << " with ONNX's version converter (libonnx "
                      << onnx::LAST_RELEASE_VERSION << ")");
  try {
    onnx::shape_inference::InferShapes(model);  // not strict: a value it cannot infer stays unknown
    model = onnx::version_conversion::ConvertVersion(model, static_cast<int>(target));
  } catch (const std::exception& e) {
    VDNN_THROW(source << ": opset " << from << " is older than vdnn reads (13), and ONNX's version converter (libonnx "
                      << onnx::LAST_RELEASE_VERSION << ") cannot convert it: " << converter_reason(e.what())
                      << " (export with opset_version=13 or newer)");
  }
  return what;
}

}  // namespace vdnn
