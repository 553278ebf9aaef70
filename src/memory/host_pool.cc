#include "memory/host_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <utility>

#include "vdnn/error.h"

namespace vdnn {

HostMemory HostMemory::aligned() {
  return {[](size_t bytes) -> void* {
            void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
            if (p) std::memset(p, 0, bytes);
            return p;
          },
          [](void* p) { std::free(p); }};
}

HostBuffer::HostBuffer(size_t bytes, const HostMemory& source, const char* what)
    : memory_(static_cast<char*>(bytes ? source.allocate(bytes) : nullptr), source.release),
      bytes_(bytes) {
  if (bytes && !memory_) VDNN_THROW(what << ": cannot take " << bytes << " B of host memory");
}

HostPool::HostPool(size_t slab_bytes, HostMemory memory)
    : slab_bytes_(OffsetAllocator::round_up(std::max(slab_bytes, OffsetAllocator::kAlignment))),
      source_(std::move(memory)) {}

int32_t HostPool::add_slab(size_t bytes) {
  try {
    slabs_.push_back(Slab{HostBuffer(bytes, source_), OffsetAllocator(bytes)});
  } catch (const Error&) {
    VDNN_THROW("host pool: cannot take a slab of " << bytes << " B (already reserved "
                                                   << reserved_bytes_ << " B in " << slabs_.size()
                                                   << " slabs)");
  }
  reserved_bytes_ += bytes;
  return static_cast<int32_t>(slabs_.size() - 1);
}

HostBlock HostPool::allocate(size_t bytes) {
  const size_t rounded = OffsetAllocator::round_up(bytes);
  std::optional<Allocation> a;
  int32_t slab = -1;
  for (int32_t s = 0; s < static_cast<int32_t>(slabs_.size()) && !a; ++s) {
    if (slabs_[s].allocator.largest_free_block() < rounded) continue;
    a = slabs_[s].allocator.allocate(bytes, MemoryClass::kFeatureMaps);
    slab = s;
  }
  if (!a) {
    slab = add_slab(std::max(rounded, slab_bytes_));
    a = slabs_[slab].allocator.allocate(bytes, MemoryClass::kFeatureMaps);
    VDNN_CHECK(a.has_value(), "fresh host slab of " << std::max(rounded, slab_bytes_)
                                                    << " B cannot hold " << bytes << " B");
  }
  in_use_bytes_ += a->bytes;
  peak_in_use_bytes_ = std::max(peak_in_use_bytes_, in_use_bytes_);
  return HostBlock{slab, a->handle, slabs_[slab].memory.data() + a->offset, a->bytes};
}

void HostPool::free(const HostBlock& block) {
  VDNN_CHECK(block.slab >= 0 && block.slab < static_cast<int32_t>(slabs_.size()),
             "host block names slab " << block.slab << " of " << slabs_.size());
  OffsetAllocator& allocator = slabs_[block.slab].allocator;
  VDNN_CHECK(allocator.is_live(block.handle),
             "free of unknown or already-free host block " << block.slab << ":" << block.handle);
  const Allocation a = allocator.allocation(block.handle);
  VDNN_CHECK(block.bytes == a.bytes && block.ptr == slabs_[block.slab].memory.data() + a.offset,
             "host block " << block.slab << ":" << block.handle << " does not match its slab");
  allocator.free(block.handle);
  in_use_bytes_ -= a.bytes;
}

void HostPool::reserve(size_t bytes) {
  while (reserved_bytes_ < bytes) add_slab(slab_bytes_);
}

bool HostPool::all_free() const {
  return std::all_of(slabs_.begin(), slabs_.end(),
                     [](const Slab& s) { return s.allocator.all_free(); });
}

}  // namespace vdnn
