// util/timing_stability.h — is a set of timings of the same work steady enough to trust?
//
// Model: a kernel timed several times on an idle machine gives nearly the same time each run, and
// its threads never wait for a CPU. While another process takes the cores, two things show: the
// runs scatter (preempted by different amounts), and the kernel's threads spend time runnable but
// not running (the kernel's run-queue delay, /proc/self/task/*/schedstat; a steady load that slows
// every run alike shows only there). The spread is the median absolute deviation over the median
// (robust: one interrupt in five runs does not count); the wait is the median over runs of the
// threads' waiting time per second of run. A set is unstable when either exceeds its limit and is
// worth more than `floor_seconds` per run (microseconds of jitter on a tiny kernel are not load).
// Fewer than `min_samples` runs give no verdict (spread and wait 0: `vdnn profile --repeats 1`).
//
//   std::vector<Timing> runs = ...;                 // wall seconds and waited seconds per run
//   TimingSpread s = timing_spread(runs);
//   if (!is_stable(s)) ... time it again, or warn ...
//   double m = median({3.0, 1.0, 2.0, 4.0});        // 2.5: the one median vdnn uses
#pragma once

#include <vector>

namespace vdnn {

struct Timing {
  double seconds = 0;         // wall time of one run
  double waited_seconds = 0;  // summed over this process's threads: runnable, waiting for a CPU
};

struct TimingSpread {
  double median = 0, min = 0, max = 0;  // of the runs' wall times
  // Both 0 with fewer than min_samples runs:
  double relative_spread = 0;  // median(|t - median|) / median
  double waited = 0;           // median of waited_seconds / seconds (thread-seconds per second)
  int samples = 0;
};

struct StabilityRule {
  double max_relative_spread = 0.15;
  double max_waited = 0.10;
  double floor_seconds = 20e-6;  // a scatter or wait below this per run is never unstable
  int min_samples = 3;
};

// The middle value; with an even count, the mean of the middle two. VDNN_CHECK: not empty.
double median(std::vector<double> values);

// Throws vdnn::InternalError (VDNN_CHECK) on no runs or a negative or non-finite time.
TimingSpread timing_spread(const std::vector<Timing>& runs, const StabilityRule& rule = {});
bool is_stable(const TimingSpread& spread, const StabilityRule& rule = {});

// The run-queue delay of this process's threads so far, in seconds (Linux; 0 where unknown).
double process_wait_seconds();

}  // namespace vdnn
