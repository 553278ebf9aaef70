#include "interop/onnx_import.h"

#include "vdnn/error.h"

namespace vdnn {

ImportedModel import_onnx_bytes(std::string_view bytes, const std::string& source,
                                const ModelOptions& options) {
  VDNN_THROW(source << ": ONNX import is being written");
}

ImportedModel import_onnx(const std::string& path, const ModelOptions& options) {
  return import_onnx_bytes({}, path, options);
}

}  // namespace vdnn
