// memory/device_pool.h — the budgeted device pool: an OffsetAllocator over one base pointer, with
// stream-ordered reuse.
//
// Model: the whole `--device-memory` budget is one range [base, base + capacity); every tensor byte
// on the device comes from here (best fit with coalescing, 256 B rounding, a class per block). A
// block still read by an asynchronous stream is released with free_after(block, done): it stays
// allocated until done() returns true (the stream's event completed) — PyTorch's caching-allocator
// rule; reusing it earlier would silently corrupt whatever the stream still reads. Deferred frees
// are polled at the start of every allocate. If a request does not fit, the pool calls the pressure
// handler once (the executor's "synchronize the streams"), polls again and retries; only then does
// it throw vdnn::Error with a one-line message (request, capacity, usage, largest free block, usage
// by class). Not thread-safe: one host thread drives the pool; done() may query events.
//
//   DevicePool pool(device_base, budget_bytes);
//   pool.set_pressure_handler([&] { streams.synchronize(); });
//   Block x = pool.allocate(n_bytes, MemoryClass::kFeatureMaps, "conv1 output");
//   copy_engine.offload(x.ptr, host_dst);  // asynchronous read of x
//   pool.free_after(x, [ev = copy_engine.record()] { return ev.done(); });
//   pool.release_deferred_blocking();      // end of step: wait for all deferred frees
//   pool.all_free();                       // true when everything came back
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "memory/memory_class.h"
#include "memory/offset_allocator.h"

namespace vdnn {

// A device block: `ptr` is base + offset (offset 256-aligned); `bytes` is the rounded size.
struct Block {
  int32_t handle = -1;
  void* ptr = nullptr;
  size_t bytes = 0;
};

class DevicePool {
 public:
  // Manages [base, base + capacity_bytes) without owning it; base is null only for capacity 0.
  DevicePool(void* base, size_t capacity_bytes);
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // Polls deferred frees, then best-fit allocates; on failure calls the pressure handler once,
  // polls again and retries. Throws vdnn::Error (one line) if the request still does not fit.
  Block allocate(size_t bytes, MemoryClass cls, const std::string& what);
  // Frees at once: the caller guarantees no stream still uses the block.
  void free(const Block& block);
  // The block becomes reusable only once done() returns true.
  void free_after(const Block& block, std::function<bool()> done);
  // Completes the deferred frees whose done() returns true; returns how many were completed.
  size_t poll_deferred();
  // Spins (yielding) until every deferred free is done, then completes them all.
  void release_deferred_blocking();
  // Called (once per failing allocate) before giving up; typically synchronizes the streams.
  void set_pressure_handler(std::function<void()> on_pressure);

  size_t capacity_bytes() const { return allocator_.capacity_bytes(); }
  // Includes blocks whose free is deferred (they still occupy memory).
  size_t in_use_bytes() const { return allocator_.in_use_bytes(); }
  size_t peak_in_use_bytes() const { return allocator_.peak_in_use_bytes(); }
  size_t largest_free_block() const { return allocator_.largest_free_block(); }
  double fragmentation() const { return allocator_.fragmentation(); }
  ClassStats stats() const { return allocator_.stats(); }
  size_t high_water_offset() const { return allocator_.high_water_offset(); }
  size_t deferred_count() const { return deferred_.size(); }
  size_t deferred_bytes() const;
  size_t pressure_calls() const { return pressure_calls_; }
  // Multi-line chunk map (see OffsetAllocator::dump), for debugging an OOM.
  std::string dump() const { return allocator_.dump(); }
  // True when no block is live and no free is pending.
  bool all_free() const { return allocator_.all_free() && deferred_.empty(); }
  const OffsetAllocator& allocator() const { return allocator_; }

 private:
  struct Deferred {
    int32_t handle;
    size_t bytes;
    std::function<bool()> done;
  };

  void check_block(const Block& block) const;
  bool is_deferred(int32_t handle) const;
  std::string oom_message(size_t bytes, MemoryClass cls, const std::string& what) const;

  char* base_;
  OffsetAllocator allocator_;
  std::vector<Deferred> deferred_;
  std::function<void()> on_pressure_;
  size_t pressure_calls_ = 0;
};

}  // namespace vdnn
