#include "memory/host_buffer.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "vdnn/error.h"

namespace vdnn {

namespace {
std::atomic<size_t> g_taken{0};
}  // namespace

HostMemory HostMemory::aligned() {
  return {[](size_t bytes) -> void* {
            void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
            if (p) std::memset(p, 0, bytes);
            return p;
          },
          [](void* p) { std::free(p); }};
}

HostBuffer::HostBuffer(size_t bytes, const HostMemory& source, const char* what)
    : memory_(static_cast<char*>(bytes ? source.allocate(bytes) : nullptr), source.release), bytes_(bytes) {
  if (bytes && !memory_) VDNN_THROW(what << ": cannot take " << bytes << " B of host memory");
  if (bytes) g_taken.fetch_add(1, std::memory_order_relaxed);
}

size_t HostBuffer::taken_count() { return g_taken.load(std::memory_order_relaxed); }

}  // namespace vdnn
