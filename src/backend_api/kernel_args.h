// backend_api/kernel_args.h — the buffers one kernel call reads and writes, on any backend.
//
// Model: kernels never allocate; the executor hands every pointer in (device pointers: arena base
// + the offset the memory planner fixed). Backward overwrites d_in[i] (the executor sums gradients,
// not the kernel); a null d_in[i] means that input needs no gradient (the graph input), a null
// in/out in backward means the layer's backward does not read it (it may be offloaded by then).
// `labels` points to HOST memory (the loss layer's backend copies them where it needs them).
//
//   KernelArgs a;
//   a.in = {x}; a.out = y; a.params = {w, b}; a.scratch = workspace;
//   backend.forward(node, a);        // inside device.launch(StreamKind::kCompute, ...)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vdnn {

struct KernelArgs {
  std::vector<void*> in, d_in;
  void* out = nullptr;
  void* d_out = nullptr;
  std::vector<void*> params, d_params;  // ParamSpec order; d_params[i] null if not trainable
  std::vector<void*> saved;             // one per declared saved buffer
  void* scratch = nullptr;              // the declared scratch bytes
  const int32_t* labels = nullptr;      // loss layer: batch labels, host memory
  int64_t valid = 0;                    // loss layer: real samples in this batch (<= batch)
  uint64_t step = 0;                    // dropout: a fresh mask per step
  bool training = true;
  // A forward re-run in the backward pass (Op::kRecompute): reproduce the forward's output from its
  // saved state and change nothing else — batch norm normalizes with the saved batch statistics and
  // leaves the running averages alone, dropout multiplies by the saved mask; pooling and LRN
  // rewrite their workspace with the same values.
  bool recompute = false;
};

// The arguments of slice `i` of a layer run in slices of its batch (a sub-batched convolution):
// input 0 and its gradient offset by i * in_slice_bytes, the output and its gradient by
// i * out_slice_bytes (null stays null); parameters, scratch and the rest as given.
inline KernelArgs batch_slice(const KernelArgs& args, int i, size_t in_slice_bytes, size_t out_slice_bytes) {
  auto at = [](void* base, size_t offset) -> void* { return base ? static_cast<char*>(base) + offset : nullptr; };
  KernelArgs a = args;
  const size_t in = in_slice_bytes * static_cast<size_t>(i), out = out_slice_bytes * static_cast<size_t>(i);
  if (!a.in.empty()) a.in[0] = at(args.in[0], in);
  if (!a.d_in.empty()) a.d_in[0] = at(args.d_in[0], in);
  a.out = at(args.out, out);
  a.d_out = at(args.d_out, out);
  return a;
}

}  // namespace vdnn
