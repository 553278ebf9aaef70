// interop/onnx_export.h — a vdnn network and its weights as an ONNX model for inference (opset 13),
// built with libonnx's protobuf classes and validated by libonnx's checker and shape inference.
//
// Model: one input "input" [N, C, H, W] (or [N, K]) with a fixed batch N, one output "logits"
// [N, classes]; the loss layer is left out and dropout (the identity at inference) too. Batch norm
// becomes BatchNormalization with the running statistics (inference mode); fc becomes Gemm with
// transB=1 (after a Flatten when its input is an image); pooling keeps vdnn's exact windows
// (explicit pads, never ceil_mode; an average whose divisor counts padding and whose ceil-mode
// window runs past it is scaled to PyTorch's divisor). Every
// parameter becomes an initializer named as vdnn's tensor ("<layer>.<param>"; for a model imported
// from PyTorch, the state_dict's own names) in ONNX's layout (grouped conv weights [O, I/g, kH, kW],
// fc weights [units, K]). Without weights the parameters become graph inputs of the same names and
// shapes instead: a valid model of the same structure, cheap to check for any network size.
// After building, the model goes through onnx::checker::check_model and strict shape inference,
// and every value's inferred shape must equal vdnn's; a layer kind or setting ONNX cannot express
// is one vdnn::Error naming the layer.
//
//   onnx::ModelProto m = export_onnx(net_graph, &weights, {.batch = 1});
//   write_onnx("out.onnx", m);                       // atomic (util/atomic_file.h)
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "core/graph.h"
#include "io/safetensors.h"

namespace vdnn {

inline constexpr int kOnnxExportOpset = 13;

struct OnnxExportOptions {
  int64_t batch = 1;  // the fixed N of "input" and "logits"
};

// `weights`: every parameter and running statistic under its vdnn name, in plain layout (as
// runtime/checkpoint.h writes them); null: parameters become graph inputs. Throws vdnn::Error naming
// the layer (unsupported kind) or the tensor (missing, misshapen).
onnx::ModelProto export_onnx(const Graph& graph, const SafeTensors* weights, const OnnxExportOptions& options = {});

// Serializes `model` to `path` atomically; throws vdnn::Error naming the path.
void write_onnx(const std::string& path, const onnx::ModelProto& model);

}  // namespace vdnn
