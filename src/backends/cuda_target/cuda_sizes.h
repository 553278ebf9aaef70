// backends/cuda_target/cuda_sizes.h — what each CUDA kernel declares, from shapes alone.
//
// Model: the CUDA backend keeps every value and parameter in plain fp32 layouts, so its sizes are a
// function of the layer, the batch and the shapes; no device is needed to know them. These
// functions are the ONLY place those sizes are written down: the CUDA kernels
// (src/backends/cuda/*, CudaKernel::declare_sizes) and the device-free CUDA target
// (cuda_target.h, what `vdnn plan --device <gpu>` plans with) both call them, so a plan for a GPU
// and the run on it cannot disagree. This file is plain C++ (no CUDA header) and always compiled.
//
// Per layer type (fp32 = 4 bytes per element, n = batch):
//   out        n x out elements x 4; the loss: one float (the batch mean); embedding reads int32
//              token ids (the input, 4 bytes per token as a float)
//   params     Layer::params elements x 4 (plain OIHW filters, [units, C, H, W] FC weights, ...)
//   saved      max_pool: one int32 argmax per output element; lrn: a copy of y (cuDNN's backward
//              reads it); batch_norm: batch mean and inverse std per channel; dropout: a float
//              mask per element; softmax_cross_entropy, token_cross_entropy: the probabilities;
//              layer_norm: mean and inverse std per token; attention: the probabilities N*H*T*T
//              (materialized, + a byte mask with dropout) or the log-sum-exp N*H*T (fused)
//   scratch    the losses: the labels as int32 on the device (token_cross_entropy: n x T);
//              batch_norm or layer_norm whose input needs no gradient: a throw-away data gradient;
//              conv: its workspace reservation for `conv_algo` (cuda_conv_workspace_bytes);
//              attention: dP (and the dropped probabilities) N*H*T*T floats (materialized), D and
//              a dQ accumulator (fused)
//
// In bf16 (a plan of a device profile with --precision bf16; the CUDA kernels themselves run fp32
// only, and CudaBackend refuses bf16), the sizes are those of the CPU backend's bf16 model
// (docs/design/mixed-precision.md): activations and their gradients, dropout masks, LRN's y and
// the materialized attention probabilities are 2 bytes per element; the layer writing a loss's
// input writes fp32 (the logits rule), and the weights, their gradients, the statistics (batch and
// layer norm, the log-sum-exp), the loss's probabilities, argmax indices, token ids and labels
// stay 4 bytes; a convolution, fc or linear casts its fp32 weights to bf16 in scratch each call.
// Workspaces (convolution, attention's dP) are kept at their fp32 size: an upper bound.
//
//   CudaSizes s = cuda_kernel_sizes(layer, 64, {in}, out, /*input0_needs_grad=*/true, ConvAlgo::kDirect);
//   s.saved_bytes;  // max_pool: {64 * out.elements() * 4}
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/conv_algo.h"
#include "core/graph.h"
#include "core/layer.h"
#include "core/precision.h"
#include "core/shape.h"

namespace vdnn {

class ConvLayer;

// What a CUDA kernel is made from (CudaBackend makes one per node; the kernels live in
// backends/cuda, this description is plain C++ so the device-free target can build it too).
struct CudaKernelSetup {
  const Layer& layer;
  int64_t batch = 1;
  std::vector<Shape> in_shapes;
  Shape out_shape;
  bool in_place = false;               // output shares input 0's buffer
  std::vector<bool> input_needs_grad;  // false for the graph input; empty: all true
  uint64_t seed = 0;                   // dropout masks
  ConvAlgo conv_algo = ConvAlgo::kAuto;
  int sub_batches = 1;                  // conv: run in this many slices of the batch; its workspace is one slice's
  std::optional<size_t> workspace_cap;  // conv: reserve at most this (BackendOptions::conv_workspace_bytes)
  Precision precision = Precision::kFp32;  // the activations' type (the CUDA target's bf16 plans)
  bool f32_output = false;                 // bf16: this layer writes a loss's input, in fp32

  bool needs_grad(size_t input) const { return input >= input_needs_grad.size() || input_needs_grad[input]; }
};

// The setup of node `node`: its shapes, which inputs need a gradient (all but the graph input),
// whether it runs in place, `conv_algo`, `precision` (and in bf16 whether it writes a loss's
// input). The one place a node becomes a setup, for CudaBackend and the CUDA target alike (the
// backend adds the dropout seed).
CudaKernelSetup cuda_kernel_setup(const Graph& graph, int node, int64_t batch, ConvAlgo conv_algo,
                                  Precision precision = Precision::kFp32);

struct CudaSizes {
  size_t out_bytes = 0;
  std::vector<size_t> param_bytes;
  std::vector<size_t> saved_bytes;
  size_t scratch_bytes = 0;
  // Per saved buffer: written wholly by the forward from its inputs (max pool's argmax, LRN's y),
  // so a recompute would regenerate it (NodeFacts::saved_regenerated).
  std::vector<bool> saved_regenerated;
};

// fp32 bytes of `batch` samples of `shape`.
inline size_t float_bytes(int64_t batch, const Shape& shape) {
  return static_cast<size_t>(batch * shape.elements()) * sizeof(float);
}

// The bytes of `batch` samples of `shape` as activations in `precision` (bf16: 2 per element).
inline size_t activation_bytes(int64_t batch, const Shape& shape, Precision precision) {
  return static_cast<size_t>(batch * shape.elements()) * (precision == Precision::kBf16 ? 2 : sizeof(float));
}

// Throws vdnn::Error naming the layer for a type the CUDA backend has no kernel for. `precision`,
// `f32_output`: as CudaKernelSetup's.
CudaSizes cuda_kernel_sizes(const Layer& layer, int64_t batch, const std::vector<Shape>& in_shapes,
                            const Shape& out_shape, bool input0_needs_grad, ConvAlgo conv_algo,
                            Precision precision = Precision::kFp32, bool f32_output = false);

// The same, for a setup (what CudaKernel::declare_sizes and the CUDA target call).
CudaSizes cuda_kernel_sizes(const CudaKernelSetup& s);

// The workspace the CUDA backend reserves for a convolution run with `algo`, and the most any of
// its cuDNN passes may use (the live kernel refuses an algorithm that asks more). It is the
// modelled workspace of plan/conv_algorithms.h: kDirect -> implicit_gemm's; kWinograd ->
// winograd's where it applies (3x3 stride 1), else implicit_gemm's; kAuto -> the largest of the
// algorithms that apply (cuDNN's measured choice may be any of them).
size_t cuda_conv_workspace_bytes(const ConvLayer& layer, const Shape& in, const Shape& out, int64_t batch,
                                 ConvAlgo algo);

}  // namespace vdnn
