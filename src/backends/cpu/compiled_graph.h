// backends/cpu/compiled_graph.h — a graph's kernels for one batch size, and what they declare.
//
// Model: kernels are created in graph order; each value's layout is what its producer chose
// (blocked, format_tag::any), the input is plain NCHW. The kernels' declared sizes are the facts
// the Program builder and the memory planner work from, so `vdnn plan` and `vdnn train` see the
// same numbers. Nothing here allocates tensor memory. Convolutions use `conv_algo`, or per node
// `per_node[i]` when given (vDNN_dyn's choice; other layers ignore it). A ReLU running in place on
// a convolution's output is fused into it (kernel_setup). In bf16 (`precision`) the input and every
// value but the logits are bf16.
//
//   CompiledGraph cg(graph, /*batch=*/64, /*seed=*/1, engine);
//   Program p = build_program(graph, cg.value_bytes(), cg.facts(), {Policy::kAll});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/kernel.h"
#include "core/graph.h"
#include "plan/program_builder.h"

namespace vdnn {

// What node `n`'s kernel is created from: its layer, shapes, its inputs in the layouts of
// `value_mds` (their producers' choices), in-place and fusion decisions. The seed and the
// convolution algorithm are left for the caller. In bf16 the layer that writes the loss's input
// (through layers running in place on it) writes f32; throws vdnn::Error naming the layer when
// that is not a layer that can (fc, flatten) or when the logits feed anything but the loss.
KernelSetup kernel_setup(const Graph& graph, int n, int64_t batch, const std::vector<dnnl::memory::desc>& value_mds,
                         Precision precision = Precision::kFp32);

// A convolution's other oneDNN kernels besides `base` (its direct kernel, made from `setup`), in
// order: "winograd" where oneDNN has one for it here, then what kAuto (`vdnn train`'s default)
// runs: "gemm" where it takes the weight gradient by GEMM (conv_auto_uses_gemm_weights), else
// "auto", oneDNN's own pick — mostly the same kernel as direct or winograd, which `same_as` then
// names, so that it is measured once. Each only when it keeps base's output and parameter layouts
// (so the graph's other kernels are unchanged). What `vdnn profile` times and the CPU target lists
// as a convolution's algorithms; the kAuto one is what a Net runs by default (NodeCost::runs_by_default).
struct CpuConvAlternative {
  std::string name;
  ConvAlgo algo;
  std::unique_ptr<CpuKernel> kernel;
  int same_as = -1;  // the same kernel as base (0) or as alternative same_as - 1: its costs are that one's
};
std::vector<CpuConvAlternative> cpu_conv_alternatives(KernelSetup setup, const CpuKernel& base,
                                                      const dnnl::engine& engine);

class CompiledGraph {
 public:
  CompiledGraph(const Graph& graph, int64_t batch, uint64_t seed, const dnnl::engine& engine,
                ConvAlgo conv_algo = ConvAlgo::kAuto, std::vector<ConvAlgo> per_node = {},
                std::vector<int> sub_batches = {}, Precision precision = Precision::kFp32);

  int64_t batch() const { return batch_; }
  Precision precision() const { return precision_; }
  const CpuKernel& kernel(int node) const { return *kernels_[node]; }
  std::vector<CpuKernel*> kernels() const;
  const dnnl::memory::desc& value_md(ValueId v) const { return value_mds_[v]; }
  const std::vector<dnnl::memory::desc>& value_mds() const { return value_mds_; }
  std::vector<size_t> value_bytes() const;
  std::vector<NodeFacts> facts() const;
  // The training Program (with `policy`, `sync`) or the evaluation Program (no backward).
  Program program(Policy policy, SyncMode sync, bool training, int prefetch_depth = 0) const;

 private:
  const Graph& graph_;
  int64_t batch_;
  Precision precision_;
  std::vector<std::unique_ptr<CpuKernel>> kernels_;
  std::vector<bool> in_place_;
  std::vector<dnnl::memory::desc> value_mds_;
};

}  // namespace vdnn
