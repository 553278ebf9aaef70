#include "memory/offset_allocator.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <sstream>

#include "vdnn/error.h"

namespace vdnn {

OffsetAllocator::OffsetAllocator(size_t capacity_bytes) : capacity_(capacity_bytes / kAlignment * kAlignment) {
  if (capacity_ == 0) return;
  head_ = new_chunk();
  Chunk& c = chunks_[head_];
  c.offset = 0;
  c.bytes = capacity_;
  insert_free(head_);
}

size_t OffsetAllocator::round_up(size_t bytes) {
  if (bytes == 0) bytes = 1;
  VDNN_CHECK(bytes <= std::numeric_limits<size_t>::max() - kAlignment, "allocation size " << bytes << " overflows");
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

int OffsetAllocator::bin_of(size_t bytes) {
  const int bin = static_cast<int>(std::bit_width(bytes / kAlignment)) - 1;
  return std::clamp(bin, 0, kBinCount - 1);
}

int32_t OffsetAllocator::new_chunk() {
  if (!spare_slots_.empty()) {
    const int32_t h = spare_slots_.back();
    spare_slots_.pop_back();
    chunks_[h] = Chunk{};
    chunks_[h].alive = true;
    return h;
  }
  VDNN_CHECK(chunks_.size() < static_cast<size_t>(std::numeric_limits<int32_t>::max()), "too many chunks");
  chunks_.push_back(Chunk{});
  chunks_.back().alive = true;
  return static_cast<int32_t>(chunks_.size() - 1);
}

void OffsetAllocator::insert_free(int32_t h) {
  const Chunk& c = chunks_[h];
  const bool inserted = bins_[bin_of(c.bytes)].insert({c.bytes, c.offset, h}).second;
  VDNN_CHECK(inserted, "chunk " << h << " already in its bin");
}

void OffsetAllocator::erase_free(int32_t h) {
  const Chunk& c = chunks_[h];
  const size_t erased = bins_[bin_of(c.bytes)].erase({c.bytes, c.offset, h});
  VDNN_CHECK(erased == 1, "free chunk " << h << " missing from its bin");
}

int32_t OffsetAllocator::find_best_fit(size_t rounded) const {
  const int first = bin_of(rounded);
  // In the request's own bin, smaller chunks may precede; in higher bins every chunk fits, and
  // begin() is the smallest, so the first hit is the global best fit.
  auto it = bins_[first].lower_bound({rounded, 0, std::numeric_limits<int32_t>::min()});
  if (it != bins_[first].end()) return it->handle;
  for (int b = first + 1; b < kBinCount; ++b)
    if (!bins_[b].empty()) return bins_[b].begin()->handle;
  return -1;
}

void OffsetAllocator::split(int32_t h, size_t rounded) {
  const int32_t rest = new_chunk();  // may reallocate chunks_: index, don't hold references
  Chunk& r = chunks_[rest];
  r.offset = chunks_[h].offset + rounded;
  r.bytes = chunks_[h].bytes - rounded;
  r.prev = h;
  r.next = chunks_[h].next;
  if (r.next != -1) chunks_[r.next].prev = rest;
  chunks_[h].next = rest;
  chunks_[h].bytes = rounded;
  insert_free(rest);
}

std::optional<Allocation> OffsetAllocator::allocate(size_t bytes, MemoryClass cls) {
  if (bytes > capacity_) return std::nullopt;
  const size_t rounded = round_up(bytes);
  const int32_t h = find_best_fit(rounded);
  if (h == -1) return std::nullopt;
  erase_free(h);
  if (chunks_[h].bytes - rounded >= kAlignment) split(h, rounded);
  Chunk& c = chunks_[h];
  c.in_use = true;
  c.cls = cls;
  c.requested_bytes = bytes;
  ++live_count_;
  count_in(cls, c.bytes);
  high_water_ = std::max(high_water_, c.offset + c.bytes);
  return Allocation{h, c.offset, c.bytes};
}

void OffsetAllocator::merge_into(int32_t left, int32_t right) {
  Chunk& l = chunks_[left];
  Chunk& r = chunks_[right];
  VDNN_CHECK(l.next == right && r.prev == left, "chunks " << left << " and " << right << " are not neighbours");
  l.bytes += r.bytes;
  l.next = r.next;
  if (l.next != -1) chunks_[l.next].prev = left;
  r = Chunk{};  // alive = false: freeing this handle again fails the liveness check
  spare_slots_.push_back(right);
}

void OffsetAllocator::free(int32_t handle) {
  VDNN_CHECK(is_live(handle), "free of unknown or already-free handle " << handle);
  Chunk& c = chunks_[handle];
  c.in_use = false;
  c.requested_bytes = 0;
  --live_count_;
  count_out(c.cls, c.bytes);
  int32_t h = handle;
  const int32_t next = chunks_[h].next;
  if (next != -1 && !chunks_[next].in_use) {
    erase_free(next);
    merge_into(h, next);
  }
  const int32_t prev = chunks_[h].prev;
  if (prev != -1 && !chunks_[prev].in_use) {
    erase_free(prev);
    merge_into(prev, h);
    h = prev;
  }
  insert_free(h);
}

void OffsetAllocator::count_in(MemoryClass cls, size_t bytes) {
  const int i = index_of(cls);
  stats_.current_bytes[i] += bytes;
  stats_.peak_bytes[i] = std::max(stats_.peak_bytes[i], stats_.current_bytes[i]);
  stats_.total_current += bytes;
  stats_.total_peak = std::max(stats_.total_peak, stats_.total_current);
}

void OffsetAllocator::count_out(MemoryClass cls, size_t bytes) {
  const int i = index_of(cls);
  VDNN_CHECK(stats_.current_bytes[i] >= bytes, "class " << to_string(cls) << " underflows");
  stats_.current_bytes[i] -= bytes;
  stats_.total_current -= bytes;
}

size_t OffsetAllocator::largest_free_block() const {
  for (int b = kBinCount - 1; b >= 0; --b)
    if (!bins_[b].empty()) return bins_[b].rbegin()->bytes;
  return 0;
}

double OffsetAllocator::fragmentation() const {
  const size_t free_total = free_bytes();
  if (free_total == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_block()) / static_cast<double>(free_total);
}

bool OffsetAllocator::is_live(int32_t handle) const {
  return handle >= 0 && static_cast<size_t>(handle) < chunks_.size() && chunks_[handle].alive && chunks_[handle].in_use;
}

Allocation OffsetAllocator::allocation(int32_t handle) const {
  VDNN_CHECK(is_live(handle), "handle " << handle << " is not a live allocation");
  return Allocation{handle, chunks_[handle].offset, chunks_[handle].bytes};
}

MemoryClass OffsetAllocator::class_of(int32_t handle) const {
  VDNN_CHECK(is_live(handle), "handle " << handle << " is not a live allocation");
  return chunks_[handle].cls;
}

std::string OffsetAllocator::dump() const {
  std::ostringstream out;
  for (int32_t h = head_; h != -1; h = chunks_[h].next) {
    const Chunk& c = chunks_[h];
    out << "#" << h << " offset=" << c.offset << " bytes=" << c.bytes;
    if (c.in_use)
      out << " used " << to_string(c.cls) << " requested=" << c.requested_bytes << "\n";
    else
      out << " free\n";
  }
  return out.str();
}

void OffsetAllocator::validate() const {
  size_t expected_offset = 0, used = 0, live = 0, free_chunks = 0;
  ClassStats recount;
  for (int32_t h = head_, prev = -1; h != -1; prev = h, h = chunks_[h].next) {
    const Chunk& c = chunks_[h];
    VDNN_CHECK(c.alive && c.prev == prev, "chunk " << h << " badly linked");
    VDNN_CHECK(c.offset == expected_offset, "chunk " << h << " at " << c.offset << ", expected " << expected_offset);
    VDNN_CHECK(c.bytes > 0 && c.bytes % kAlignment == 0, "chunk " << h << " size " << c.bytes);
    expected_offset += c.bytes;
    if (c.in_use) {
      used += c.bytes;
      ++live;
      recount.current_bytes[index_of(c.cls)] += c.bytes;
    } else {
      ++free_chunks;
      VDNN_CHECK(prev == -1 || chunks_[prev].in_use, "free chunks " << prev << ", " << h << " not coalesced");
      VDNN_CHECK(bins_[bin_of(c.bytes)].count({c.bytes, c.offset, h}) == 1, "free chunk " << h << " not in its bin");
    }
  }
  size_t binned = 0;
  for (const auto& bin : bins_) binned += bin.size();
  VDNN_CHECK(expected_offset == capacity_, "chunks cover " << expected_offset << " of " << capacity_);
  VDNN_CHECK(binned == free_chunks, binned << " binned vs " << free_chunks << " free chunks");
  VDNN_CHECK(used == stats_.total_current && live == live_count_, "usage counters drifted");
  VDNN_CHECK(recount.current_bytes == stats_.current_bytes, "per-class counters drifted");
  VDNN_CHECK(high_water_ <= capacity_, "high water beyond capacity");
}

}  // namespace vdnn
