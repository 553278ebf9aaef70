// backends/cpu/kernel.h — a layer's computation on oneDNN, with every buffer handed in.
//
// Model: a kernel is created once per layer from the layer description and the memory descriptors of
// its inputs (blocked layouts chosen by oneDNN, format_tag::any). It then declares everything the
// executor must provide: its output descriptor, its parameters' descriptors, kernel-private state
// saved from forward to backward (pooling indices, BN statistics, dropout mask, softmax output) and
// its scratchpad bytes (oneDNN user scratchpad mode). Kernels never allocate: forward/backward get
// raw pointers in KernelArgs, so the executor decides where each byte lives (device pool, host).
// Backward overwrites d_in[i] (gradients are accumulated by the executor, not the kernel); a null
// d_in[i] means that input needs no gradient (the graph input).
//
//   KernelSetup setup{layer, /*batch=*/32, in_shapes, out_shape, in_mds, /*in_place=*/false, 7};
//   auto kernel = make_cpu_kernel(setup, engine);
//   args.in = {x}; args.out = y; args.params = {w, b}; args.scratch = scratch;
//   kernel->forward(stream, args);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend_api/kernel_args.h"
#include "core/conv_algo.h"
#include "core/layer.h"
#include "core/precision.h"

namespace vdnn {

struct KernelSetup {
  const Layer& layer;
  int64_t batch = 1;
  std::vector<Shape> in_shapes;
  Shape out_shape;
  std::vector<dnnl::memory::desc> in_mds;
  bool in_place = false;               // output shares input 0's buffer
  std::vector<bool> input_needs_grad;  // false for the graph input
  uint64_t seed = 0;                   // for dropout masks
  ConvAlgo conv_algo = ConvAlgo::kAuto;
  // > 1: the layer runs in this many equal slices of the batch, one kernel compiled at batch /
  // sub_batches (sub_batched_kernel.cc; convolutions only).
  int sub_batches = 1;
  // Fusion (kernel_setup decides): a convolution, batch norm or two-input add followed by a ReLU
  // (conv, add: or ReLU6) that runs in place applies it, and that layer's forward does nothing. Its
  // backward is unchanged, except after batch norm, whose backward applies the ReLU's too.
  bool applies_relu = false;              // y = max(0, f(x)), or min(max(0, f(x)), relu_ceiling)
  float relu_ceiling = 0.f;               // with applies_relu: 0 for ReLU, 6 for ReLU6
  bool relu_done_before = false;          // relu, relu6: its producer already applied it ...
  bool relu_backward_done_after = false;  // ... and the producer's backward applies its backward
  // bf16: activations, their gradients and conv/FC arithmetic in bfloat16; parameters, their
  // gradients, batch-norm statistics stay f32. The kernel that writes the loss's input (the logits)
  // writes it in f32 (`f32_output`, kernel_setup's logits rule), so the loss reads f32 in either.
  Precision precision = Precision::kFp32;
  bool f32_output = false;

  dnnl::memory::data_type act_dt() const {
    return precision == Precision::kBf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  }
  dnnl::memory::data_type out_dt() const { return f32_output ? dnnl::memory::data_type::f32 : act_dt(); }
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  virtual void forward(dnnl::stream& stream, const KernelArgs& args) = 0;
  virtual void backward(dnnl::stream& stream, const KernelArgs& args) = 0;

  dnnl::memory::desc out_md;
  std::vector<dnnl::memory::desc> param_mds;
  std::vector<dnnl::memory::desc> saved_mds;
  size_t scratch_bytes = 0;
  // The scratch the forward pass alone uses (a prefix of scratch_bytes: backward-only buffers are
  // placed after it), for a Net that only infers (NodeFacts::forward_scratch_bytes); unset: all of it.
  std::optional<size_t> forward_scratch_bytes;
  std::string implementation;  // oneDNN's name for the forward implementation, e.g. "jit:avx512_core"
  // Passes left on oneDNN's reference kernel (orders of magnitude slower) because no layout tried
  // has a faster one, e.g. "backward weights: ref:any". make_cpu_kernel warns once per layer.
  std::vector<std::string> slow_kernels;
  // The forward writes every saved buffer wholly from its inputs (pooling argmax, LRN workspace):
  // a recompute regenerates them, so they need not be kept (NodeFacts::saved_regenerated).
  bool forward_writes_saved = false;
  // Its backward does nothing: the producer's backward does its work (NodeFacts::backward_done_by_producer).
  bool backward_done_by_producer = false;
};

// Whether oneDNN names `impl` as one of its reference implementations ("ref:any", "lrn_ref:any"):
// plain loops, orders of magnitude slower than its JIT kernels.
bool is_reference_implementation(const std::string& impl);

// Throws vdnn::Error naming the layer when oneDNN cannot implement it. A kernel whose forward is
// oneDNN's reference implementation gets it added to slow_kernels; a kernel with slow_kernels gets
// one warning line on stderr per layer name ("warning: layer 'g1' (conv) runs oneDNN's reference
// kernel ..."), and the run report lists them per layer (Backend::slow_kernels).
std::unique_ptr<CpuKernel> make_cpu_kernel(const KernelSetup& setup, const dnnl::engine& engine);

// Whether this convolution under ConvAlgo::kAuto computes its weight gradient by one GEMM instead
// of oneDNN's kernel (outputs below 4x4, one group; backends/cpu/conv_gemm_weights.h). `vdnn
// profile` measures that variant as the algorithm "gemm".
bool conv_auto_uses_gemm_weights(const KernelSetup& setup);

}  // namespace vdnn
