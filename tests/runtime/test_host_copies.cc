// Host memory as a planned budget (issue 21): the host copies of offloaded tensors and streamed
// weights live in one region taken when the Net is built, of exactly the bytes the plan reports,
// each copy at the offset the plan gave it; training takes no host memory after that; a
// --host-memory below the plan's is refused before training, naming the smallest that works.
#include <gtest/gtest.h>

#include <algorithm>

#include "data/synthetic.h"
#include "error_of.h"
#include "memory/offset_allocator.h"
#include "runtime/net.h"
#include "runtime/train_for_hash.h"
#include "runtime/trainer.h"

namespace vdnn {
namespace test_host_copies {

NetOptions offloading(size_t host_memory = 0) {
  NetOptions o;
  o.batch = 16;
  o.seed = 4;
  o.policy = Policy::kAll;
  o.host_memory = host_memory;
  return o;
}

// The host copies of `p`, as the test computes them from the tensors alone.
size_t host_copy_bytes(const Program& p) {
  size_t bytes = 0;
  for (const ProgramTensor& t : p.tensors)
    if (t.offloaded || t.streamed) bytes += OffsetAllocator::round_up(t.bytes);
  return bytes;
}

TEST(HostCopies, OneRegionOfExactlyThePlannedBytesWithDisjointCopiesInside) {
  Net net(test::offload_test_dag(), offloading());
  const Program& p = net.train_program();
  ASSERT_GT(p.offloaded_bytes(), 0u);
  EXPECT_EQ(net.host_bytes(), host_copy_bytes(p) + host_copy_bytes(net.eval_program()));
  EXPECT_EQ(net.train_plan().host_bytes, host_copy_bytes(p));
  // Every copy inside the region, none overlapping another.
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const ProgramTensor& t : p.tensors)
    if (t.offloaded) ranges.emplace_back(t.host_offset, t.host_offset + t.bytes);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_LE(ranges[i].second, net.train_plan().host_bytes);
    if (i > 0) EXPECT_LE(ranges[i - 1].second, ranges[i].first);
  }
  // Nothing offloaded, nothing taken.
  Net resident(test::offload_test_dag(), {.batch = 16, .seed = 4});
  EXPECT_EQ(resident.host_bytes(), 0u);
}

TEST(HostCopies, TrainingTakesNoHostMemoryAfterTheNetIsBuilt) {
  Graph g = test::offload_test_dag();
  const Shape& s = g.input_shape();
  const Dataset data = make_synthetic(64, s.channels(), s.height(), s.width(), g.classes(), 11);
  Net net(std::move(g), offloading());
  TrainConfig cfg;
  cfg.iterations = 6;
  cfg.evaluate = true;
  Trainer trainer(net, cfg);
  const size_t taken = HostBuffer::taken_count();
  trainer.run(data, &data);
  EXPECT_EQ(HostBuffer::taken_count(), taken) << "host buffers taken while training";
}

TEST(HostCopies, AHostBudgetBelowThePlansIsRefusedNamingTheSmallestThatWorks) {
  const size_t needed = Net(test::offload_test_dag(), offloading()).host_bytes();
  ASSERT_GT(needed, 0u);
  const std::string msg = test::error_of([&] { Net(test::offload_test_dag(), offloading(needed - 1)); });
  EXPECT_NE(msg.find("--host-memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(" + std::to_string(needed) + " bytes), the smallest --host-memory that works"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("offloaded tensors"), std::string::npos) << msg;
  // Exactly the smallest runs, and gives the weights of `none`, which copies nothing: a copy placed
  // over another would change them.
  NetOptions resident{.batch = 16, .seed = 4};
  EXPECT_EQ(test::train_for_hash(test::offload_test_dag(), offloading(needed), 4),
            test::train_for_hash(test::offload_test_dag(), resident, 4));
}

TEST(HostCopies, StreamedWeightsLiveInTheRegionAndItsBudgetBindsThemToo) {
  Graph g = test::offload_test_dag();
  NetOptions o{.batch = 2, .inference = true};
  const size_t resident = Net(test::offload_test_dag(), o).smallest_resident_budget();
  o.device_memory = resident - 1;  // below the resident pass: some weights are streamed
  Net net(std::move(g), o);
  const Program& p = net.train_program();
  ASSERT_GT(p.streamed_bytes(), 0u);
  EXPECT_EQ(net.host_bytes(), host_copy_bytes(p));
  o.host_memory = net.host_bytes() - 1;
  const std::string msg = test::error_of([&] { Net(test::offload_test_dag(), o); });
  EXPECT_NE(msg.find("streamed weights"), std::string::npos) << msg;
}

}  // namespace test_host_copies
}  // namespace vdnn
