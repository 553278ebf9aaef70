// rewrites/param_lookup.h — a layer parameter's tensor in a weights file, for the graph rewrites
// that rewrite weights too (rewrites/inference_rewrites.h, rewrites/fc_split.h); internal to rewrites.
//
// Model: parameter `spec` of node `node` is the tensor "<layer>.<spec.name>" (PyTorch's names), in
// its plain dims or the file's shape (ParamSpec::file_dims), as runtime/checkpoint.h's load_weights
// takes it. A checkpoint's SGD momentum of a parameter is "<name>:momentum".
//
//   const ParamSpec& spec = *find_spec(graph, node, "weight");
//   const SafeTensor& w = require_param(weights, graph, node, spec, "the fc split of model 'vgg16'");
#pragma once

#include <string>

#include "core/graph.h"
#include "io/safetensors.h"

namespace vdnn {

inline const std::string kMomentumSuffix = ":momentum";

// "<layer>.<param>"
std::string param_name(const Graph& g, int node, const ParamSpec& spec);
// Parameter `name` of `node`, or null when the layer has none.
const ParamSpec* find_spec(const Graph& g, int node, const std::string& name);
// The file's tensor for `spec` of `node`; throws vdnn::Error naming the file, the tensor, both
// shapes and `who` needs it when it is missing or misshapen.
const SafeTensor& require_param(const SafeTensors& weights, const Graph& g, int node, const ParamSpec& spec,
                                const std::string& who);

}  // namespace vdnn
