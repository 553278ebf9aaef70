// Tests for memory/host_pool: slabs taken on demand and by reserve(), no new slab once they exist,
// dedicated slabs for big requests, usable non-overlapping memory, stats and misuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "memory/host_pool.h"
#include "vdnn/error.h"

namespace vdnn {
namespace {

constexpr size_t kSlab = 4096;

class HostPoolTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_TRUE(pool_.all_free());
    EXPECT_EQ(pool_.in_use_bytes(), 0u);
  }
  HostPool pool_{kSlab};
};

TEST_F(HostPoolTest, AddsSlabsOnlyWhenNothingFits) {
  EXPECT_EQ(pool_.slab_count(), 0u);
  const HostBlock a = pool_.allocate(3000);
  EXPECT_EQ(pool_.slab_count(), 1u);
  EXPECT_EQ(a.bytes, 3072u);
  const HostBlock b = pool_.allocate(1024);  // fits the rest of slab 0
  EXPECT_EQ(b.slab, 0);
  const HostBlock c = pool_.allocate(2000);  // slab 0 is full
  EXPECT_EQ(c.slab, 1);
  EXPECT_EQ(pool_.slab_count(), 2u);
  EXPECT_EQ(pool_.reserved_bytes(), 2 * kSlab);
  pool_.free(a);
  pool_.free(b);
  pool_.free(c);
  // Steady state: the same pattern again takes no new slab.
  for (int step = 0; step < 3; ++step) {
    const HostBlock x = pool_.allocate(3000), y = pool_.allocate(1024), z = pool_.allocate(2000);
    pool_.free(y);
    pool_.free(x);
    pool_.free(z);
  }
  EXPECT_EQ(pool_.slab_count(), 2u);
}

TEST_F(HostPoolTest, BigRequestGetsADedicatedSlabThatIsReused) {
  const HostBlock small = pool_.allocate(100);
  const HostBlock big = pool_.allocate(10000);
  EXPECT_EQ(pool_.slab_count(), 2u);
  EXPECT_EQ(big.bytes, 10240u);
  EXPECT_EQ(pool_.reserved_bytes(), kSlab + 10240);
  pool_.free(big);
  const HostBlock again = pool_.allocate(9000);  // fits the dedicated slab
  EXPECT_EQ(again.slab, big.slab);
  EXPECT_EQ(again.ptr, big.ptr);
  EXPECT_EQ(pool_.slab_count(), 2u);
  pool_.free(again);
  pool_.free(small);
}

TEST_F(HostPoolTest, ReservePreTakesSlabs) {
  pool_.reserve(10 * 1024);
  EXPECT_EQ(pool_.slab_count(), 3u);
  EXPECT_EQ(pool_.reserved_bytes(), 3 * kSlab);
  pool_.reserve(8 * 1024);  // already satisfied
  EXPECT_EQ(pool_.slab_count(), 3u);
  std::vector<HostBlock> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(pool_.allocate(2048));
  EXPECT_EQ(pool_.slab_count(), 3u);  // no allocation past the reservation
  for (const HostBlock& b : blocks) pool_.free(b);
}

TEST_F(HostPoolTest, BlocksAreAlignedWritableAndDisjoint) {
  std::vector<HostBlock> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(pool_.allocate(300 + 200 * i));
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(blocks[i].ptr) % 64, 0u);
    std::memset(blocks[i].ptr, static_cast<int>(i + 1), blocks[i].bytes);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto* p = static_cast<const unsigned char*>(blocks[i].ptr);
    for (size_t k = 0; k < blocks[i].bytes; ++k)
      ASSERT_EQ(p[k], i + 1) << "block " << i << " overwritten at byte " << k;
  }
  for (const HostBlock& b : blocks) pool_.free(b);
}

TEST_F(HostPoolTest, TracksInUseAndPeak) {
  const HostBlock a = pool_.allocate(1000);
  const HostBlock b = pool_.allocate(2000);
  EXPECT_EQ(pool_.in_use_bytes(), 1024u + 2048);
  pool_.free(a);
  const HostBlock c = pool_.allocate(256);
  EXPECT_EQ(pool_.in_use_bytes(), 2048u + 256);
  EXPECT_EQ(pool_.peak_in_use_bytes(), 1024u + 2048);
  pool_.free(b);
  pool_.free(c);
  EXPECT_EQ(pool_.slab_bytes(), kSlab);
  EXPECT_EQ(HostPool().slab_bytes(), size_t{64} << 20);
}

TEST_F(HostPoolTest, MisuseIsInternalError) {
  const HostBlock a = pool_.allocate(512);
  pool_.free(a);
  EXPECT_THROW(pool_.free(a), InternalError);
  HostBlock bogus = a;
  bogus.slab = 7;
  EXPECT_THROW(pool_.free(bogus), InternalError);
}

}  // namespace
}  // namespace vdnn
