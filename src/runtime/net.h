// runtime/net.h — a graph bound to kernels, a budgeted device arena and a planned Program.
//
// Model: the kernels are created once (oneDNN picks blocked layouts); their declared sizes feed
// the Program builder for the training step (with the chosen offload policy and sync mode) and for
// evaluation; the memory planner fixes every offset inside one arena of `device_memory` bytes
// (0: exactly what the plans need) and the Executor runs the Programs on a CPU device whose copy
// engine may emulate a PCIe link. A budget below what a Program needs is refused here, before
// training, with the smallest budget that works. Parameters, their gradients and momentum live in
// the arena too; export/import and the weights hash go through plain layouts.
//
//   Net net(load_model("fmnist_cnn"), {.batch = 128, .seed = 1, .policy = Policy::kAll,
//                                      .device_memory = 64 << 20});
//   net.set_batch(images, labels, 128);
//   float loss = net.forward(/*training=*/true);
//   net.backward();
//   net.run_on_compute([&] { sgd.step(net.params(), lr); });
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/kernel.h"
#include "core/graph.h"
#include "device/cpu_device.h"
#include "memory/host_pool.h"
#include "plan/memory_plan.h"
#include "plan/program.h"
#include "runtime/compiled_graph.h"
#include "runtime/executor.h"
#include "util/aligned_buffer.h"

namespace vdnn {

struct NetOptions {
  int64_t batch = 64;
  uint64_t seed = 1;
  Policy policy = Policy::kNone;
  SyncMode sync = SyncMode::kEvent;
  size_t device_memory = 0;  // bytes; 0: as much as the plans need
  LinkModel link;
  // false: vDNN's prefetch rule. true: look ahead as many backward layers as the budget allows
  // (without a budget: as far as fits in what vDNN's rule needs).
  bool prefetch_ahead = false;
  ConvAlgo conv_algo = ConvAlgo::kAuto;
};

struct ParamTensor {
  std::string name;  // "conv1.weight"
  ParamSpec spec;
  dnnl::memory::desc md;  // the kernel's layout
  float* data = nullptr;
  float* grad = nullptr;      // null for non-trainable (running statistics)
  float* velocity = nullptr;  // SGD momentum, null for non-trainable
};

class Net {
 public:
  Net(Graph graph, const NetOptions& options);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  const Graph& graph() const { return graph_; }
  int64_t batch() const { return batch_; }
  const NetOptions& options() const { return options_; }

  // Copies `valid` <= batch samples (plain NCHW floats) and labels in; the rest is zero-filled.
  void set_batch(const float* images, const int32_t* labels, int64_t valid);
  // Runs the forward pass and returns the mean loss over the valid samples.
  float forward(bool training);
  // Runs the backward pass: gradients of every trainable parameter are ready afterwards.
  void backward();
  // Runs `work` (e.g. the optimizer step) on the compute stream and waits for it. All OpenMP work
  // must start from that one thread: a second OpenMP master (the host thread) keeps a second team
  // of spinning threads that steals the two cores from the kernels.
  void run_on_compute(const std::function<void()>& work);
  // Samples among the valid ones whose arg-max logit equals their label (after forward).
  int64_t correct() const { return result_.correct; }

  std::vector<ParamTensor>& params() { return params_; }
  const std::vector<ParamTensor>& params() const { return params_; }
  std::vector<float> export_param(size_t i) const;                 // plain layout
  void import_param(size_t i, const std::vector<float>& plain);   // plain layout
  // SHA-256 over every parameter and running statistic, plain layouts, in graph order.
  std::string weights_sha256() const;

  const CpuKernel& kernel(int node) const { return compiled_->kernel(node); }
  const Program& train_program() const { return train_; }
  const MemoryPlan& train_plan() const { return train_plan_; }
  const MemoryPlan& eval_plan() const { return eval_plan_; }
  size_t arena_bytes() const { return arena_.bytes(); }
  int prefetch_depth() const { return prefetch_depth_; }  // 0: vDNN's rule
  Device& device() { return *device_; }

 private:
  void plan(const NetOptions& options);
  void choose_prefetch_depth(size_t capacity, Program& program, MemoryPlan& plan);
  void bind_params();
  void init_params(uint64_t seed);

  Graph graph_;
  int64_t batch_;
  NetOptions options_;
  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  std::unique_ptr<CompiledGraph> compiled_;
  Program train_, eval_;
  MemoryPlan train_plan_, eval_plan_;
  AlignedBuffer arena_;
  std::unique_ptr<Device> device_;
  HostPool host_pool_;
  std::unique_ptr<Executor> executor_;
  std::vector<ParamTensor> params_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
  int64_t valid_ = 0;
  uint64_t step_ = 0;
  int prefetch_depth_ = 0;
  StepResult result_;
};

}  // namespace vdnn
