// tests/stress/watchdog.h — turns a hang into a test failure that says which case hung.
//
// Model: a thread that sleeps until the armed deadline. arm() (re)starts the clock for one piece
// of work and remembers how to describe it; disarm() stops it. If the clock runs out, the work is
// stuck (a stream waiting on an event nobody records, a lost wake-up): the watchdog prints the
// description to stderr and aborts the process, since the stuck thread cannot be cancelled.
// While it exists, a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL) prints the armed description first
// and then reaches the handler that was there before (default, or a sanitizer's); with several
// watchdogs, the last armed one's description.
//
//   Watchdog dog(/*seconds=*/120);
//   dog.arm("seed 7 case 3: policy all, sync layer, ...\n" + model_json);
//   run_case();
//   dog.disarm();
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace vdnn::stress {

class Watchdog {
 public:
  explicit Watchdog(double seconds);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(std::string what);
  void disarm();
  double seconds() const { return seconds_; }

 private:
  void watch();

  const double seconds_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool armed_ = false, stopping_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::string what_;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace vdnn::stress
