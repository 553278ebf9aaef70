#include "memory/device_pool.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <thread>
#include <utility>

#include "vdnn/error.h"

namespace vdnn {
namespace {

// "1536 B (1.5 KiB)": exact bytes for scripts, binary units for people.
std::string format_bytes(size_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 4) {
    v /= 1024.0;
    ++unit;
  }
  std::ostringstream out;
  out << bytes << " B";
  if (unit > 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (%.1f %s)", v, kUnits[unit]);
    out << buf;
  }
  return out.str();
}

}  // namespace

DevicePool::DevicePool(void* base, size_t capacity_bytes)
    : base_(static_cast<char*>(base)), allocator_(capacity_bytes) {
  VDNN_CHECK(base != nullptr || capacity_bytes == 0,
             "device pool of " << capacity_bytes << " B has no base pointer");
}

void DevicePool::set_pressure_handler(std::function<void()> on_pressure) {
  on_pressure_ = std::move(on_pressure);
}

Block DevicePool::allocate(size_t bytes, MemoryClass cls, const std::string& what) {
  poll_deferred();
  std::optional<Allocation> a = allocator_.allocate(bytes, cls);
  if (!a && on_pressure_) {
    ++pressure_calls_;
    on_pressure_();
    poll_deferred();
    a = allocator_.allocate(bytes, cls);
  }
  if (!a) throw Error(oom_message(bytes, cls, what));
  return Block{a->handle, base_ + a->offset, a->bytes};
}

void DevicePool::check_block(const Block& block) const {
  VDNN_CHECK(allocator_.is_live(block.handle),
             "free of unknown or already-free block " << block.handle);
  VDNN_CHECK(!is_deferred(block.handle), "block " << block.handle << " is already being freed");
  const Allocation a = allocator_.allocation(block.handle);
  VDNN_CHECK(block.ptr == base_ + a.offset && block.bytes == a.bytes,
             "block " << block.handle << " does not match its allocation");
}

void DevicePool::free(const Block& block) {
  check_block(block);
  allocator_.free(block.handle);
}

void DevicePool::free_after(const Block& block, std::function<bool()> done) {
  check_block(block);
  VDNN_CHECK(static_cast<bool>(done), "free_after of block " << block.handle << " without done()");
  deferred_.push_back({block.handle, block.bytes, std::move(done)});
}

bool DevicePool::is_deferred(int32_t handle) const {
  return std::any_of(deferred_.begin(), deferred_.end(),
                     [&](const Deferred& d) { return d.handle == handle; });
}

size_t DevicePool::poll_deferred() {
  size_t completed = 0;
  auto keep = deferred_.begin();
  for (auto it = deferred_.begin(); it != deferred_.end(); ++it) {
    if (it->done()) {
      allocator_.free(it->handle);
      ++completed;
    } else {
      if (keep != it) *keep = std::move(*it);
      ++keep;
    }
  }
  deferred_.erase(keep, deferred_.end());
  return completed;
}

void DevicePool::release_deferred_blocking() {
  while (!deferred_.empty()) {
    if (poll_deferred() == 0) std::this_thread::yield();
  }
}

size_t DevicePool::deferred_bytes() const {
  size_t total = 0;
  for (const Deferred& d : deferred_) total += d.bytes;
  return total;
}

std::string DevicePool::oom_message(size_t bytes, MemoryClass cls, const std::string& what) const {
  std::ostringstream out;
  out << "device pool out of memory: requested " << format_bytes(bytes) << " for " << to_string(cls)
      << " '" << what << "'; capacity " << format_bytes(capacity_bytes()) << ", in use "
      << format_bytes(in_use_bytes()) << ", largest free block "
      << format_bytes(largest_free_block()) << ", fragmentation "
      << static_cast<int>(fragmentation() * 100.0 + 0.5) << "%; by class:";
  const ClassStats s = stats();
  for (MemoryClass c : kAllMemoryClasses) out << " " << to_string(c) << "=" << s.current(c);
  if (!deferred_.empty())
    out << "; " << deferred_.size() << " deferred frees pending (" << format_bytes(deferred_bytes())
        << ")";
  return out.str();
}

}  // namespace vdnn
