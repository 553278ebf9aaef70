// plan/physical_limits.h — the range of every rate and time a device, link or network profile and a
// saved cost file may hold: what hardware can be, with room to spare. Finite but absurd figures
// (a kernel launch of 1e308 s, a memory of 1e-308 B/s) made the simulated step inf or NaN and a plan
// of "-nan%" that exited 0; the readers refuse them, naming the file and the field.
//
//   if (!within_rate(bytes_per_second)) refuse("a rate from 1e3 to 1e18 per second");
#pragma once

namespace vdnn {

inline constexpr double kMinRatePerSecond = 1e3;   // bytes or FLOPs per second: a kB/s link at the least
inline constexpr double kMaxRatePerSecond = 1e18;  // an EB/s or EFLOP/s for one device or link at the most
inline constexpr double kMaxOverheadSeconds = 1;   // a latency or kernel launch
inline constexpr double kMaxKernelSeconds = 3600;  // one kernel's measured time
inline constexpr double kMaxSlowdown = 100;        // contention between copies and compute

inline bool within_rate(double x) { return x >= kMinRatePerSecond && x <= kMaxRatePerSecond; }  // NaN: false

}  // namespace vdnn
