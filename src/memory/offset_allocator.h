// memory/offset_allocator.h — best-fit with coalescing over offsets in [0, capacity).
//
// Model: TensorFlow's BFC allocator without the memory. The range [0, capacity) is cut into chunks
// that tile it exactly, linked in address order (prev/next are chunk indices, not pointers). Free
// chunks sit in size bins (powers of two from 256 B). Every request is rounded up to a multiple of
// 256 B, so every offset is 256-aligned. Allocation takes the smallest free chunk that fits (ties:
// lowest offset) and splits off the remainder; freeing merges the chunk with free neighbours, so
// two adjacent free chunks never exist. No byte is touched: the device pool adds a base pointer,
// and the planner/simulator run the same allocator to predict peak memory including fragmentation.
// Not thread-safe. Copyable (a plain data structure; a copy is an independent what-if).
//
//   OffsetAllocator alloc(1 << 20);
//   std::optional<Allocation> a = alloc.allocate(1000, MemoryClass::kFeatureMaps);  // 1024 B at 0
//   if (!a) { /* nothing fits: the caller decides whether that is an error */ }
//   alloc.in_use_bytes();          // 1024
//   alloc.free(a->handle);         // merges back into one free chunk
//   alloc.all_free();              // true
//   alloc.high_water_offset();     // 1024: the budget that would have sufficed
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "memory/memory_class.h"

namespace vdnn {

// One live allocation: `handle` frees it; [offset, offset + bytes) is what it occupies (bytes is
// the rounded size, a multiple of OffsetAllocator::kAlignment).
struct Allocation {
  int32_t handle = -1;
  size_t offset = 0;
  size_t bytes = 0;
};

class OffsetAllocator {
 public:
  static constexpr size_t kAlignment = 256;  // rounding unit, alignment and smallest chunk
  static constexpr int kBinCount = 48;       // bin i holds sizes in [256 << i, 256 << (i + 1))

  // Capacity is rounded down to a multiple of kAlignment (the tail below 256 B is unusable).
  explicit OffsetAllocator(size_t capacity_bytes);

  // Best-fit allocation of `bytes` (0 counts as 1) rounded up to 256 B; nullopt if nothing fits.
  std::optional<Allocation> allocate(size_t bytes, MemoryClass cls);
  // Frees a live allocation; an unknown or already-free handle is a VDNN_CHECK failure.
  void free(int32_t handle);

  static size_t round_up(size_t bytes);

  size_t capacity_bytes() const { return capacity_; }
  size_t in_use_bytes() const { return stats_.total_current; }
  size_t peak_in_use_bytes() const { return stats_.total_peak; }
  size_t free_bytes() const { return capacity_ - stats_.total_current; }
  size_t largest_free_block() const;
  // 1 - largest_free_block / free_bytes; 0 when nothing is free.
  double fragmentation() const;
  ClassStats stats() const { return stats_; }
  // The largest offset + bytes ever handed out: the capacity that would have sufficed.
  size_t high_water_offset() const { return high_water_; }
  size_t live_count() const { return live_count_; }
  bool all_free() const { return live_count_ == 0; }
  // True iff `handle` names a live allocation.
  bool is_live(int32_t handle) const;
  // Allocation of a live handle (VDNN_CHECK that it is live).
  Allocation allocation(int32_t handle) const;
  // Class of a live handle.
  MemoryClass class_of(int32_t handle) const;

  // One line per chunk in address order: "#handle offset=.. bytes=.. used|free class requested=..".
  std::string dump() const;
  // Walks every structure and VDNN_CHECKs the invariants (tiling, coalescing, bins, stats). O(n).
  void validate() const;

 private:
  struct Chunk {
    size_t offset = 0;
    size_t bytes = 0;
    size_t requested_bytes = 0;
    int32_t prev = -1;
    int32_t next = -1;
    MemoryClass cls = MemoryClass::kWorkspace;
    bool in_use = false;
    bool alive = false;  // false: the slot was merged away and waits in spare_slots_
  };
  // Bins are ordered by (bytes, offset): begin() of a bin is its smallest chunk.
  struct FreeKey {
    size_t bytes;
    size_t offset;
    int32_t handle;
    auto operator<=>(const FreeKey&) const = default;
  };

  static int bin_of(size_t bytes);
  int32_t new_chunk();
  void insert_free(int32_t h);
  void erase_free(int32_t h);
  int32_t find_best_fit(size_t rounded) const;
  void split(int32_t h, size_t rounded);
  void merge_into(int32_t left, int32_t right);
  void count_in(MemoryClass cls, size_t bytes);
  void count_out(MemoryClass cls, size_t bytes);

  size_t capacity_ = 0;
  int32_t head_ = -1;  // chunk at offset 0
  std::vector<Chunk> chunks_;
  std::vector<int32_t> spare_slots_;
  std::array<std::set<FreeKey>, kBinCount> bins_;
  ClassStats stats_;
  size_t high_water_ = 0;
  size_t live_count_ = 0;
};

}  // namespace vdnn
