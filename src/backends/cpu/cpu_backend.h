// backends/cpu/cpu_backend.h — the Backend on oneDNN and the CPU device (threads + copy engine).
//
// Model: wraps the CompiledGraph (oneDNN kernels in blocked layouts) and a CpuDevice. Compute work
// runs on the compute stream's worker thread with one dnnl::stream that only that thread uses;
// gradient sums are oneDNN `sum` primitives (cached by size), the SGD update an OpenMP loop, the
// arena and host memory plain aligned RAM, and parameters cross the edge through oneDNN reorders
// between the kernel's layout and the plain one. Nothing here changes the math of the CPU path. In
// bf16 (BackendOptions::precision; refused on a CPU without native bf16) the input is cast as it
// is loaded and gradient sums add bf16.
//
//   CpuBackend cpu(graph, {.batch = 32, .seed = 1});
//   Program p = build_program(graph, cpu.value_bytes(), cpu.facts(), {Policy::kAll});
//   cpu.device().launch(StreamKind::kCompute, [&] { cpu.forward(0, args); });
#pragma once

#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend_api/backend.h"
#include "backends/cpu/compiled_graph.h"

namespace vdnn {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Graph& graph, const BackendOptions& options);
  ~CpuBackend() override;

  const char* name() const override { return "cpu"; }
  Device& device() override { return *device_; }
  std::vector<size_t> value_bytes() const override { return compiled_.value_bytes(); }
  std::vector<NodeFacts> facts() const override { return compiled_.facts(); }
  std::string implementation(int node) const override { return compiled_.kernel(node).implementation; }
  std::vector<std::string> slow_kernels(int node) const override { return compiled_.kernel(node).slow_kernels; }
  bool all_finite(const void* device_data, size_t bytes) override {  // the arena is host memory
    return all_finite_floats(static_cast<const float*>(device_data), bytes / sizeof(float));
  }
  double sum_of_squares(const void* device_data, size_t bytes) override {
    return sum_of_squares_floats(static_cast<const float*>(device_data), bytes / sizeof(float));
  }
  std::unique_ptr<DeviceBuffer> allocate_arena(size_t bytes) override;
  HostMemory host_memory() const override { return HostMemory::aligned(); }
  bool supports_recompute() const override { return true; }  // kernels honour KernelArgs::recompute

  void forward(int node, const KernelArgs& args) override;
  void backward(int node, const KernelArgs& args) override;
  void accumulate(void* into, const void* addend, size_t bytes) override;
  void load_input(void* dst, const float* host_src, size_t bytes) override;
  void sgd_update(const SgdUpdate& u) override;
  void sgd_update_all(const std::vector<SgdUpdate>& updates) override;
  void adamw_update(const AdamwUpdate& u) override;
  void adamw_update_all(const std::vector<AdamwUpdate>& updates) override;

  void download(void* host_dst, const void* device_src, size_t bytes) override;
  void upload(void* device_dst, const void* host_src, size_t bytes) override;
  std::vector<float> export_param(int node, int k, const void* device_data) override;
  void import_param(int node, int k, const std::vector<float>& plain, void* device_data) override;

  const CompiledGraph& compiled() const { return compiled_; }

 private:
  const Graph& graph_;
  dnnl::engine engine_;
  dnnl::stream compute_stream_;  // used only on the compute stream's worker thread
  dnnl::stream host_stream_;     // parameter reorders on the calling thread
  CompiledGraph compiled_;
  std::vector<CpuKernel*> kernels_;  // compiled_'s, by node
  std::unique_ptr<Device> device_;
  std::map<size_t, dnnl::sum> sums_;  // flat sums (f32, or bf16 in bf16) by byte size (compute worker only)
};

}  // namespace vdnn
