#include "core/graph_digest.h"

#include <sstream>

#include "util/sha256.h"

namespace vdnn {
namespace {

void describe_param(std::ostream& out, const ParamSpec& p) {
  out << " " << p.name << "[" << Shape(p.dims).to_string() << "] init " << static_cast<int>(p.init)
      << (p.trainable ? " trainable" : "") << (p.decay ? " decayed" : "");
}

}  // namespace

std::string graph_digest(const Graph& graph) {
  std::ostringstream text;
  text << "input " << graph.input_shape().to_string() << " classes " << graph.classes() << "\n";
  for (const Node& node : graph.nodes()) {
    text << node.layer->type() << " in";
    for (ValueId v : node.inputs) text << " " << v;
    text << " out " << graph.value(node.output).shape.to_string() << " slices " << node.slices << " params";
    for (const ParamSpec& p : node.params) describe_param(text, p);
    text << " settings " << node.layer->original().settings() << "\n";
  }
  const std::string s = text.str();
  return sha256_hex(s.data(), s.size());
}

}  // namespace vdnn
