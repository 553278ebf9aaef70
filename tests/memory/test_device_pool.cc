// Tests for memory/device_pool: pointers, the one-line OOM message, stream-ordered reuse (deferred
// frees, polling, the pressure handler, blocking release) and misuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "memory/device_pool.h"
#include "util/aligned_buffer.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr size_t kCapacity = 64 * 1024;

class DevicePoolTest : public ::testing::Test {
 protected:
  void TearDown() override {
    pool_.release_deferred_blocking();
    EXPECT_TRUE(pool_.all_free()) << pool_.dump();
    pool_.allocator().validate();
  }
  char* base() const { return memory_.as<char>(); }

  bool release_ = false;  // outlives the test body, unlike a local captured by a done()
  AlignedBuffer memory_{kCapacity};
  DevicePool pool_{memory_.data(), kCapacity};
};

TEST_F(DevicePoolTest, PointersAreBasePlusAlignedOffset) {
  const Block a = pool_.allocate(100, MemoryClass::kWeights, "w");
  const Block b = pool_.allocate(1000, MemoryClass::kFeatureMaps, "x");
  EXPECT_EQ(a.ptr, base());
  EXPECT_EQ(a.bytes, 256u);
  EXPECT_EQ(b.ptr, base() + 256);
  EXPECT_EQ(b.bytes, 1024u);
  EXPECT_EQ((static_cast<char*>(b.ptr) - base()) % 256, 0);
  EXPECT_EQ(pool_.in_use_bytes(), 1280u);
  EXPECT_EQ(pool_.stats().current(MemoryClass::kWeights), 256u);
  pool_.free(a);
  pool_.free(b);
  EXPECT_EQ(pool_.peak_in_use_bytes(), 1280u);
  EXPECT_EQ(pool_.high_water_offset(), 1280u);
  EXPECT_EQ(pool_.largest_free_block(), kCapacity);
  EXPECT_DOUBLE_EQ(pool_.fragmentation(), 0.0);
}

TEST_F(DevicePoolTest, OutOfMemoryThrowsOneLineMessageWithTheDumpFields) {
  const Block w = pool_.allocate(40 * 1024, MemoryClass::kWeights, "conv1 weights");
  try {
    pool_.allocate(30 * 1024, MemoryClass::kFeatureMaps, "conv2 output");
    FAIL() << "expected vdnn::Error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const char* field :
         {"out of memory", "requested 30720 B (30.0 KiB)", "feature_maps", "'conv2 output'",
          "capacity 65536 B (64.0 KiB)", "in use 40960 B (40.0 KiB)", "largest free block 24576 B",
          "weights=40960", "feature_maps=0", "workspace=0"})
      EXPECT_NE(m.find(field), std::string::npos) << "missing '" << field << "' in: " << m;
  }
  pool_.free(w);
}

TEST_F(DevicePoolTest, DeferredBlockIsNotReusedUntilDone) {
  bool done = false;
  const Block a = pool_.allocate(32 * 1024, MemoryClass::kFeatureMaps, "a");
  pool_.free_after(a, [&] { return done; });
  EXPECT_EQ(pool_.deferred_count(), 1u);
  EXPECT_EQ(pool_.deferred_bytes(), 32u * 1024);
  EXPECT_EQ(pool_.in_use_bytes(), 32u * 1024);  // still occupied
  const Block b = pool_.allocate(32 * 1024, MemoryClass::kFeatureMaps, "b");
  EXPECT_EQ(b.ptr, base() + 32 * 1024);                                    // not a's memory
  EXPECT_THROW(pool_.allocate(256, MemoryClass::kWorkspace, "c"), Error);  // no handler: OOM
  done = true;
  const Block c = pool_.allocate(32 * 1024, MemoryClass::kFeatureMaps, "c");
  EXPECT_EQ(c.ptr, a.ptr);  // reused once its stream is done
  EXPECT_EQ(pool_.deferred_count(), 0u);
  pool_.free(b);
  pool_.free(c);
}

TEST_F(DevicePoolTest, DeferredFreesArePolledAtEveryAllocate) {
  bool done = false;
  const Block a = pool_.allocate(1024, MemoryClass::kFeatureMaps, "a");
  pool_.free_after(a, [&] { return done; });
  const Block b = pool_.allocate(256, MemoryClass::kWorkspace, "b");
  EXPECT_EQ(pool_.deferred_count(), 1u);
  EXPECT_EQ(pool_.poll_deferred(), 0u);
  done = true;
  const Block c = pool_.allocate(256, MemoryClass::kWorkspace, "c");  // polls first
  EXPECT_EQ(pool_.deferred_count(), 0u);
  EXPECT_EQ(c.ptr, a.ptr);  // a's block is the best fit for c once free
  pool_.free(b);
  pool_.free(c);
}

TEST_F(DevicePoolTest, PressureHandlerIsCalledOnceOnlyWhenNeeded) {
  bool done = false;
  int calls = 0;
  pool_.set_pressure_handler([&] {
    ++calls;
    done = true;  // "synchronize the streams"
  });
  const Block a = pool_.allocate(48 * 1024, MemoryClass::kFeatureMaps, "a");
  pool_.free_after(a, [&] { return done; });
  const Block small = pool_.allocate(8 * 1024, MemoryClass::kWorkspace, "fits");
  EXPECT_EQ(calls, 0);
  const Block big = pool_.allocate(40 * 1024, MemoryClass::kFeatureMaps, "needs a");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(pool_.pressure_calls(), 1u);
  EXPECT_EQ(big.ptr, a.ptr);
  pool_.free(small);
  pool_.free(big);
}

TEST_F(DevicePoolTest, UnhelpfulPressureHandlerLeadsToErrorNamingPendingFrees) {
  int calls = 0;
  bool done = false;
  pool_.set_pressure_handler([&] { ++calls; });
  const Block a = pool_.allocate(kCapacity, MemoryClass::kGradientMaps, "a");
  pool_.free_after(a, [&] { return done; });
  try {
    pool_.allocate(256, MemoryClass::kWorkspace, "w");
    FAIL() << "expected vdnn::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 deferred frees pending"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(calls, 1);
  done = true;
  pool_.release_deferred_blocking();
}

TEST_F(DevicePoolTest, ReleaseDeferredBlockingWaitsForEveryDone) {
  int polls = 0;
  const Block a = pool_.allocate(1024, MemoryClass::kFeatureMaps, "a");
  const Block b = pool_.allocate(1024, MemoryClass::kFeatureMaps, "b");
  pool_.free_after(a, [&] { return ++polls >= 5; });
  pool_.free_after(b, [] { return true; });
  pool_.release_deferred_blocking();
  EXPECT_GE(polls, 5);
  EXPECT_TRUE(pool_.all_free());
}

TEST_F(DevicePoolTest, MisuseIsInternalError) {
  const Block a = pool_.allocate(512, MemoryClass::kFeatureMaps, "a");
  const Block b = pool_.allocate(512, MemoryClass::kFeatureMaps, "b");
  pool_.free(a);
  EXPECT_THROW(pool_.free(a), InternalError);
  EXPECT_THROW(pool_.free_after(a, [] { return true; }), InternalError);
  pool_.free_after(b, [this] { return release_; });
  EXPECT_FALSE(pool_.all_free());
  EXPECT_THROW(pool_.free(b), InternalError);  // already being freed
  EXPECT_THROW(pool_.free_after(b, [] { return true; }), InternalError);
  const Block c = pool_.allocate(256, MemoryClass::kWorkspace, "c");
  Block forged = c;
  forged.ptr = base() + 4096;
  EXPECT_THROW(pool_.free(forged), InternalError);            // live handle, wrong pointer
  EXPECT_THROW(pool_.free_after(c, nullptr), InternalError);  // no done()
  EXPECT_EQ(pool_.deferred_count(), 1u);
  pool_.free(c);
  release_ = true;
  EXPECT_EQ(pool_.poll_deferred(), 1u);
}

TEST(DevicePool, EmptyPoolNeedsNoBase) {
  DevicePool pool(nullptr, 0);
  EXPECT_THROW(pool.allocate(1, MemoryClass::kWorkspace, "x"), Error);
  EXPECT_TRUE(pool.all_free());
  EXPECT_THROW(DevicePool(nullptr, 1024), InternalError);
}

}  // namespace
}  // namespace vdnn
