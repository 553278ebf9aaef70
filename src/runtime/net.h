// runtime/net.h — a graph bound to oneDNN kernels and buffers for one batch size; runs a step.
//
// Model: every value gets one buffer in the layout its producer's kernel chose (in-place ReLU shares
// its input's buffer); every value but the input gets a gradient buffer. A value read by several
// layers receives the sum of their gradients. Parameters live in the kernels' preferred (blocked)
// layouts; export/import and the weights hash go through plain layouts, so they do not depend on
// what oneDNN chose. Issue 3's Program executor replaces this plain allocation with the budgeted
// device pool and offloading; the kernels do not change.
//
//   Net net(load_model("fmnist_cnn"), {.batch = 128, .seed = 1});
//   net.set_batch(images, labels, 128);
//   float loss = net.forward(/*training=*/true);
//   net.backward();
//   sgd.step(net.params(), lr);
//   std::string h = net.weights_sha256();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/kernel.h"
#include "core/graph.h"
#include "util/aligned_buffer.h"

namespace vdnn {

struct NetOptions {
  int64_t batch = 64;
  uint64_t seed = 1;
};

struct ParamTensor {
  std::string name;  // "conv1.weight"
  ParamSpec spec;
  dnnl::memory::desc md;  // the kernel's layout
  float* data = nullptr;
  float* grad = nullptr;  // null for non-trainable (running statistics)
};

class Net {
 public:
  Net(Graph graph, const NetOptions& options);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  const Graph& graph() const { return graph_; }
  int64_t batch() const { return batch_; }

  // Copies `valid` <= batch samples (plain NCHW floats) and labels in; the rest is zero-filled.
  void set_batch(const float* images, const int32_t* labels, int64_t valid);
  // Runs the forward pass and returns the mean loss over the valid samples.
  float forward(bool training);
  // Runs the backward pass: gradients of every trainable parameter are ready afterwards.
  void backward();
  // Samples among the valid ones whose arg-max logit equals their label (after forward).
  int64_t correct() const;

  std::vector<ParamTensor>& params() { return params_; }
  const std::vector<ParamTensor>& params() const { return params_; }
  std::vector<float> export_param(size_t i) const;                 // plain layout
  void import_param(size_t i, const std::vector<float>& plain);   // plain layout
  // SHA-256 over every parameter and running statistic, plain layouts, in graph order.
  std::string weights_sha256() const;

  // Introspection for reports and tests.
  const CpuKernel& kernel(int node) const { return *kernels_[node]; }
  const dnnl::memory::desc& value_md(ValueId v) const { return value_mds_[v]; }
  const float* value_data(ValueId v) const;
  const float* value_grad(ValueId v) const;
  size_t allocated_bytes() const;

 private:
  void build_kernels(uint64_t seed);
  void allocate();
  void init_params(uint64_t seed);
  void accumulate(ValueId v, void* addend);
  KernelArgs args_for(int node) const;

  Graph graph_;
  int64_t batch_;
  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  std::vector<std::unique_ptr<CpuKernel>> kernels_;
  std::vector<bool> in_place_;                 // per node
  std::vector<dnnl::memory::desc> value_mds_;  // per value
  std::vector<AlignedBuffer> buffers_;
  std::vector<int> data_of_, grad_of_;         // value -> buffer index (-1: none)
  std::vector<std::vector<int>> saved_of_;     // node -> buffer indices of kernel-saved state
  std::vector<int> param_buffer_;              // param -> buffer index
  std::vector<ParamTensor> params_;
  std::vector<std::vector<size_t>> params_of_node_;  // node -> indices into params_
  std::vector<AlignedBuffer> accum_temps_;    // one per input slot, for gradient accumulation
  std::vector<bool> grad_written_;
  AlignedBuffer scratch_;
  AlignedBuffer labels_;
  int64_t valid_ = 0;
  uint64_t step_ = 0;
};

}  // namespace vdnn
