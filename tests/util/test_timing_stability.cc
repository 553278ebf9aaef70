// The stability rule for repeated timings (util/timing_stability.h), on synthetic samples: steady
// runs with jitter pass; runs scattered by a busy machine, or slowed alike while their threads
// waited for a CPU, do not; one interrupt in five does not condemn a set, microsecond jitter on a
// tiny kernel is not load, and too few runs give no verdict.
#include <gtest/gtest.h>

#include "util/timing_stability.h"
#include "vdnn/error.h"

namespace vdnn {
namespace test_timing_stability {

// Runs of these wall times whose threads waited `waited` of each run for a CPU.
std::vector<Timing> runs(std::vector<double> seconds, double waited = 0) {
  std::vector<Timing> out;
  for (double t : seconds) out.push_back({t, t * waited});
  return out;
}

// The one median (profile's --check and contention figures use it too): the middle of an odd
// count, the mean of the middle two of an even one, whatever the order; none is an internal error.
TEST(TimingStability, MedianIsTheMiddleOrTheMeanOfTheMiddleTwo) {
  EXPECT_DOUBLE_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_DOUBLE_EQ(median({7.0}), 7.0);
  EXPECT_THROW(median({}), InternalError);
}

TEST(TimingStability, SteadyRunsWithJitterAreStable) {
  const TimingSpread s = timing_spread(runs({1.00e-3, 1.02e-3, 0.99e-3, 1.01e-3, 1.03e-3}));
  EXPECT_DOUBLE_EQ(s.median, 1.01e-3);
  EXPECT_DOUBLE_EQ(s.min, 0.99e-3);
  EXPECT_DOUBLE_EQ(s.max, 1.03e-3);
  EXPECT_NEAR(s.relative_spread, 0.01 / 1.01, 1e-12);
  EXPECT_TRUE(is_stable(s));
}

TEST(TimingStability, RunsScatteredByABusyMachineAreUnstable) {
  // A kernel of 1 ms preempted by different amounts: the median itself is 2.6 times too slow.
  const TimingSpread s = timing_spread(runs({1.1e-3, 3.9e-3, 2.6e-3, 1.4e-3, 3.3e-3}));
  EXPECT_DOUBLE_EQ(s.median, 2.6e-3);
  EXPECT_NEAR(s.relative_spread, 1.2e-3 / 2.6e-3, 1e-12);
  EXPECT_FALSE(is_stable(s));
  EXPECT_TRUE(is_stable(s, {.max_relative_spread = 0.5})) << "the threshold is the rule's";
}

// Every run slowed alike by a steady load: no scatter, but the threads waited for a CPU.
TEST(TimingStability, ASteadyLoadShowsAsWaitingForACpu) {
  const TimingSpread s = timing_spread(runs({2.6e-3, 2.6e-3, 2.7e-3, 2.6e-3, 2.65e-3}, 0.9));
  EXPECT_LT(s.relative_spread, 0.05);
  EXPECT_NEAR(s.waited, 0.9, 1e-12);
  EXPECT_FALSE(is_stable(s));
  EXPECT_TRUE(is_stable(timing_spread(runs({2.6e-3, 2.6e-3, 2.7e-3, 2.6e-3, 2.65e-3}, 0.02))))
      << "a little wait is normal";
  std::vector<Timing> one_waited = runs({1e-3, 1e-3, 1e-3, 1e-3, 1e-3});
  one_waited[2].waited_seconds = 5e-3;  // one run preempted: the median wait is still 0
  EXPECT_TRUE(is_stable(timing_spread(one_waited)));
}

TEST(TimingStability, OneInterruptInFiveDoesNotCondemnTheSet) {
  const TimingSpread s = timing_spread(runs({1.0e-3, 1.0e-3, 9.0e-3, 1.05e-3, 0.98e-3}));
  EXPECT_DOUBLE_EQ(s.max, 9.0e-3);
  EXPECT_TRUE(is_stable(s)) << s.relative_spread;
}

TEST(TimingStability, MicrosecondJitterOnATinyKernelIsNotLoad) {
  const std::vector<double> tiny = {4e-6, 9e-6, 6e-6, 12e-6, 5e-6};  // 50% scatter, a few microseconds
  EXPECT_GT(timing_spread(runs(tiny)).relative_spread, 0.15);
  EXPECT_TRUE(is_stable(timing_spread(runs(tiny))));
  EXPECT_FALSE(is_stable(timing_spread(runs(tiny)), {.floor_seconds = 0})) << "without the floor it would count";
}

TEST(TimingStability, TooFewRunsGiveNoVerdict) {
  const TimingSpread one = timing_spread(runs({5e-3}, 0.9));
  EXPECT_EQ(one.samples, 1);
  EXPECT_EQ(one.relative_spread, 0);
  EXPECT_EQ(one.waited, 0);
  EXPECT_TRUE(is_stable(one));
  EXPECT_TRUE(is_stable(timing_spread(runs({1e-3, 9e-3}))));
  EXPECT_DOUBLE_EQ(timing_spread(runs({1e-3, 9e-3})).median, 5e-3) << "even counts: the middle two averaged";
}

TEST(TimingStability, NoTimingsOrBadTimingsAreABug) {
  EXPECT_THROW(timing_spread(runs({})), InternalError);
  EXPECT_THROW(timing_spread(runs({1e-3, -1e-3, 1e-3})), InternalError);
}

}  // namespace test_timing_stability
}  // namespace vdnn
