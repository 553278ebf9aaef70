// memory/host_buffer.h — host memory taken once: the batch staging and the host copies' region.
//
// Model: a HostBuffer is one allocation from a HostMemory source, released when it goes. The
// default source is 64-byte aligned, zero-filled RAM; the CUDA backend supplies page-locked memory
// (cudaMallocHost), so the copies to and from it are asynchronous DMA. A Net takes every host
// buffer it needs when it is built — the input batch, the labels and one region holding the host
// copies of offloaded feature maps and streamed weights, of exactly the bytes the memory plan
// reports (MemoryPlan::host_bytes, each copy at the offset the plan gave it) — and none after:
// taken_count() counts every buffer taken in the process, so a test can check that training takes
// none. Peers pin per tensor or cache host blocks in power-of-two bins (PyTorch's
// CachingHostAllocator), paying milliseconds per cudaHostAlloc or up to 2x the bytes.
//
//   HostBuffer region(plan.host_bytes, backend.host_memory(), "host copies");
//   copy_engine.offload(device_ptr, region.data() + tensor.host_offset, tensor.bytes);
//   HostBuffer::taken_count();                       // buffers taken so far, in this process
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace vdnn {

// Where host memory comes from. `allocate` returns null when the system cannot provide it.
struct HostMemory {
  std::function<void*(size_t bytes)> allocate;
  std::function<void(void* ptr)> release;
  static HostMemory aligned();  // std::aligned_alloc(64, ...), zero-filled; std::free
};

// One buffer from a HostMemory source, released on destruction (move-only). Throws vdnn::Error
// naming `what` when the source cannot provide it. Zero bytes take nothing (data() is null).
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(size_t bytes, const HostMemory& source, const char* what = "host buffer");
  char* data() const { return memory_.get(); }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(memory_.get());
  }
  size_t bytes() const { return bytes_; }

  // Buffers of at least one byte taken in this process so far (every source, every thread).
  static size_t taken_count();

 private:
  std::unique_ptr<char, std::function<void(void*)>> memory_;
  size_t bytes_ = 0;
};

}  // namespace vdnn
