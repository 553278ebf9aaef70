#include "interop/network_source.h"

#include "interop/onnx_import.h"

namespace vdnn {

bool is_onnx_path(const std::string& name_or_path) {
  const std::string ext = ".onnx";
  return name_or_path.size() > ext.size() &&
         name_or_path.compare(name_or_path.size() - ext.size(), ext.size(), ext) == 0;
}

NetworkSource load_network(const std::string& name_or_path, const ModelOptions& options) {
  if (!is_onnx_path(name_or_path)) return {load_model(name_or_path, options), {}};
  ImportedModel imported = import_onnx(name_or_path, options);
  return {parse_model(imported.model, name_or_path), std::move(imported.weights), std::move(imported.notes)};
}

}  // namespace vdnn
