#include "stress/watchdog.h"

#include <cstdio>
#include <cstdlib>

namespace vdnn::stress {

Watchdog::Watchdog(double seconds) : seconds_(seconds), thread_([this] { watch(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_one();
  thread_.join();
}

void Watchdog::arm(std::string what) {
  {
    std::lock_guard lock(mutex_);
    armed_ = true;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(seconds_));
    what_ = std::move(what);
  }
  changed_.notify_one();
}

void Watchdog::disarm() {
  {
    std::lock_guard lock(mutex_);
    armed_ = false;
  }
  changed_.notify_one();
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (!armed_) {
      changed_.wait(lock);
    } else if (changed_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ &&
               std::chrono::steady_clock::now() >= deadline_) {
      std::fprintf(stderr, "\nstress watchdog: no result after %.0f s, the case hangs:\n%s\n",
                   seconds_, what_.c_str());
      std::fflush(stderr);
      std::abort();
    }
  }
}

}  // namespace vdnn::stress
