// Tests for memory/offset_allocator: rounding, best fit, coalescing, stats, fragmentation, OOM,
// high water, dump, misuse, and 10 000 random operations checked against a simple model.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memory/offset_allocator.h"
#include "vdnn/error.h"
#include "vdnn/rng.h"

namespace vdnn {
namespace test_offset_allocator {

constexpr MemoryClass kFm = MemoryClass::kFeatureMaps;

class OffsetAllocatorTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(alloc_.all_free()) << alloc_.dump();
    alloc_.validate();
    EXPECT_EQ(alloc_.largest_free_block(), alloc_.capacity_bytes());
  }
  Allocation take(size_t bytes, MemoryClass cls = kFm) {
    std::optional<Allocation> a = alloc_.allocate(bytes, cls);
    EXPECT_TRUE(a.has_value()) << "allocate(" << bytes << ") failed\n" << alloc_.dump();
    return a.value_or(Allocation{});
  }
  size_t chunk_count() const {
    const std::string d = alloc_.dump();
    return static_cast<size_t>(std::count(d.begin(), d.end(), '\n'));
  }

  OffsetAllocator alloc_{64 * 1024};
};

TEST_F(OffsetAllocatorTest, RoundsUpAndAlignsTo256) {
  const Allocation a = take(1);
  const Allocation b = take(257);
  const Allocation c = take(0);
  const Allocation d = take(256);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(a.bytes, 256u);
  EXPECT_EQ(b.offset, 256u);
  EXPECT_EQ(b.bytes, 512u);
  EXPECT_EQ(c.bytes, 256u);
  EXPECT_EQ(d.bytes, 256u);
  for (const Allocation& x : {a, b, c, d}) EXPECT_EQ(x.offset % 256, 0u);
  EXPECT_EQ(alloc_.in_use_bytes(), 256u + 512 + 256 + 256);
  for (const Allocation& x : {a, b, c, d}) alloc_.free(x.handle);
  EXPECT_EQ(OffsetAllocator(1000).capacity_bytes(), 768u);
  EXPECT_EQ(OffsetAllocator::round_up(513), 768u);
}

TEST_F(OffsetAllocatorTest, BestFitPicksSmallestFreeBlockThatFits) {
  // Holes of 1024, 512 and 2048 bytes separated by live guards, then the big tail.
  const Allocation h1024 = take(1024), g1 = take(256), h512 = take(512), g2 = take(256);
  const Allocation h2048 = take(2048), g3 = take(256);
  for (const Allocation& h : {h1024, h512, h2048}) alloc_.free(h.handle);
  const Allocation x = take(400);  // fits all; smallest is the 512 hole
  EXPECT_EQ(x.offset, h512.offset);
  const Allocation y = take(600);  // 512 is gone; 1024 is the smallest that fits
  EXPECT_EQ(y.offset, h1024.offset);
  const Allocation z = take(1500);
  EXPECT_EQ(z.offset, h2048.offset);
  const Allocation w = take(100);  // leftovers: 256 B after y, 512 B after z; 256 B fits best
  EXPECT_EQ(w.offset, y.offset + y.bytes);
  for (const Allocation& a : {g1, g2, g3, x, y, z, w}) alloc_.free(a.handle);
}

TEST_F(OffsetAllocatorTest, BestFitTieGoesToLowestOffset) {
  const Allocation lo = take(512), g1 = take(256), hi = take(512), g2 = take(256);
  alloc_.free(hi.handle);  // freed first, still not preferred
  alloc_.free(lo.handle);
  const Allocation x = take(512);
  EXPECT_EQ(x.offset, lo.offset);
  for (const Allocation& a : {g1, g2, x}) alloc_.free(a.handle);
}

TEST_F(OffsetAllocatorTest, CoalescesInEveryFreeOrder) {
  std::array<int, 3> order = {0, 1, 2};
  do {
    const Allocation abc[3] = {take(1000), take(3000), take(256)};
    const Allocation guard = take(512);  // keeps the tail out of the picture
    for (int i : order) alloc_.free(abc[i].handle);
    EXPECT_EQ(chunk_count(), 3u) << alloc_.dump();     // one free block, the guard, the tail
    const Allocation whole = take(1024 + 3072 + 256);  // exactly the merged block
    EXPECT_EQ(whole.offset, 0u);
    alloc_.free(whole.handle);
    alloc_.free(guard.handle);
    EXPECT_EQ(chunk_count(), 1u) << alloc_.dump();
    alloc_.validate();
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST_F(OffsetAllocatorTest, SplitLeavesRemainderUsable) {
  const Allocation a = take(1024);
  alloc_.free(a.handle);
  const Allocation b = take(256);
  const Allocation c = take(768);  // the remainder of the split, right after b
  EXPECT_EQ(c.offset, 256u);
  alloc_.free(b.handle);
  alloc_.free(c.handle);
}

TEST_F(OffsetAllocatorTest, PerClassStatsAndPeaks) {
  const Allocation w = take(1000, MemoryClass::kWeights);
  const Allocation f1 = take(2048, MemoryClass::kFeatureMaps);
  const Allocation f2 = take(512, MemoryClass::kFeatureMaps);
  alloc_.free(f1.handle);
  const Allocation g = take(4096, MemoryClass::kGradientMaps);
  ClassStats s = alloc_.stats();
  EXPECT_EQ(s.current(MemoryClass::kWeights), 1024u);
  EXPECT_EQ(s.current(MemoryClass::kFeatureMaps), 512u);
  EXPECT_EQ(s.peak(MemoryClass::kFeatureMaps), 2560u);
  EXPECT_EQ(s.current(MemoryClass::kGradientMaps), 4096u);
  EXPECT_EQ(s.peak(MemoryClass::kWorkspace), 0u);
  EXPECT_EQ(s.total_current, 1024u + 512 + 4096);
  EXPECT_EQ(s.total_peak, 1024u + 512 + 4096);
  alloc_.free(g.handle);
  alloc_.free(f2.handle);
  alloc_.free(w.handle);
  s = alloc_.stats();
  EXPECT_EQ(s.total_current, 0u);
  EXPECT_EQ(s.peak(MemoryClass::kGradientMaps), 4096u);
  EXPECT_EQ(alloc_.peak_in_use_bytes(), 1024u + 512 + 4096);
  EXPECT_STREQ(to_string(MemoryClass::kOptimizerState), "optimizer_state");
  EXPECT_STREQ(to_string(MemoryClass::kWeightGrads), "weight_grads");
}

TEST_F(OffsetAllocatorTest, FragmentationMeasure) {
  EXPECT_DOUBLE_EQ(alloc_.fragmentation(), 0.0);  // one free block
  std::vector<Allocation> all;
  for (int i = 0; i < 256; ++i) all.push_back(take(256));  // 64 KiB: full
  EXPECT_EQ(alloc_.largest_free_block(), 0u);
  EXPECT_DOUBLE_EQ(alloc_.fragmentation(), 0.0);  // nothing free
  for (int i = 0; i < 256; i += 2) alloc_.free(all[i].handle);
  EXPECT_EQ(alloc_.largest_free_block(), 256u);
  EXPECT_DOUBLE_EQ(alloc_.fragmentation(), 1.0 - 256.0 / (128 * 256));
  EXPECT_FALSE(alloc_.allocate(512, kFm).has_value());  // 32 KiB free, no 512 B hole
  for (int i = 1; i < 256; i += 2) alloc_.free(all[i].handle);
}

TEST_F(OffsetAllocatorTest, OutOfMemoryReturnsNullopt) {
  EXPECT_FALSE(alloc_.allocate(64 * 1024 + 1, kFm).has_value());
  EXPECT_FALSE(alloc_.allocate(SIZE_MAX, kFm).has_value());
  const Allocation a = take(64 * 1024);
  EXPECT_FALSE(alloc_.allocate(1, kFm).has_value());
  EXPECT_EQ(alloc_.live_count(), 1u);
  alloc_.free(a.handle);
  OffsetAllocator empty(100);  // rounds down to nothing
  EXPECT_FALSE(empty.allocate(1, kFm).has_value());
  EXPECT_TRUE(empty.all_free());
  EXPECT_DOUBLE_EQ(empty.fragmentation(), 0.0);
}

TEST_F(OffsetAllocatorTest, HighWaterOffsetIsTheBudgetThatSufficed) {
  EXPECT_EQ(alloc_.high_water_offset(), 0u);
  const Allocation a = take(4096), b = take(1024);
  alloc_.free(a.handle);
  const Allocation c = take(8192);  // does not fit the 4 KiB hole: goes after b
  EXPECT_EQ(alloc_.high_water_offset(), 4096u + 1024 + 8192);
  EXPECT_EQ(alloc_.peak_in_use_bytes(), 1024u + 8192);  // less than high water: fragmentation
  alloc_.free(b.handle);
  alloc_.free(c.handle);
  EXPECT_EQ(alloc_.high_water_offset(), 4096u + 1024 + 8192);
}

TEST_F(OffsetAllocatorTest, DumpListsEveryChunk) {
  const Allocation a = take(300, MemoryClass::kWorkspace);
  const std::string d = alloc_.dump();
  EXPECT_NE(d.find("#" + std::to_string(a.handle) +
                   " offset=0 bytes=512 used workspace "
                   "requested=300"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("offset=512 bytes=65024 free"), std::string::npos) << d;
  EXPECT_EQ(chunk_count(), 2u);
  alloc_.free(a.handle);
}

TEST_F(OffsetAllocatorTest, FreeingUnknownOrFreedHandleIsInternalError) {
  const Allocation a = take(256), b = take(256);
  EXPECT_THROW(alloc_.free(-1), InternalError);
  EXPECT_THROW(alloc_.free(1000), InternalError);
  alloc_.free(a.handle);
  EXPECT_THROW(alloc_.free(a.handle), InternalError);  // already free
  alloc_.free(b.handle);                               // b merges into a: its slot dies
  EXPECT_THROW(alloc_.free(b.handle), InternalError);
  EXPECT_THROW(alloc_.allocation(b.handle), InternalError);
}

// The model: live allocations by offset. Free space is exactly the gaps between them (the allocator
// coalesces), so best fit is the smallest gap that holds the rounded request, lowest offset first.
struct Model {
  std::map<size_t, Allocation> live;  // offset -> allocation
  std::array<size_t, kMemoryClassCount> by_class{};
  std::map<int32_t, MemoryClass> cls;

  std::optional<size_t> best_fit(size_t rounded, size_t capacity) const {
    std::optional<size_t> best;
    size_t best_size = SIZE_MAX, cursor = 0;
    auto consider = [&](size_t gap_end) {
      const size_t gap = gap_end - cursor;
      if (gap >= rounded && gap < best_size) best = cursor, best_size = gap;
    };
    for (const auto& [offset, a] : live) {
      consider(offset);
      cursor = offset + a.bytes;
    }
    consider(capacity);
    return best;
  }
};

TEST(OffsetAllocatorRandom, TenThousandOperationsMatchTheModel) {
  constexpr size_t kCapacity = 1 << 20;
  OffsetAllocator alloc(kCapacity);
  Model model;
  Rng rng(42, /*stream=*/11);
  size_t in_use = 0, high_water = 0, peak = 0, failures = 0;
  for (int op = 0; op < 10000; ++op) {
    const bool do_alloc = model.live.empty() || rng.uniform() < 0.55f;
    if (do_alloc) {
      const size_t bytes = rng.below(4) == 0 ? rng.below(256 * 1024) : rng.below(16 * 1024);
      const MemoryClass cls = static_cast<MemoryClass>(rng.below(kMemoryClassCount));
      const size_t rounded = OffsetAllocator::round_up(bytes);
      const std::optional<size_t> expected = model.best_fit(rounded, kCapacity);
      const std::optional<Allocation> a = alloc.allocate(bytes, cls);
      ASSERT_EQ(a.has_value(), expected.has_value()) << "op " << op << " bytes " << bytes;
      if (!a) {
        ++failures;
        EXPECT_LT(alloc.largest_free_block(), rounded);
        continue;
      }
      ASSERT_EQ(a->offset, *expected) << "op " << op << ": not the best fit";
      ASSERT_EQ(a->bytes, rounded);
      ASSERT_LE(a->offset + a->bytes, kCapacity);
      // No overlap with the neighbours in address order.
      auto next = model.live.lower_bound(a->offset);
      if (next != model.live.end()) {
        ASSERT_LE(a->offset + a->bytes, next->first);
      }
      if (next != model.live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.bytes, a->offset);
      }
      model.live[a->offset] = *a;
      model.cls[a->handle] = cls;
      model.by_class[index_of(cls)] += a->bytes;
      in_use += a->bytes;
      peak = std::max(peak, in_use);
      high_water = std::max(high_water, a->offset + a->bytes);
    } else {
      auto it = model.live.begin();
      std::advance(it, static_cast<long>(rng.below(model.live.size())));
      const Allocation a = it->second;
      alloc.free(a.handle);
      model.by_class[index_of(model.cls[a.handle])] -= a.bytes;
      model.cls.erase(a.handle);
      in_use -= a.bytes;
      model.live.erase(it);
    }
    ASSERT_EQ(alloc.in_use_bytes(), in_use);
    ASSERT_EQ(alloc.live_count(), model.live.size());
    if (op % 500 == 0) {
      alloc.validate();
      EXPECT_EQ(alloc.stats().current_bytes, model.by_class);
    }
  }
  EXPECT_GT(failures, 100u);  // the mix does exercise OOM and a nearly full pool
  EXPECT_EQ(alloc.peak_in_use_bytes(), peak);
  EXPECT_EQ(alloc.high_water_offset(), high_water);
  for (const auto& [offset, a] : model.live) alloc.free(a.handle);
  alloc.validate();
  EXPECT_TRUE(alloc.all_free());
  EXPECT_EQ(alloc.largest_free_block(), kCapacity);
}

}  // namespace test_offset_allocator
}  // namespace vdnn
