// backend_api/backend.h — what the executor and the Net need from a compute backend (CPU or CUDA).
//
// Model: a Backend = a Device (streams, events, asynchronous copies; device/device.h) + the kernels
// of one graph at one batch size. It declares the facts the Program builder and the memory planner
// work from (value and kernel sizes in its own layouts), runs a node's forward/backward with every
// pointer handed in (KernelArgs), and offers the few other operations a training step needs:
// gradient sums, the input upload, the SGD update, reading results back, parameters in and out in
// plain layouts, the device arena and the host memory offloaded tensors are copied to.
//
// Where things run. The "compute work" methods (forward, backward, accumulate, load_input,
// sgd_update) must be called from inside device().launch(StreamKind::kCompute, ...): the CPU
// backend then runs them on the compute stream's worker thread; the CUDA backend runs the launched
// function on the host at once and the methods enqueue kernels onto the compute stream. The "host
// side" methods (download, upload, export_param, import_param) block until done and must only be
// called while no compute work that touches their buffers is in flight (after a synchronize).
//
//   BackendOptions o{.kind = BackendKind::kCuda, .batch = 64};
//   std::unique_ptr<Backend> b = make_backend(graph, o);            // throws Error without a GPU
//   Program p = build_program(graph, b->value_bytes(), b->facts(), {Policy::kAll});
//   std::unique_ptr<DeviceBuffer> arena = b->allocate_arena(plan.capacity_bytes);
//   b->device().launch(StreamKind::kCompute, [&] { b->forward(node, args); });
//   b->device().synchronize_all();
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend_api/adamw_step.h"
#include "backend_api/kernel_args.h"
#include "comm/communicator.h"
#include "core/conv_algo.h"
#include "core/graph.h"
#include "core/precision.h"
#include "device/cpu_device.h"
#include "device/device.h"
#include "memory/host_buffer.h"
#include "plan/program.h"

namespace vdnn {

enum class BackendKind { kCpu, kCuda };

inline const char* to_string(BackendKind k) { return k == BackendKind::kCpu ? "cpu" : "cuda"; }
// "cpu" or "cuda"; throws vdnn::Error naming --backend otherwise.
BackendKind parse_backend(const std::string& text);

struct BackendOptions {
  BackendKind kind = BackendKind::kCpu;
  int64_t batch = 64;
  uint64_t seed = 1;  // dropout masks
  ConvAlgo conv_algo = ConvAlgo::kAuto;
  std::vector<ConvAlgo> conv_algos;  // per node; empty: conv_algo everywhere
  LinkModel link;                    // CPU only: the emulated PCIe link of the copy engine
  int cuda_device = -1;              // CUDA only: the GPU ordinal; < 0: by local rank (cuda_device.h)
  // Per node: > 1 runs that convolution in as many slices of the batch; empty: 1.
  std::vector<int> conv_sub_batches;
  // Per node: at most this much workspace for a convolution (the plan's figure for the algorithm it
  // chose, 0 included; other layers' entries are ignored; empty: what the algorithm family reserves). CUDA: cudnnFind
  // then picks the fastest algorithm within it, so the live Net needs what was planned. The CPU's workspace is the
  // measured kernel's own, so it has nothing to cap.
  std::vector<size_t> conv_workspace_bytes;
  // The activations' number type (core/precision.h). CPU: bf16 needs native bf16 instructions
  // (refused otherwise). CUDA: fp32 only so far (bf16 refused).
  Precision precision = Precision::kFp32;
};

// One block of device memory, zero-filled, released on destruction (RAII).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  virtual ~DeviceBuffer() = default;
  virtual char* data() const = 0;
  virtual size_t bytes() const = 0;
};

// One parameter's SGD step (PyTorch semantics), all pointers on the device, `count` floats:
//   v = momentum * v + (g + weight_decay * w);   w = w - lr * v
// With gradient clipping the gradient is first scaled: g = grad_scale * grads (1: unchanged).
struct SgdUpdate {
  float* weights = nullptr;
  const float* grads = nullptr;
  float* velocity = nullptr;
  int64_t count = 0;
  float lr = 0, momentum = 0, weight_decay = 0;
  float grad_scale = 1;
};

// One parameter's AdamW step (backend_api/adamw_step.h: the arithmetic), all pointers on the device.
struct AdamwUpdate {
  float* weights = nullptr;
  const float* grads = nullptr;
  float* exp_avg = nullptr;
  float* exp_avg_sq = nullptr;
  int64_t count = 0;
  AdamwStep step;
};

class Backend {
 public:
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual ~Backend() = default;

  virtual const char* name() const = 0;  // "cpu", "cuda"
  virtual Device& device() = 0;

  // What the kernels declared: bytes of every graph value, and per node (graph order) its output,
  // saved state, scratch and parameter bytes. The Program builder's input.
  virtual std::vector<size_t> value_bytes() const = 0;
  virtual std::vector<NodeFacts> facts() const = 0;
  // What runs node `node`, in the library's words ("jit:avx512_core", "cudnn fwd implicit_gemm, ...").
  virtual std::string implementation(int node) const = 0;
  // The passes of node `node` left on a reference kernel, e.g. "backward weights: ref:any" (CPU:
  // oneDNN's plain loops, orders of magnitude slower; CUDA: none, cuDNN has no such fallback).
  virtual std::vector<std::string> slow_kernels(int node) const = 0;

  // The arena every planned tensor lives in (one allocation of `bytes`), and the memory offloaded
  // tensors are copied to (CUDA: pinned, so copies are truly asynchronous).
  virtual std::unique_ptr<DeviceBuffer> allocate_arena(size_t bytes) = 0;
  virtual HostMemory host_memory() const = 0;

  // Whether forward() honours KernelArgs::recompute (a forward re-run from the saved state, without
  // side effects; plan/storage_decision.h). CPU: yes. CUDA: not yet, so the Net refuses a step
  // with recompute decisions on it.
  virtual bool supports_recompute() const { return false; }

  // Compute work (inside device().launch(StreamKind::kCompute, ...)).
  virtual void forward(int node, const KernelArgs& args) = 0;
  virtual void backward(int node, const KernelArgs& args) = 0;
  // A value gradient's sum, in the activations' type; the input, cast to it from `host_src`'s floats.
  virtual void accumulate(void* into, const void* addend, size_t bytes) = 0;
  virtual void load_input(void* dst, const float* host_src, size_t bytes) = 0;
  virtual void sgd_update(const SgdUpdate& update) = 0;
  // Every update of a step at once. The default runs them one by one; the CPU backend makes one
  // parallel pass over all the parameters (one fork and join, not one per parameter).
  virtual void sgd_update_all(const std::vector<SgdUpdate>& updates) {
    for (const SgdUpdate& u : updates) sgd_update(u);
  }
  // The same for AdamW (struct AdamwUpdate above).
  virtual void adamw_update(const AdamwUpdate& update) = 0;
  virtual void adamw_update_all(const std::vector<AdamwUpdate>& updates) {
    for (const AdamwUpdate& u : updates) adamw_update(u);
  }

  // Host side (blocking; no compute work on these buffers in flight).
  virtual void download(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  // Whether `bytes` of floats on the device are all finite (no NaN, no Inf). The default downloads
  // them in chunks; a backend whose device memory the host can read scans it in place.
  virtual bool all_finite(const void* device_data, size_t bytes);
  // The sum of the squares of `bytes` of floats on the device, accumulated in double in index
  // order (gradient clipping's norms; deterministic). The default downloads them in chunks; a
  // backend whose device memory the host can read sums in place.
  virtual double sum_of_squares(const void* device_data, size_t bytes);
  // Parameter `k` of `node` in its plain layout (ParamSpec::dims) from/to the kernel's layout.
  virtual std::vector<float> export_param(int node, int k, const void* device_data) = 0;
  virtual void import_param(int node, int k, const std::vector<float>& plain, void* device_data) = 0;

  // Data parallel: the communicator that all-reduces this backend's gradient buckets (device
  // memory, on device().stream kComm) among the ranks of `host`, the process's host communicator
  // (comm/communicator.h), which must outlive the result. Null: `host` itself serves — the
  // default, right where device memory is host memory (CPU: MPI reads the arena). CUDA: an NCCL
  // communicator bootstrapped over `host` (a collective: every rank of `host` calls it, in the
  // same order as its other collectives); its host collectives go to `host`; `options` bounds how
  // long an all-reduce may take before every rank is stopped.
  virtual std::unique_ptr<Communicator> gradient_communicator(Communicator& host, const CommOptions& options) {
    return nullptr;
  }
};

// Whether `count` floats in host memory are all finite (OpenMP; the CPU backend's all_finite).
bool all_finite_floats(const float* data, size_t count);
// `sum` plus the squares of `count` floats in host memory, in double, in index order.
double sum_of_squares_floats(const float* data, size_t count, double sum = 0);

}  // namespace vdnn
