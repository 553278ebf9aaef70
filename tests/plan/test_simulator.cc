// The simulator interprets the executor's Program with clocks: it must agree with what the
// schedule implies (no copies: the sum of the kernels; infinitely fast link: no cost; slow link:
// bounded below by the copies, vDNN's barrier never faster than events, look-ahead never slower).
// The Programs are built from the CUDA target's sizes, which are the same on every machine: the CPU
// backend's depend on the ISA oneDNN finds (nChw8c on AVX2, nChw16c on AVX-512), and with them
// these exact schedules.
#include <gtest/gtest.h>

#include "backends/backend_targets.h"
#include "io/model_file.h"
#include "plan/fixed_costs.h"
#include "plan/memory_plan.h"
#include "plan/program_builder.h"
#include "plan/simulator.h"

namespace vdnn {
namespace test_simulator {

using test::FixedCosts;

class SimulatorTest : public ::testing::Test {
 protected:
  SimulatorTest() : graph_(load_model("fmnist_cnn")), facts_(backend_target("cuda").facts(graph_, 32, {})) {}
  Program program(Policy policy, SyncMode sync, int depth = 0) const {
    return build_program(graph_, facts_.value_bytes, facts_.facts,
                         {.policy = policy, .sync = sync, .training = true, .prefetch_depth = depth});
  }
  Program planned(Policy policy, SyncMode sync, int depth = 0) {
    Program p = program(policy, sync, depth);
    const size_t budget = minimum_budget(p);
    EXPECT_TRUE(plan_memory(p, budget).fits);
    return p;
  }
  double kernels() const {
    double t = 0;
    for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i)
      t += FixedCosts(0).forward_seconds(i) + FixedCosts(0).backward_seconds(i);
    return t;
  }
  Graph graph_;
  TargetFacts facts_;
};

TEST_F(SimulatorTest, WithoutCopiesTheStepIsTheSumOfItsKernels) {
  const SimResult r = simulate(planned(Policy::kNone, SyncMode::kEvent), FixedCosts(1e9));
  EXPECT_NEAR(r.iteration_seconds, kernels(), 1e-12);
  EXPECT_EQ(r.stall_seconds, 0.0);
  EXPECT_EQ(r.busy_seconds[1] + r.busy_seconds[2], 0.0);
  EXPECT_GT(r.forward_seconds, 0.0);
  EXPECT_LT(r.forward_seconds, r.iteration_seconds);
}

TEST_F(SimulatorTest, AnInfinitelyFastLinkCostsNothing) {
  for (SyncMode sync : {SyncMode::kEvent, SyncMode::kLayer})
    EXPECT_NEAR(simulate(planned(Policy::kAll, sync), FixedCosts(0)).iteration_seconds, kernels(), 1e-12);
}

TEST_F(SimulatorTest, ASlowLinkIsBoundedByItsCopiesAndStallsTheComputeStream) {
  const Program p = planned(Policy::kAll, SyncMode::kEvent);
  const double bw = 1e9;
  const SimResult r = simulate(p, FixedCosts(bw));
  const double copy_each_way = static_cast<double>(p.offloaded_bytes()) / bw;
  EXPECT_NEAR(r.busy_seconds[1], copy_each_way, 1e-12);
  EXPECT_NEAR(r.busy_seconds[2], copy_each_way, 1e-12);
  EXPECT_GE(r.iteration_seconds, std::max(kernels(), copy_each_way));
  EXPECT_GT(r.iteration_seconds, kernels());
  EXPECT_GT(r.stall_seconds, 0.0);
  for (const TimelineOp& op : r.ops) EXPECT_GE(op.end, op.start);
  double compute_free = 0;  // ops of one stream never overlap
  for (const TimelineOp& op : r.ops)
    if (op.stream == StreamKind::kCompute) {
      EXPECT_GE(op.start, compute_free - 1e-15) << op.name;
      compute_free = op.end;
    }
}

TEST_F(SimulatorTest, TheLayerBarrierIsNeverFasterAndLookAheadNeverSlower) {
  for (double bw : {2e8, 1e9, 8e9}) {
    const double event = simulate(planned(Policy::kAll, SyncMode::kEvent), FixedCosts(bw)).iteration_seconds;
    const double layer = simulate(planned(Policy::kAll, SyncMode::kLayer), FixedCosts(bw)).iteration_seconds;
    const double ahead = simulate(planned(Policy::kAll, SyncMode::kEvent, 100), FixedCosts(bw)).iteration_seconds;
    EXPECT_GE(layer, event - 1e-12) << bw;
    EXPECT_LE(ahead, event + 1e-12) << bw;
  }
}

TEST_F(SimulatorTest, TheMemoryTimelineEndsWhereItStartedAndPeaksAsThePlannerSays) {
  for (Policy policy : {Policy::kNone, Policy::kAll}) {
    Program p = program(policy, SyncMode::kEvent);
    const MemoryPlan plan = plan_memory(p, minimum_budget(p));
    const SimResult r = simulate(p, FixedCosts(1e9));
    ASSERT_FALSE(r.memory.empty());
    size_t persistent = 0, peak = 0;
    for (const ProgramTensor& t : p.tensors) persistent += t.persistent ? t.bytes : 0;
    for (size_t i = 0; i < r.memory.size(); ++i) {
      peak = std::max(peak, r.memory[i].bytes);
      if (i) EXPECT_GE(r.memory[i].seconds, r.memory[i - 1].seconds);
    }
    EXPECT_EQ(r.memory.front().bytes, persistent);
    EXPECT_EQ(r.memory_by_class.total_current, persistent) << "every non-persistent tensor is freed";
    EXPECT_EQ(peak, r.memory_by_class.total_peak);
    // The planner counts the allocator's rounded sizes, the simulator the tensors' own bytes.
    EXPECT_LE(r.memory_by_class.total_peak, plan.peak_bytes);
    EXPECT_GE(static_cast<double>(r.memory_by_class.total_peak), 0.99 * static_cast<double>(plan.peak_bytes));
    EXPECT_EQ(r.memory_by_class.peak(MemoryClass::kWeights),
              plan.by_class.peak(MemoryClass::kWeights) -
                  (plan.by_class.peak(MemoryClass::kWeights) - r.memory_by_class.peak(MemoryClass::kWeights)));
  }
}

}  // namespace test_simulator
}  // namespace vdnn
