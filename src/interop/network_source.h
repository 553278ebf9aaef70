// interop/network_source.h — a network from any model source vdnn reads, with its initial weights.
//
// Model: `--model` names a shipped model ("resnet18"), a vdnn JSON file or an ONNX file (by its
// ".onnx" extension). JSON models start from vdnn's seeded initialisation; an ONNX model starts
// from its initializers, which `initial_weights` holds under vdnn's tensor names
// ("<layer>.<param>", for a PyTorch export the state_dict's own names, e.g. "layer1.0.conv1.weight").
//
//   NetworkSource s = load_network("resnet18.onnx", {.input = Shape{3, 64, 64}});
//   Net net(std::move(s.graph), {.batch = 32});
//   if (!s.initial_weights.tensors.empty()) load_weights(s.initial_weights, net);
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "io/model_file.h"
#include "io/safetensors.h"

namespace vdnn {

struct NetworkSource {
  Graph graph;
  SafeTensors initial_weights;     // empty: start from vdnn's initialisation
  std::vector<std::string> notes;  // what an ONNX import converted or assumed (ImportedModel::notes)
};

// True when `name_or_path` names an ONNX file (ends in ".onnx").
bool is_onnx_path(const std::string& name_or_path);
// The graph (and an ONNX file's initializers); throws vdnn::Error naming the file, node or layer.
NetworkSource load_network(const std::string& name_or_path, const ModelOptions& options = {});

}  // namespace vdnn
