// interop/onnx_import.h — an ONNX model (e.g. torch.onnx.export of a torchvision network) as a vdnn
// model description plus its initializers.
//
// Model: the ONNX graph is read with libonnx's protobuf classes (never a parser of our own) and
// translated node by node into the layers of io/model_file.h; the result goes through the same
// checked path as a JSON model file. Each parameterised layer is named after its initializers'
// common prefix ("features.0.weight" -> layer "features.0"), so vdnn's tensor names are the
// initializers' own names and a checkpoint loads into PyTorch with load_state_dict. ONNX strings
// are bytes (protobuf does not check them): a name that is not UTF-8 is given with its invalid bytes
// as `\xNN` (util/utf8.h), so every file, picture and message can hold it, and a state_dict saved
// from the model loads back into the same file's import by the same names. Supported: the
// operators torchvision's classification networks export to (docs/interop.md lists them with their
// attributes); anything else is one vdnn::Error naming the file, the node, the operator and what
// is supported — never a silently different network. A file older than opset 13 is converted
// first with libonnx's version converter (interop/onnx_opset.h); what the import changed or
// assumed (that conversion, a trailing Softmax) is a line each in `notes`.
//
//   ImportedModel m = import_onnx("resnet18.onnx");
//   Graph g = parse_model(m.model, "resnet18.onnx");
//   // m.weights: "conv1.weight" [64, 3, 7, 7], "bn1.running_mean" [64], ...
//   for (const std::string& note : m.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/model_file.h"
#include "io/safetensors.h"

namespace vdnn {

struct ImportedModel {
  nlohmann::json model;            // a vdnn model description (io/model_file.h)
  SafeTensors weights;             // the initializers, under vdnn's tensor names, in vdnn's plain layouts
  std::vector<std::string> notes;  // one line each: what the import converted or assumed
  // The file's output is the softmax of the model's logits (a trailing Softmax: vdnn's loss and
  // `vdnn infer --predictions` apply it; the logits are its input).
  bool output_is_softmax = false;
};

// The ONNX operators the importer translates (the default domain), sorted by name.
const std::vector<std::string>& onnx_import_operators();

// Reads `path`; throws vdnn::Error naming the file (and the node) on anything it cannot import.
ImportedModel import_onnx(const std::string& path, const ModelOptions& options = {});
// The same from the file's bytes; `source` names it in errors (the fuzz target's entry point).
ImportedModel import_onnx_bytes(std::string_view bytes, const std::string& source, const ModelOptions& options = {});

}  // namespace vdnn
