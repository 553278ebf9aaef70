// memory/memory_class.h — the six classes every device byte belongs to, and per-class usage.
//
// Model: the device pool tags each allocation with the consumer it serves (DESIGN.md "Memory":
// weights, weight gradients, optimizer state, feature maps, gradient maps, workspace). Every report
// and plot breaks memory down by these classes; ClassStats holds current and peak bytes per class
// plus the totals (the total peak is the peak of the sum, not the sum of per-class peaks).
//
//   OffsetAllocator alloc(1 << 20);
//   alloc.allocate(4096, MemoryClass::kFeatureMaps);
//   ClassStats s = alloc.stats();
//   s.current(MemoryClass::kFeatureMaps);       // 4096
//   to_string(MemoryClass::kFeatureMaps);       // "feature_maps"
//   for (MemoryClass c : kAllMemoryClasses) std::cout << to_string(c) << " " << s.peak(c) << "\n";
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

namespace vdnn {

enum class MemoryClass {
  kWeights,
  kWeightGrads,
  kOptimizerState,
  kFeatureMaps,
  kGradientMaps,
  kWorkspace,
};

constexpr int kMemoryClassCount = 6;

constexpr std::array<MemoryClass, kMemoryClassCount> kAllMemoryClasses = {
    MemoryClass::kWeights,     MemoryClass::kWeightGrads,  MemoryClass::kOptimizerState,
    MemoryClass::kFeatureMaps, MemoryClass::kGradientMaps, MemoryClass::kWorkspace,
};

constexpr int index_of(MemoryClass cls) { return static_cast<int>(cls); }

// The lower-case name used in reports and messages ("feature_maps"); "unknown" for a bad value.
constexpr const char* to_string(MemoryClass cls) {
  switch (cls) {
    case MemoryClass::kWeights:
      return "weights";
    case MemoryClass::kWeightGrads:
      return "weight_grads";
    case MemoryClass::kOptimizerState:
      return "optimizer_state";
    case MemoryClass::kFeatureMaps:
      return "feature_maps";
    case MemoryClass::kGradientMaps:
      return "gradient_maps";
    case MemoryClass::kWorkspace:
      return "workspace";
  }
  return "unknown";
}

// Current and peak bytes per class (indexed by index_of) and in total. Bytes are the allocator's
// rounded sizes, i.e. what the allocation really occupies.
struct ClassStats {
  std::array<size_t, kMemoryClassCount> current_bytes{};
  std::array<size_t, kMemoryClassCount> peak_bytes{};
  size_t total_current = 0;
  size_t total_peak = 0;

  size_t current(MemoryClass cls) const { return current_bytes[index_of(cls)]; }
  size_t peak(MemoryClass cls) const { return peak_bytes[index_of(cls)]; }

  // An allocation of `bytes` in `cls` begins (peaks follow) or ends (must have begun).
  void add(MemoryClass cls, size_t bytes) {
    size_t& c = current_bytes[index_of(cls)];
    c += bytes;
    peak_bytes[index_of(cls)] = std::max(peak_bytes[index_of(cls)], c);
    total_current += bytes;
    total_peak = std::max(total_peak, total_current);
  }
  void remove(MemoryClass cls, size_t bytes) {
    current_bytes[index_of(cls)] -= bytes;
    total_current -= bytes;
  }
};

}  // namespace vdnn
