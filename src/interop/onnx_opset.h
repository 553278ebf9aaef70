// interop/onnx_opset.h — an ONNX model brought to the opset the importer reads (13 or newer).
//
// Model: the importer translates opset 13's operators. A file of an older opset is converted with
// libonnx's own version converter (onnx/version_converter/convert.h: Clip's bounds and Dropout's
// ratio become inputs, Softmax's axis gets opset 13's meaning, BatchNormalization loses is_test,
// ...), after libonnx's shape inference (the Softmax adapter needs its input's rank); the result
// says so in one line, which the importer keeps in its notes. The converter dereferences what it
// assumes (every value read is defined somewhere), so those assumptions are checked first and a
// file that breaks them is one error naming the value. Anything the converter refuses (an
// operator with no adapter between two opsets) is one error naming the file and the opsets.
//
//   int64_t opset = default_opset(model, "m.onnx");                 // 11
//   std::string note = convert_to_opset(model, "m.onnx", 13);      // "m.onnx: opset 11 converted to 13 ..."
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace vdnn {

// The version of the default domain ("" or "ai.onnx") the model imports; throws naming `source`
// when it imports none, or two.
int64_t default_opset(const onnx::ModelProto& model, const std::string& source);

// Converts `model` in place from its default opset to `target` (greater); returns the note that
// says so. Throws vdnn::Error naming `source` when the converter cannot.
std::string convert_to_opset(onnx::ModelProto& model, const std::string& source, int64_t target);

}  // namespace vdnn
