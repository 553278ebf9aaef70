// memory/host_pool.h — host staging memory for offloaded feature maps, taken in slabs up front.
//
// Model: offloads and prefetches copy between the device pool and host blocks; on a GPU the host
// side must be pinned, and pinning per tensor is slow, so memory is taken in large slabs (default
// 64 MiB) and carved with one OffsetAllocator per slab (best fit, 256 B rounding). Slabs are added
// when nothing fits and are never returned before destruction, so once the slabs exist (reserve()
// ahead of the first step) allocate/free do no system allocation. A request larger than the slab
// size gets a dedicated slab of its own (rounded) size, which later requests may reuse. Blocks are
// at least 64-byte aligned. Slabs come from a HostMemory source: 64-byte aligned, zero-filled RAM
// by default; the CUDA backend supplies page-locked memory (cudaMallocHost), so the copies to and
// from it run asynchronously. Not thread-safe.
//
//   HostPool host;                                  // 64 MiB slabs of plain RAM
//   HostPool pinned(HostPool::kDefaultSlabBytes, backend.host_memory());
//   host.reserve(plan.peak_host_bytes);             // take slabs before training starts
//   HostBlock h = host.allocate(feature_map_bytes);
//   copy_engine.offload(device_block.ptr, h.ptr, h.bytes);
//   host.free(h);                                   // after the prefetch read it back
//   host.slab_count();  host.reserved_bytes();  host.peak_in_use_bytes();
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "memory/offset_allocator.h"

namespace vdnn {

// Where slabs come from. `allocate` returns null when the system cannot provide the memory.
struct HostMemory {
  std::function<void*(size_t bytes)> allocate;
  std::function<void(void* ptr)> release;
  static HostMemory aligned();  // std::aligned_alloc(64, ...), zero-filled; std::free
};

// One buffer from a HostMemory source, released on destruction (move-only). Throws vdnn::Error
// naming `what` when the source cannot provide it.
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(size_t bytes, const HostMemory& source, const char* what = "host buffer");
  char* data() const { return memory_.get(); }
  template <typename T>
  T* as() const { return reinterpret_cast<T*>(memory_.get()); }
  size_t bytes() const { return bytes_; }

 private:
  std::unique_ptr<char, std::function<void(void*)>> memory_;
  size_t bytes_ = 0;
};

// A host block: slab index and the slab allocator's handle; `bytes` is the rounded size.
struct HostBlock {
  int32_t slab = -1;
  int32_t handle = -1;
  void* ptr = nullptr;
  size_t bytes = 0;
};

class HostPool {
 public:
  static constexpr size_t kDefaultSlabBytes = size_t{64} << 20;

  // slab_bytes is rounded up to a multiple of OffsetAllocator::kAlignment (and is at least that).
  explicit HostPool(size_t slab_bytes = kDefaultSlabBytes, HostMemory memory = HostMemory::aligned());
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;
  HostPool(HostPool&&) = default;
  HostPool& operator=(HostPool&&) = default;

  // Best fit in the first slab that can hold the request, else a new slab. Throws vdnn::Error if
  // the system cannot provide a new slab.
  HostBlock allocate(size_t bytes);
  void free(const HostBlock& block);
  // Adds standard slabs until reserved_bytes() >= bytes (a request cannot span two slabs).
  void reserve(size_t bytes);

  size_t slab_bytes() const { return slab_bytes_; }
  size_t slab_count() const { return slabs_.size(); }
  size_t reserved_bytes() const { return reserved_bytes_; }
  size_t in_use_bytes() const { return in_use_bytes_; }
  size_t peak_in_use_bytes() const { return peak_in_use_bytes_; }
  bool all_free() const;

 private:
  struct Slab {
    HostBuffer memory;
    OffsetAllocator allocator;
  };

  int32_t add_slab(size_t bytes);

  size_t slab_bytes_;
  HostMemory source_;
  std::vector<Slab> slabs_;
  size_t reserved_bytes_ = 0;
  size_t in_use_bytes_ = 0;
  size_t peak_in_use_bytes_ = 0;
};

}  // namespace vdnn
