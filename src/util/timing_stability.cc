#include "util/timing_stability.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "vdnn/error.h"

namespace vdnn {

double median(std::vector<double> v) {
  VDNN_CHECK(!v.empty(), "median of no values");
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2) return v[mid];
  return (v[mid] + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

TimingSpread timing_spread(const std::vector<Timing>& runs, const StabilityRule& rule) {
  VDNN_CHECK(!runs.empty(), "timing_spread: no timings");
  std::vector<double> seconds, waited;
  for (const Timing& r : runs) {
    VDNN_CHECK(std::isfinite(r.seconds) && r.seconds >= 0 && std::isfinite(r.waited_seconds) && r.waited_seconds >= 0,
               "timing_spread: bad timing " << r.seconds << " s, waited " << r.waited_seconds << " s");
    seconds.push_back(r.seconds);
    waited.push_back(r.seconds > 0 ? r.waited_seconds / r.seconds : 0.0);
  }
  TimingSpread s;
  s.samples = static_cast<int>(runs.size());
  s.median = median(seconds);
  const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
  s.min = *lo;
  s.max = *hi;
  if (s.samples < rule.min_samples || s.median <= 0) return s;
  s.waited = median(waited);
  std::vector<double> deviation;
  for (double t : seconds) deviation.push_back(std::abs(t - s.median));
  s.relative_spread = median(deviation) / s.median;
  return s;
}

bool is_stable(const TimingSpread& s, const StabilityRule& rule) {
  auto over = [&](double relative, double limit) {
    return relative > limit && relative * s.median >= rule.floor_seconds;
  };
  return !over(s.relative_spread, rule.max_relative_spread) && !over(s.waited, rule.max_waited);
}

double process_wait_seconds() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return 0;
  unsigned long long total_ns = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    if (std::FILE* f = std::fopen(path.c_str(), "r")) {
      unsigned long long run_ns = 0, wait_ns = 0;
      if (std::fscanf(f, "%llu %llu", &run_ns, &wait_ns) == 2) total_ns += wait_ns;
      std::fclose(f);
    }
  }
  closedir(dir);
  return static_cast<double>(total_ns) * 1e-9;
}

}  // namespace vdnn
