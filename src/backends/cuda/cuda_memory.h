// backends/cuda/cuda_memory.h — the GPU's memory for the runtime: one arena, pinned host memory.
//
// Model: the device arena is ONE cudaMalloc of the whole budget, zero-filled; the memory planner
// placed every tensor of a step inside it, so nothing else is allocated while training (cuDNN's
// algorithm search and the libraries' own small workspaces aside). Host memory for offloaded tensors
// (one region, memory/host_buffer.h) is page-locked (cudaMallocHost), so offloads and prefetches are truly asynchronous
// DMA copies that overlap the kernels, as vDNN requires.
//
//   std::unique_ptr<DeviceBuffer> arena = allocate_cuda_arena(12ull << 30);
//   HostBuffer host_copies(plan.host_bytes, pinned_host_memory(), "host copies");
#pragma once

#include <memory>

#include "backend_api/backend.h"
#include "memory/host_buffer.h"

namespace vdnn {

// Throws vdnn::Error naming the size and the CUDA error when the GPU cannot provide it.
std::unique_ptr<DeviceBuffer> allocate_cuda_arena(size_t bytes);
HostMemory pinned_host_memory();

}  // namespace vdnn
